"""The README's "In Python services" code blocks run as printed (real frameworks, offline)."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from .conftest import REPO

pytestmark = pytest.mark.integrations

SECTION = "## In Python services"


def section_blocks() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return re.findall(r"```python\n(.*?)```", text[start:end if end != -1 else None], flags=re.S)


def test_readme_service_examples_run_as_printed(db_url):
    blocks = section_blocks()
    assert len(blocks) >= 4
    env = {**os.environ, "WINDOWRAG_DATABASE_URL": db_url, "HF_HUB_OFFLINE": "1"}
    env.pop("WINDOWRAG_READ_DATABASE_URL", None)
    outputs = []
    for block in blocks:
        done = subprocess.run([sys.executable, "-c", block], cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, f"README block failed:\n{block}\n{done.stderr[-3000:]}"
        outputs.append(done.stdout)
    llama, langchain, pool, asynchronous = outputs[:4]
    # the LlamaIndex block stores the handbook under the id a file ingest gives it: its absolute path
    handbook = str((REPO / "windowrag_pg" / "samples" / "handbook.md").resolve())
    assert f"'document_id': '{handbook}'" in llama and "'section_path': [" in llama
    assert "1,000 USD per calendar year" in langchain
    assert f"[{handbook}]" in pool and "Learning budget" in pool
    assert f"[{handbook}]" in asynchronous and f"['{handbook}', '{handbook}']" in asynchronous
