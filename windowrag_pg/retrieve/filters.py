"""A small, safe filter language over documents, compiled to parameterised SQL.

    {"metadata.lang": "en"}                         equality (jsonb containment, GIN-indexed)
    {"metadata.year": {"gte": 2020, "lt": 2024}}    ranges: gt, gte, lt, lte
    {"metadata.tag": {"in": ["a", "b"]}}            membership
    {"document_id": "handbook/benefits.md"}         external id; also "source", "title"
    {"created_at": {"gte": "2026-01-01"}}           dates: created_at, updated_at

Keys are checked against a strict pattern and values only ever travel as query parameters,
so nothing a caller passes reaches the SQL text. Conditions are AND-ed.
"""
from __future__ import annotations

import math
import re
from datetime import date, datetime
from typing import Any

from psycopg import sql
from psycopg.types.json import Jsonb

KEY_PART = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_\-]{0,63}$")
COLUMNS = {"document_id": "external_id", "source": "source", "title": "title"}
DATE_COLUMNS = {"created_at", "updated_at"}
RANGE_OPERATORS = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
SCALARS = (str, int, float, bool, type(None))
MAX_IN_VALUES = 1000
MAX_KEY_PARTS = 32


class FilterError(ValueError):
    """A filter the language does not accept; the message names the key and the problem."""


def compile_filters(filters: dict[str, Any] | None, *, alias: str = "d") -> tuple[sql.Composable, dict[str, Any]]:
    """Return (condition over documents AS alias, parameters). No filters → TRUE."""
    if not filters:
        return sql.SQL("TRUE"), {}
    if not isinstance(filters, dict):
        raise FilterError(f"filters must be a mapping of key to condition, got {type(filters).__name__}")
    params: dict[str, Any] = {}
    parts = [_compile_one(key, condition, alias, params) for key, condition in filters.items()]
    return sql.SQL(" AND ").join(parts), params


def _compile_one(key: Any, condition: Any, alias: str, params: dict[str, Any]) -> sql.Composable:
    if not isinstance(key, str):
        raise FilterError(f"filter key {key!r} is not a string")
    table = sql.Identifier(alias)
    if key.startswith("metadata."):
        path = key.split(".")[1:]
        if len(path) > MAX_KEY_PARTS:
            raise FilterError(
                f"filter key {key[:60]!r}...: at most {MAX_KEY_PARTS} parts after 'metadata.', got {len(path)} parts"
            )
        for part in path:
            if not KEY_PART.match(part):
                raise FilterError(
                    f"filter key {key!r}: metadata key {part!r} may hold only letters, digits, '_' and '-' "
                    "(at most 64 characters)"
                )
        return _metadata_condition(key, path, condition, table, params)
    if key in COLUMNS:
        return _column_condition(key, sql.SQL("{}.{}").format(table, sql.Identifier(COLUMNS[key])), condition, params, str)
    if key in DATE_COLUMNS:
        return _column_condition(key, sql.SQL("{}.{}").format(table, sql.Identifier(key)), condition, params, _as_datetime)
    allowed = ", ".join([*COLUMNS, *sorted(DATE_COLUMNS), "metadata.<key>"])
    raise FilterError(f"unknown filter key {key!r} (allowed: {allowed})")


def _param(params: dict[str, Any], value: Any) -> sql.Placeholder:
    name = f"filter_{len(params)}"
    params[name] = value
    return sql.Placeholder(name)


def _metadata_condition(key: str, path: list[str], condition: Any, table, params) -> sql.Composable:
    if not isinstance(condition, dict):
        _check_scalar(key, condition)
        nested: Any = condition
        for part in reversed(path):
            nested = {part: nested}
        return sql.SQL("{}.metadata @> {}").format(table, _param(params, Jsonb(nested)))
    value_at = sql.SQL("({}.metadata #> {})").format(table, _param(params, path))
    parts = []
    for op, value in _operators(key, condition):
        if op == "eq":
            _check_scalar(key, value)
            parts.append(sql.SQL("{} = {}").format(value_at, _param(params, Jsonb(value))))
        elif op == "in":
            values = _check_list(key, value)
            parts.append(sql.SQL("{} = ANY ({}::jsonb[])").format(value_at, _param(params, [Jsonb(v) for v in values])))
        else:
            _check_scalar(key, value)
            if value is None or isinstance(value, bool):
                raise FilterError(f"filter key {key!r}: {op} needs a number or a string, got {value!r}")
            # jsonb orders numbers numerically and strings as text; compare like with like only.
            kind = "number" if isinstance(value, (int, float)) else "string"
            parts.append(sql.SQL("(jsonb_typeof({v}) = {kind} AND {v} {op} {value})").format(
                v=value_at, kind=sql.Literal(kind), op=sql.SQL(RANGE_OPERATORS[op]), value=_param(params, Jsonb(value))))
    return sql.SQL(" AND ").join(parts)


def _column_condition(key: str, column: sql.Composable, condition: Any, params, convert) -> sql.Composable:
    pairs = _operators(key, condition) if isinstance(condition, dict) else [("eq", condition)]
    parts = []
    for op, value in pairs:
        if op == "in":
            values = [_convert(key, convert, v) for v in _check_list(key, value)]
            parts.append(sql.SQL("{} = ANY ({})").format(column, _param(params, values)))
        else:
            symbol = "=" if op == "eq" else RANGE_OPERATORS[op]
            parts.append(sql.SQL("{} {} {}").format(column, sql.SQL(symbol), _param(params, _convert(key, convert, value))))
    return sql.SQL(" AND ").join(parts)


def _operators(key: str, condition: dict) -> list[tuple[str, Any]]:
    if not condition:
        raise FilterError(f"filter key {key!r}: empty condition")
    pairs = []
    for op, value in condition.items():
        if op not in ("eq", "in", *RANGE_OPERATORS):
            raise FilterError(f"filter key {key!r}: unknown operator {op!r} (use eq, in, gt, gte, lt, lte)")
        pairs.append((op, value))
    return pairs


def _check_scalar(key: str, value: Any) -> None:
    if not isinstance(value, SCALARS):
        raise FilterError(f"filter key {key!r}: value {value!r} is not a string, number, boolean or null")
    if isinstance(value, float) and value != value:  # NaN
        raise FilterError(f"filter key {key!r}: NaN is not a value")
    if isinstance(value, float) and math.isinf(value):
        raise FilterError(f"filter key {key!r}: {value} is not a finite number")
    if isinstance(value, str) and "\x00" in value:
        raise FilterError(f"filter key {key!r}: value contains a NUL character")
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as error:
            raise FilterError(f"filter key {key!r}: value contains a lone surrogate at offset {error.start}") from None


def _check_list(key: str, value: Any) -> list:
    if not isinstance(value, (list, tuple)) or not value:
        raise FilterError(f"filter key {key!r}: 'in' needs a non-empty list")
    if len(value) > MAX_IN_VALUES:
        raise FilterError(f"filter key {key!r}: 'in' takes at most {MAX_IN_VALUES} values")
    for v in value:
        _check_scalar(key, v)
    return list(value)


def _convert(key: str, convert, value: Any) -> Any:
    _check_scalar(key, value)
    try:
        return convert(value)
    except (TypeError, ValueError) as exc:
        raise FilterError(f"filter key {key!r}: {value!r} is not valid here ({exc})") from exc


def _as_datetime(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day)
    if isinstance(value, str):
        return datetime.fromisoformat(value)
    raise ValueError("expected an ISO date or datetime")


def parse_cli_filter(expression: str) -> tuple[str, Any]:
    """'key=value', 'key>=value', … → (key, condition). Values are JSON when they parse as JSON."""
    import json

    match = re.match(r"^([^=<>!]+?)(>=|<=|=|>|<)(.*)$", expression, re.S)
    if not match:
        raise FilterError(f"filter {expression!r}: expected KEY=VALUE (or >=, <=, >, <)")
    key, op, raw = match.group(1).strip(), match.group(2), match.group(3)
    if not key.startswith("metadata.") and key not in COLUMNS and key not in DATE_COLUMNS:
        key = f"metadata.{key}"  # bare keys are metadata keys: --filter lang=en
    try:
        value = json.loads(raw)
        if not isinstance(value, SCALARS):
            value = raw
    except json.JSONDecodeError:
        value = raw
    if op == "=":
        return key, value
    return key, {{">=": "gte", "<=": "lte", ">": "gt", "<": "lt"}[op]: value}


def combine_cli_filters(conditions: list[tuple[str, Any]]) -> dict[str, Any]:
    """Filters from (key, condition) pairs of repeated ``--filter`` options: different keys are
    AND-ed; one key given values again matches any of them (``--filter document_id=a --filter
    document_id=b``: either document), ranges on one key are AND-ed (``year>=2020 year<2024``).
    A value and a range on one key are refused: which was meant is not clear."""
    filters: dict[str, Any] = {}
    for key, condition in conditions:
        if key not in filters:
            filters[key] = condition
            continue
        before = filters[key]
        values_before, values_now = _values_of(before), _values_of(condition)
        if values_before is not None and values_now is not None:
            filters[key] = {"in": list(dict.fromkeys([*values_before, *values_now]))}
        elif isinstance(before, dict) and isinstance(condition, dict) and values_before is None and values_now is None:
            filters[key] = {**before, **condition}
        else:
            raise FilterError(f"filter key {key!r} is given both a value and a range: use values only (any of "
                              "them matches) or ranges only (all must hold)")
    return filters


def _values_of(condition: Any) -> list[Any] | None:
    """The values an equality or membership condition accepts; None for a range."""
    if isinstance(condition, dict):
        return list(condition["in"]) if set(condition) == {"in"} else None
    return [condition]

