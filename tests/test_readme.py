"""Every fenced code block of README.md runs as printed (issue 12, item 4).

The blocks run in README order, as a new user would type them, in a fresh copy of the checkout
with `../shared/eval` beside it, a fresh WINDOWRAG_HOME (its own embedded server) and this
test's virtualenv first on PATH: bash blocks with bash (stopping at the first failing command),
python blocks with python, sql blocks with psql against the embedded server. A block in any
other language fails the test until it is added to RUNNERS or to NOT_CODE.

Two commands run in a cheaper equivalent form (CHEAPER); each says why. Blocks that import an
optional framework (EXTRAS: `pip install "windowrag-pg[llama-index]"`, …) run where it is
installed: the `integrations` stage of .ci/run runs every block with no exception; the slow
stage runs the others and names the ones it left out.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from .conftest import EVAL_DIR, REPO

FENCE = re.compile(r"^```([\w+-]*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
NOT_CODE = {"text", "json", "console", "output"}  # shown, not run
RUNNERS = {"bash", "sh", "shell", "python", "sql"}
CHEAPER = [
    # The test already runs inside the virtualenv where `pip install -e .` put this checkout;
    # another venv and install would take minutes and exercise pip, not the project.
    (re.compile(r'python3 -m venv \.venv && \. \.venv/bin/activate && pip install -q -e \S+ && '), ""),
    # Running the whole suite from inside the suite would recurse (and take minutes): collecting
    # it proves the command, the test dependencies and the conftest imports work.
    (re.compile(r"python -m pytest -q$", re.M), "python -m pytest -q --collect-only"),
]
BLOCK_TIMEOUT_S = 900
EXTRAS = {"llama_index": "llama-index", "langchain_core": "langchain"}  # import name -> extra


def missing_extras(code: str) -> list[str]:
    """The extras a python block imports that are not installed here."""
    import importlib.util

    return [extra for module, extra in EXTRAS.items()
            if re.search(rf"^\s*(from|import) {module}\b", code, re.M) and importlib.util.find_spec(module) is None]


def readme_blocks(text: str) -> list[tuple[str, str]]:
    """(language, code) of every fenced block, in order."""
    return [(m.group(1).lower(), m.group(2)) for m in FENCE.finditer(text)]


def test_readme_blocks_are_found_and_all_runnable():
    blocks = readme_blocks((REPO / "README.md").read_text(encoding="utf-8"))
    assert len(blocks) >= 5
    unknown = [language or "(none)" for language, _ in blocks if language not in RUNNERS | NOT_CODE]
    assert not unknown, f"README blocks in languages this test cannot run: {unknown} (label them)"
    # the fence pattern misses nothing: every ``` line opens or closes one of the blocks
    fences = sum(1 for line in (REPO / "README.md").read_text().splitlines() if line.startswith("```"))
    assert fences == 2 * len(blocks)


@pytest.fixture()
def own_tmp() -> Path:
    """A folder outside pytest's basetemp: any other pytest session that starts meanwhile resets
    /tmp/pytest-of-<user> to mode 0700 (and prunes old basetemps), which locks the embedded
    server's own system user out of its data folder in the middle of the run."""
    folder = Path(tempfile.mkdtemp(prefix="windowrag-readme-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.slow
def test_every_readme_code_block_runs_as_printed(own_tmp):
    skipped = run_readme(own_tmp, allow_missing_extras=True)
    print(f"blocks left for the integrations stage (extras not installed): {skipped}")


@pytest.mark.integrations
def test_every_readme_code_block_runs_with_the_framework_extras(own_tmp):
    assert run_readme(own_tmp, allow_missing_extras=False) == []


def run_readme(tmp_path: Path, *, allow_missing_extras: bool) -> list[int]:
    """Run the README's blocks in order; returns the numbers of the blocks left out."""
    if not (EVAL_DIR / "contractnli-dev" / "documents.jsonl").is_file():
        pytest.skip(f"evaluation data not found at {EVAL_DIR}")
    checkout = tmp_path / "windowrag-pg"
    shutil.copytree(REPO, checkout, ignore=shutil.ignore_patterns(
        ".venv", ".git", "__pycache__", "*.egg-info", ".pytest_cache"))
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "eval").symlink_to(EVAL_DIR.resolve())
    home = tmp_path / "home"
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("WINDOWRAG_DATABASE_URL", "WINDOWRAG_TEST_", "VIRTUAL_ENV"))}
    env.update(WINDOWRAG_HOME=str(home), PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}")
    env.pop("PYTHONPATH", None)

    blocks = readme_blocks((REPO / "README.md").read_text(encoding="utf-8"))
    skipped = []
    try:
        for number, (language, code) in enumerate(blocks, start=1):
            if language in NOT_CODE:
                continue
            missing = missing_extras(code) if language == "python" else []
            if missing:
                assert allow_missing_extras, f"README block {number} needs the extras {missing}: install them"
                skipped.append(number)
                continue
            script = tmp_path / f"block{number}"
            if language == "python":
                script.write_text(code)  # run as a file outside the checkout: imports the installed package
                command = [sys.executable, str(script)]
            elif language == "sql":
                script.write_text(code)
                url = subprocess.run(["windowrag", "db-url"], cwd=checkout, env=env, capture_output=True,
                                     text=True, check=True).stdout.strip()
                command = ["psql", url, "-X", "-v", "ON_ERROR_STOP=1", "-f", str(script)]
            else:
                for pattern, replacement in CHEAPER:
                    code = pattern.sub(replacement, code)
                script.write_text("set -eo pipefail\n" + code)
                command = ["bash", str(script)]
            done = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True,
                                  stdin=subprocess.DEVNULL, timeout=BLOCK_TIMEOUT_S)
            assert done.returncode == 0, (
                f"README block {number} ({language}) failed with exit code {done.returncode}:\n{code}\n"
                f"--- stdout ---\n{done.stdout[-3000:]}\n--- stderr ---\n{done.stderr[-3000:]}")
        # run in order, the blocks store each text once (the LlamaIndex block ingests the handbook
        # the Python block stored: under the same id, not as a second copy whose text is sent twice)
        import psycopg

        url = subprocess.run(["windowrag", "db-url"], cwd=checkout, env=env, capture_output=True, text=True,
                             check=True).stdout.strip()
        with psycopg.connect(url) as conn:
            stored_twice = conn.execute(
                "SELECT c.name, count(*) - count(DISTINCT md5(d.text)) FROM windowrag.documents d"
                " JOIN windowrag.collections c ON c.id = d.collection_id GROUP BY c.name"
                " HAVING count(*) > count(DISTINCT md5(d.text))").fetchall()
        assert not stored_twice, f"README blocks stored a text twice in a collection: {stored_twice}"
    finally:
        from windowrag_pg.db.embedded import stop_embedded

        stop_embedded(home)
    return skipped
