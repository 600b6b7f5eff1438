"""Read what the user points `windowrag ingest` at: files, folders and JSON lines.

Yields one SourceDocument per document, or a SourceError naming the file (and line) and the
problem, so that a bad input never stops the rest of the batch. Decoding and format checks
happen here; parsing happens in windowrag_pg.parse.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .parse import ParseError, decode_text, detect_format

FILE_FORMATS = ("text", "markdown", "html", "pdf")


@dataclass(frozen=True, slots=True)
class SourceDocument:
    external_id: str
    format: str
    title: str | None = None
    text: str | None = None  # text formats
    data: bytes | None = None  # pdf
    source: str | None = None
    metadata: dict = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SourceError:
    name: str  # file, or file:line
    message: str


def iter_sources(paths: Iterable[str | Path]) -> Iterator[SourceDocument | SourceError]:
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for child in sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith(".")):
                yield from _read_file(child, external_id=str(child.relative_to(path.parent)))
        elif path.is_file():
            yield from _read_file(path, external_id=str(path))
        else:
            yield SourceError(str(path), "no such file or folder")


def _read_file(path: Path, *, external_id: str) -> Iterator[SourceDocument | SourceError]:
    try:
        fmt = detect_format(path)
    except ParseError as exc:
        yield SourceError(str(path), str(exc))
        return
    try:
        data = path.read_bytes()
    except OSError as exc:
        yield SourceError(str(path), f"cannot read: {exc.strerror or exc}")
        return
    if fmt == "jsonl":
        yield from _read_jsonl(path, data)
        return
    if fmt == "pdf":
        yield SourceDocument(external_id=external_id, format="pdf", data=data, title=path.stem, source=str(path))
        return
    try:
        text = decode_text(data, str(path))
    except ParseError as exc:
        yield SourceError(str(path), str(exc))
        return
    yield SourceDocument(external_id=external_id, format=fmt, text=text, title=None, source=str(path))


def _read_jsonl(path: Path, data: bytes) -> Iterator[SourceDocument | SourceError]:
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        name = f"{path}:{number}"
        try:
            record = json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            yield SourceError(name, f"not a JSON object: {exc}")
            continue
        problem = _check_record(record)
        if problem:
            yield SourceError(name, problem)
            continue
        yield SourceDocument(
            external_id=str(record["id"]),
            format=record.get("format") or "text",
            title=record.get("title"),
            text=record["text"],
            source=record.get("source") or str(path),
            metadata=record.get("metadata") or {},
        )


def _check_record(record: object) -> str | None:
    if not isinstance(record, dict):
        return "not a JSON object"
    if not isinstance(record.get("id"), (str, int)) or str(record.get("id")) == "":
        return "missing or empty 'id'"
    if not isinstance(record.get("text"), str):
        return "missing 'text' (a string)"
    fmt = record.get("format") or "text"
    if fmt not in ("text", "markdown", "html"):
        return f"unknown format {fmt!r} (expected text, markdown or html)"
    if record.get("title") is not None and not isinstance(record["title"], str):
        return "'title' must be a string"
    if record.get("metadata") is not None and not isinstance(record["metadata"], dict):
        return "'metadata' must be a JSON object"
    return None
