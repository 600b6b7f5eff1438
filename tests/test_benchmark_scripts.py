"""The benchmark scripts still run: docs/*.md cite them as the way to reproduce every figure, and
a script that wraps or imports a library function by name breaks silently when it is renamed
(benchmarks/ingest.py did, 2026-11-26).

Every script's --help in the default run (its imports and argument parser), and every flag that
docs/*.md, README.md or a script's docstring gives a benchmark script or a `windowrag` command is
one it takes; a few scripts end to end at their smallest sizes in the slow run, on servers of
their own. Exit status and report only:
benchmarks are reports, never timed assertions. They write into benchmarks/out (git-ignored),
as they do when run by hand; the small sizes give their reports names of their own.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from windowrag_pg.cli import build_parser

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


@functools.cache
def usage(name: str) -> subprocess.CompletedProcess:
    """NAME --help, once per test session (a home of its own, though --help starts no server)."""
    return run_script(name, "--help", home=Path(tempfile.gettempdir()) / "windowrag-usage", timeout=120)


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_script_imports_and_parses_its_arguments(name):
    result = usage(name)
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


def documented_commands(prefix: str) -> list[tuple[str, str]]:
    """(file, command) of every command line in docs/*.md, README.md and the scripts' own
    docstrings that starts with PREFIX (a regex), up to the end of its code span or line."""
    sources = [*sorted((REPO / "docs").glob("*.md")), REPO / "README.md", *sorted(BENCHMARKS.glob("*.py"))]
    pattern = re.compile(prefix + r"[^`|\n]*")
    return [(path.name, match.group(0)) for path in sources for match in pattern.finditer(path.read_text())]


def flags_of(command: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", command))


@pytest.mark.parametrize("name", SCRIPTS)
def test_the_documented_flags_of_each_script_exist(name):
    commands = documented_commands(r"python benchmarks/" + re.escape(name))
    documented = set().union(*(flags_of(command) for _, command in commands))
    if not documented:
        pytest.skip(f"no documented command of {name} names a flag")
    known = flags_of(usage(name).stdout)
    assert documented <= known, (
        f"{name}: documented but unknown {sorted(documented - known)} in "
        f"{sorted({source for source, command in commands if flags_of(command) - known})}")


def test_the_documented_flags_of_windowrag_commands_exist():
    parser = build_parser()
    commands = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction)).choices
    documented = documented_commands(r"windowrag (?:" + "|".join(map(re.escape, commands)) + r")(?![\w-])")
    assert len(documented) >= 10
    unknown = {}
    for source, command in documented:
        sub = re.match(r"windowrag ([\w-]+)", command).group(1)
        known = flags_of(commands[sub].format_help()) | flags_of(parser.format_help())
        if flags_of(command) - known:
            unknown[f"{source}: {command}"] = sorted(flags_of(command) - known)
    assert not unknown, unknown


def ingest_the_samples(home: Path) -> None:
    """The bundled Markdown samples into collection "docs" of HOME's embedded server."""
    samples = sorted(str(path) for path in (REPO / "windowrag_pg" / "samples").glob("*.md"))
    ingested = subprocess.run([sys.executable, "-m", "windowrag_pg.cli", "ingest", *samples, "--collection", "docs"],
                              cwd=REPO, env={**os.environ, "WINDOWRAG_HOME": str(home)}, capture_output=True,
                              text=True, timeout=600)
    assert ingested.returncode == 0, ingested.stderr[-3000:]


@pytest.mark.slow
def test_list_table_leads_runs_on_the_samples(tmp_path):
    """benchmarks/list_table_leads.py on the bundled Markdown samples: at 30 tokens, without leads,
    contexts start inside the time-off list without its lead-in and hold the equipment table's
    rows without their header; with them (0030), none."""
    home = tmp_path / "leads"
    try:
        ingest_the_samples(home)
        queries = tmp_path / "queries.jsonl"
        queries.write_text('{"query": "What is the budget for a monitor?"}\n{"query": "How long is parental leave?"}\n'
                           '{"query": "Are sick days counted against time off?"}\n')
        result = run_script("list_table_leads.py", "--collection", "docs", "--queries", str(queries), "--budgets", "30",
                            home=home)
        assert result.returncode == 0, result.stderr[-3000:]
        rows = {line.split("|")[2].strip(): [cell.strip() for cell in line.split("|")]
                for line in result.stdout.splitlines() if line.startswith("| 30 |")}
        missing = lambda row: [int(row[i]) for i in (4, 5, 6)]  # noqa: E731 (lead-in, header, ending on a header)
        assert sum(missing(rows["no leads"])) > 0
        assert missing(rows["leads (0030)"]) == [0, 0, 0] and float(rows["leads (0030)"][7]) > 0
    finally:
        stop_servers(home)


@pytest.mark.slow
def test_html_table_rows_runs_on_a_page_with_a_raw_html_table(tmp_path):
    """benchmarks/html_table_rows.py on one Markdown page with a raw HTML table (a blank line in a
    cell, as Google Docs exports write them): its contexts hold table rows, none begins or ends
    inside a row, none lacks the table's first row."""
    home = tmp_path / "html-rows"
    rows = "".join(f"  <tr>\n   <td>{system}\n   </td>\n   <td>\n<p>\nKept for {period}.\n\n<p>\nThen deleted.\n"
                   f"   </td>\n  </tr>\n" for system, period in [("Slack messages", "1 year"), ("Zoom recordings", "30 days"),
                                                          ("Qualys scan results", "6 months")])
    page = ("# Data retention\n\nEach system keeps its data as follows.\n\n<table>\n  <tr>\n   <td><strong>System"
            "</strong>\n   </td>\n   <td><strong>Retention</strong>\n   </td>\n  </tr>\n" + rows + "</table>\n")
    documents = tmp_path / "documents.jsonl"
    documents.write_text(json.dumps({"id": "retention.md", "format": "markdown", "text": page}) + "\n")
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"query": "How long are Zoom recordings kept?"}\n{"query": "When are scan results deleted?"}\n')
    try:
        ingested = subprocess.run([sys.executable, "-m", "windowrag_pg.cli", "ingest", str(documents), "--collection",
                                   "docs"], cwd=REPO, env={**os.environ, "WINDOWRAG_HOME": str(home)},
                                  capture_output=True, text=True, timeout=600)
        assert ingested.returncode == 0, ingested.stderr[-3000:]
        result = run_script("html_table_rows.py", "--collection", "docs", "--documents", str(documents),
                            "--queries", str(queries), "--budgets", "60,120", home=home)
        assert result.returncode == 0, result.stderr[-3000:]
        table = [[int(cell.replace(",", "")) for cell in line.strip("| ").split(" | ")]
                 for line in result.stdout.splitlines() if re.match(r"\| \d", line)]
        assert [row[0] for row in table] == [60, 120]
        assert all(row[2] > 0 and row[3:] == [0, 0, 0] for row in table), result.stdout
    finally:
        stop_servers(home)


@pytest.mark.slow
def test_heading_values_runs_on_the_samples(tmp_path):
    """benchmarks/heading_values.py on the bundled Markdown samples: at 30 tokens the dental
    question sent bare headings while headings were valued as sentences, and sends none now."""
    home = tmp_path / "headings"
    try:
        ingest_the_samples(home)
        queries = tmp_path / "queries.jsonl"
        queries.write_text('{"query": "How much does the company pay towards dental insurance?"}\n')
        result = run_script("heading_values.py", "--collection", "docs", "--queries", str(queries), "--budgets", "30",
                            home=home)
        assert result.returncode == 0, result.stderr[-3000:]
        rows = {line.split("|")[2].strip(): line.split("|") for line in result.stdout.splitlines()
                if line.startswith("| 30 |")}
        assert float(rows["headings valued"][4].split()[0]) > 0  # bare headings sent as contexts
        assert float(rows["no value (0029)"][4].split()[0]) == 0
    finally:
        stop_servers(home)
