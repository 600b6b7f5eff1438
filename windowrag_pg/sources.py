"""Read what the user points `windowrag ingest` at: files, folders and JSON lines.

Yields one SourceDocument per document, or a SourceError naming the file (and line) and the
problem, so that a bad input never stops the rest of the batch. Decoding and format checks
happen here; parsing happens in windowrag_pg.parse.

``check_source`` checks a SourceDocument built by a caller (the Python API) the way JSON lines
are checked here: the fields Postgres stores must be strings it can hold (no NUL, no lone
surrogates) and the metadata plain, finite, not too deeply nested JSON.
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path

from .parse import FORMAT_BY_SUFFIX, ParseError, check_document_size, decode_text, detect_format

FILE_FORMATS = ("text", "markdown", "html", "pdf", "docx")
BINARY_FORMATS = ("pdf", "docx")  # read as bytes into SourceDocument.data
RECORD_FORMATS = ("text", "markdown", "html")
# Deeper metadata is refused: filters address it by key paths, and deep JSON runs into
# recursion limits (Python's json, psycopg's Jsonb) long before Postgres' own.
MAX_METADATA_DEPTH = 32


@dataclass(frozen=True, slots=True)
class SourceDocument:
    external_id: str
    format: str
    title: str | None = None
    text: str | None = None  # text formats
    data: bytes | None = None  # pdf, docx
    source: str | None = None
    metadata: dict = field(default_factory=dict)
    origin: str | None = None  # where it was read (file, or file:line of a JSON-lines record), for errors

    @property
    def name(self) -> str:
        """How errors name this document: where it was read, else its source or id."""
        return self.origin or self.source or self.external_id


@dataclass(frozen=True, slots=True)
class SourceError:
    name: str  # file, or file:line
    message: str


class SourceCheckError(ValueError):
    """A SourceDocument whose fields cannot be stored; the message names the field."""


def iter_sources(paths: Iterable[str | Path]) -> Iterator[SourceDocument | SourceError]:
    """Documents of files and folders (recursively); a file's document id is ``file_document_id``.

    In a folder, hidden files and folders (.git, .venv, ...) and files of other formats (images,
    binaries) are passed over: a project folder holds them; a file named on its own is read or
    refused. A folder with no file to read is an error naming it, and so is a link in a folder to
    a file outside it (not read: an uploaded folder could reach any file the process can read).

    PATHS is a list (any iterable) of paths: one path on its own is refused here, when called
    (iterated, "a.md" was its characters: "." read the working folder, "/" the whole disk)."""
    if isinstance(paths, (str, bytes, PathLike)):
        raise TypeError(f"iter_sources takes a list of paths, not one path ({paths!r:.80}): "
                        f"iter_sources([{paths!r:.80}])")
    return _iter_paths(paths)


def _iter_paths(paths: Iterable[str | Path]) -> Iterator[SourceDocument | SourceError]:
    for raw in paths:
        if not str(raw).strip():  # Path("") is the working directory, which nobody means by it
            yield SourceError(repr(str(raw)), "an empty path names no file or folder")
            continue
        path = Path(raw)
        if path.is_dir():
            readable, others = folder_files(path)
            if not readable:
                found = f" ({others} other file{'s' if others != 1 else ''} passed over)" if others else ""
                yield SourceError(str(path), f"no file to read in this folder{found}: "
                                             f"the formats read are {', '.join(sorted(FORMAT_BY_SUFFIX))}")
            inside = path.resolve()
            for child in readable:
                target = child.resolve()
                if not target.is_relative_to(inside):
                    # found by a tester: a link to /etc/passwd in an uploaded folder was read and served
                    yield SourceError(str(child), f"a link out of the folder (to {target}): not read; "
                                                  "name the file itself to ingest it")
                    continue
                yield from _read_file(child, external_id=file_document_id(child))
        elif path.is_file():
            yield from _read_file(path, external_id=file_document_id(path))
        else:
            yield SourceError(str(path), "no such file or folder")


def folder_files(folder: Path) -> tuple[list[Path], int]:
    """The files of FOLDER (recursively, sorted) in a format that is read, and how many other
    files were passed over; hidden files and everything under a hidden folder are not counted."""
    readable, others = [], 0
    for child in sorted(folder.rglob("*")):
        if any(part.startswith(".") for part in child.relative_to(folder).parts) or not child.is_file():
            continue
        if child.suffix.lower() in FORMAT_BY_SUFFIX:
            readable.append(child)
        else:
            others += 1
    return readable, others


def file_document_id(path: str | Path) -> str:
    """The id of a file's document: its absolute path with symlinks resolved.

    The same file gets the same id however it is named (texts/a.txt, $PWD/texts/a.txt, a.txt
    from inside texts/, a folder holding it, a symlink to it), from any working directory, so
    ingesting it again replaces it or leaves it unchanged instead of adding a copy.
    """
    return str(Path(path).resolve())


def _read_file(path: Path, *, external_id: str) -> Iterator[SourceDocument | SourceError]:
    try:
        fmt = detect_format(path)
    except ParseError as exc:
        yield SourceError(str(path), str(exc))
        return
    if fmt == "jsonl":  # many documents: read line by line, each record is checked on its own
        yield from _read_jsonl(path)
        return
    try:
        # Before reading: a huge file is refused without loading it into memory.
        check_document_size(path.stat().st_size, "file")
        data = path.read_bytes()
    except ParseError as exc:
        yield SourceError(str(path), str(exc))
        return
    except OSError as exc:
        yield SourceError(str(path), f"cannot read: {exc.strerror or exc}")
        return
    if fmt in BINARY_FORMATS:
        # titled by the parser: the document's own title, else the file name (ingest.parse_source)
        yield SourceDocument(external_id=external_id, format=fmt, data=data, title=None, source=external_id,
                             origin=str(path))
        return
    try:
        text = decode_text(data, str(path), html=fmt == "html")
    except ParseError as exc:  # its message starts with the name, which the SourceError carries
        yield SourceError(str(path), str(exc).removeprefix(f"{path}: "))
        return
    yield SourceDocument(external_id=external_id, format=fmt, text=text, title=None, source=external_id,
                         origin=str(path))


def _read_jsonl(path: Path) -> Iterator[SourceDocument | SourceError]:
    try:
        handle = path.open("rb")
    except OSError as exc:
        yield SourceError(str(path), f"cannot read: {exc.strerror or exc}")
        return
    first_line: dict[str, int] = {}  # record id -> the line that used it first
    with handle:
        for number, line in enumerate(handle, start=1):
            if number == 1 and line.startswith(b"\xef\xbb\xbf"):
                line = line[3:]  # a UTF-8 byte order mark
            if not line.strip():
                continue
            name = f"{path}:{number}"
            try:
                record = json.loads(line, parse_constant=_refuse_constant)
            except UnicodeDecodeError as exc:
                yield SourceError(name, f"not a JSON object: invalid UTF-8 at byte offset {exc.start} ({exc.reason})")
                continue
            except RecursionError:
                yield SourceError(name, "not a JSON object: nested too deeply to read")
                continue
            except ValueError as exc:  # JSONDecodeError, NaN/Infinity, integers of > 4300 digits
                message = str(exc)
                if "integer string conversion" in message:
                    message = f"a number has too many digits ({message.split(': ', 1)[-1].split(';')[0]})"
                yield SourceError(name, f"not a JSON object: {message}")
                continue
            problem = _check_record(record)
            if problem:
                yield SourceError(name, problem)
                continue
            if str(record["id"]) in first_line:  # it would replace that record, silently
                yield SourceError(name, f"id {str(record['id'])!r} is already the id of line "
                                        f"{first_line[str(record['id'])]}: this record is not ingested")
                continue
            first_line[str(record["id"])] = number
            document = SourceDocument(
                external_id=str(record["id"]),
                format=record.get("format") or "text",
                title=record.get("title"),
                text=record["text"],
                source=record.get("source") or file_document_id(path),
                metadata=record.get("metadata") or {},
                origin=name,
            )
            try:
                check_source(document)
            except SourceCheckError as exc:
                yield SourceError(name, str(exc))
                continue
            yield document


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a JSON value (only finite numbers are)")


def _check_record(record: object) -> str | None:
    if not isinstance(record, dict):
        return "not a JSON object"
    record_id = record.get("id")
    if isinstance(record_id, bool) or not isinstance(record_id, (str, int)) or str(record_id) == "":
        return "missing or empty 'id' (a string or an integer)"
    if not isinstance(record.get("text"), str):
        return "missing 'text' (a string)"
    fmt = record.get("format") or "text"
    if fmt not in RECORD_FORMATS:
        return f"unknown format {fmt!r} (expected text, markdown or html)"
    for key in ("title", "source"):
        if record.get(key) is not None and not isinstance(record[key], str):
            return f"'{key}' must be a string"
    if record.get("metadata") is not None and not isinstance(record["metadata"], dict):
        return "'metadata' must be a JSON object"
    return None


def check_source(source: SourceDocument) -> None:
    """Raise SourceCheckError when a field of ``source`` cannot be stored as it is.

    The text itself is checked by the parser (windowrag_pg.parse.check_text); this checks the
    rest: external_id, format, title, source and metadata.
    """
    if not isinstance(source.external_id, str) or not source.external_id:
        raise SourceCheckError(f"external_id must be a non-empty string, got {source.external_id!r}")
    _check_string("external_id", source.external_id)
    if source.format not in FILE_FORMATS:
        raise SourceCheckError(f"unknown format {source.format!r} (expected one of {', '.join(FILE_FORMATS)})")
    if source.format in BINARY_FORMATS:
        if not isinstance(source.data, (bytes, bytearray)):
            raise SourceCheckError(f"a {source.format} document needs its bytes in 'data', "
                                   f"got {type(source.data).__name__}")
        if source.text is not None:  # one of the two would be stored and the other dropped
            raise SourceCheckError(f"a {source.format} document takes its bytes in 'data', not 'text'")
    elif source.data is not None:
        raise SourceCheckError(f"a {source.format} document takes its text in 'text' (a str), not bytes in "
                               f"'data' (decode them, e.g. data.decode('utf-8'))")
    elif source.text is not None and not isinstance(source.text, str):
        raise SourceCheckError(f"text must be a string, got {type(source.text).__name__}")
    for name in ("title", "source"):
        value = getattr(source, name)
        if value is not None:
            if not isinstance(value, str):
                raise SourceCheckError(f"{name} must be a string, got {type(value).__name__}")
            _check_string(name, value)
    check_metadata(source.metadata)


def check_metadata(metadata: object) -> None:
    """Metadata must be a JSON object of strings, finite numbers, booleans, nulls, lists, objects."""
    if not isinstance(metadata, dict):
        raise SourceCheckError(f"metadata must be a JSON object (dict), got {type(metadata).__name__}")
    # Iterative walk: hostile metadata can be nested deeper than Python's recursion limit.
    stack: list[tuple[object, str, int]] = [(metadata, "metadata", 1)]
    while stack:
        value, where, depth = stack.pop()
        if isinstance(value, dict):
            if depth > MAX_METADATA_DEPTH:
                raise SourceCheckError(f"metadata is nested deeper than {MAX_METADATA_DEPTH} levels (at {_short(where)})")
            for key, item in value.items():
                if not isinstance(key, str):
                    raise SourceCheckError(f"{_short(where)}: key {key!r} is not a string")
                _check_string(f"{_short(where)}: key", key)
                stack.append((item, f"{where}.{key}", depth + 1))
        elif isinstance(value, list):
            if depth > MAX_METADATA_DEPTH:
                raise SourceCheckError(f"metadata is nested deeper than {MAX_METADATA_DEPTH} levels (at {_short(where)})")
            stack.extend((item, f"{where}[{i}]", depth + 1) for i, item in enumerate(value))
        elif isinstance(value, str):
            _check_string(_short(where), value)
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise SourceCheckError(f"{_short(where)}: {value} is not a JSON number (only finite numbers are)")
        elif value is not None and not isinstance(value, (bool, int)):
            raise SourceCheckError(
                f"{_short(where)}: a {type(value).__name__} is not a JSON value "
                "(use strings, numbers, booleans, null, lists and objects)"
            )


def _check_string(name: str, value: str) -> None:
    nul_at = value.find("\x00")
    if nul_at >= 0:
        raise SourceCheckError(f"{name} contains a NUL character at offset {nul_at} (Postgres text cannot store it)")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise SourceCheckError(
            f"{name} contains a lone surrogate at offset {error.start} (not valid Unicode text)"
        ) from None


def _short(where: str, limit: int = 80) -> str:
    return where if len(where) <= limit else f"{where[: limit // 2]}…{where[-limit // 2:]}"
