"""The benchmark scripts still run: docs/*.md cite them as the way to reproduce every figure, and
a script that wraps or imports a library function by name breaks silently when it is renamed
(benchmarks/ingest.py did, 2026-11-26).

Every script's --help in the default run (its imports and argument parser); a few end to end at
their smallest sizes in the slow run, on servers of their own. Exit status and report only:
benchmarks are reports, never timed assertions. They write into benchmarks/out (git-ignored),
as they do when run by hand; the small sizes give their reports names of their own.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO

BENCHMARKS = REPO / "benchmarks"
SCRIPTS = sorted(path.name for path in BENCHMARKS.glob("*.py"))


def run_script(name: str, *arguments: str, home: Path, timeout: int = 900) -> subprocess.CompletedProcess:
    environment = {**os.environ, "WINDOWRAG_HOME": str(home), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, str(BENCHMARKS / name), *arguments], cwd=REPO, env=environment,
                          capture_output=True, text=True, timeout=timeout)


def stop_servers(*homes: Path) -> None:
    from windowrag_pg.db.embedded import stop_embedded

    for home in homes:
        if home.exists():
            stop_embedded(home)


def test_there_are_scripts_to_check():
    assert "side_by_side.py" in SCRIPTS and len(SCRIPTS) >= 20


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_script_imports_and_parses_its_arguments(name, tmp_path):
    result = run_script(name, "--help", home=tmp_path / "home", timeout=120)
    assert result.returncode == 0, f"{name} --help:\n{result.stderr[-3000:]}"
    assert "usage:" in result.stdout


@pytest.mark.slow
def test_side_by_side_runs_at_its_smallest_size_and_the_scripts_of_its_home_run_on_it(tmp_path, eval_dir):
    home = tmp_path / "sbs"
    try:
        result = run_script("side_by_side.py", "--size", "1000", "--queries", "2", "--warmup", "1",
                            "--incremental-sample", "200", "--handbook-every", "0", "--contractnli-every", "0",
                            "--home", str(home), home=tmp_path / "unused")
        assert result.returncode == 0, result.stderr[-3000:]
        report = (BENCHMARKS / "out" / "side_by_side_1000.md").read_text()
        assert "dense recall@5" in report and "bytes" in report.lower()
        stop_servers(home / "windowrag", home / "bare")
        collection = home / "windowrag"
        for name, arguments in (
            ("pack_cost.py", ("--home", str(collection), "--passes", "1", "--growth", "0.1")),
            ("delete_trigger_ab.py", ("--home", str(collection), "--documents", "1")),
            ("vector_index_layouts.py", ("--home", str(collection), "--scratch", str(tmp_path / "layouts"),
                                         "--queries", "2", "--warmup", "1", "--dims", "8", "--pools", "50")),
        ):
            result = run_script(name, *arguments, home=collection)
            assert result.returncode == 0, f"{name}:\n{result.stderr[-3000:]}"
    finally:
        stop_servers(home / "windowrag", home / "bare", tmp_path / "layouts", tmp_path / "unused")


@pytest.mark.slow
def test_ingest_and_whole_query_benchmarks_run_at_their_smallest_sizes(tmp_path, eval_dir):
    try:
        out = tmp_path / "ingest.md"
        result = run_script("ingest.py", "--home", str(tmp_path / "ingest"), "--every", "100", "--out", str(out),
                            home=tmp_path / "ingest")
        assert result.returncode == 0, result.stderr[-3000:]
        assert "| database" in out.read_text()
        result = run_script("pipeline_latency.py", "--size", "1000", "--queries", "2", "--warmup", "1",
                            "--home", str(tmp_path / "latency"), home=tmp_path / "latency")
        assert result.returncode == 0, result.stderr[-3000:]
        assert "| pipeline | stage | p50 ms | p95 ms |" in result.stdout
    finally:
        stop_servers(tmp_path / "ingest", tmp_path / "latency")
