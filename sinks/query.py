"""`outcomes query`: analysts' read-only SQL, rendered as a table, JSON or CSV."""

from __future__ import annotations

import base64
import csv
import io
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any, TextIO

import orjson
from clickhouse_connect.driver.exceptions import Error as DriverError

from outcomes.sinks import clickhouse, guard, schema
from outcomes.sinks.exceptions import QueryFailed

FORMATS = ("table", "json", "csv")


@dataclass(frozen=True)
class QueryResult:
    """Column names and rows of one query."""

    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]


def run_query(dsn: str, sql: str, *, final: bool = True) -> QueryResult:
    """Run one SELECT read-only against the outcomes database.

    Two fences (docs/clickhouse.md, analysts): `outcomes.sinks.guard` refuses, before anything
    runs, whatever is not one plain SELECT of the outcomes data (INTO OUTFILE, several
    statements, SETTINGS, table functions that reach files, URLs, servers or processes,
    dictionaries, secret tables); ClickHouse then runs it with `readonly = 1`, which
    refuses writes, DDL, setting changes and those table functions again.

    Unqualified names resolve in the outcomes database. With `final` (the default)
    every ReplacingMergeTree table is read as FINAL, so no query can ever count a
    not-yet-merged duplicate (docs/clickhouse.md, exactly once).
    """
    statement = guard.check(sql)
    return _execute(dsn, statement, final=final)


def _execute(dsn: str, sql: str, *, final: bool) -> QueryResult:
    """Run a statement under readonly = 1 (the guard's caller; tests call it directly
    to show what ClickHouse refuses by itself)."""
    conn = clickhouse.open_private(dsn)
    try:
        if not conn.database_exists():
            schema.ensure_schema(conn)
        conn.use_database()
        # Settings of one request are checked against the session's readonly (0) and
        # then applied together, so final = 1 holds while readonly = 1 refuses any
        # change the statement itself asks for. (readonly = 2 would let table
        # functions such as file() and INSERT INTO FUNCTION through.)
        settings: dict[str, Any] = {"final": 1} if final else {}
        settings["readonly"] = 1
        try:
            result = conn.client.query(sql, settings=settings)
        except DriverError as exc:
            raise QueryFailed(explain_error(sql, str(exc))) from exc
        return QueryResult(tuple(result.column_names), [tuple(r) for r in result.result_rows])
    finally:
        clickhouse.close(conn)


# What the driver appends to the statement it sends (a SETTINGS clause on chDB, a
# FORMAT clause everywhere): the user never typed it, so no message should quote it.
_APPENDED = re.compile(r"\s*\b(?:SETTINGS (?:\w+ = '[^']*'(?:, )?)+|FORMAT Native\b)")
_SYNTAX_POSITION = re.compile(r"Syntax error[^:]*: failed at position (\d+)")
_EXPECTED = re.compile(r"Expected (?:one of: )?(.*?)\.?\s*(?:\(SYNTAX_ERROR\)|$)")
_SHOWN_EXPECTED = 8


def explain_error(statement: str, message: str) -> str:
    """One line for a ClickHouse error about `statement`, in the user's own terms.

    The statement sent is the user's text with the driver's suffix appended (`SETTINGS
    …` on chDB, `FORMAT Native`), so ClickHouse's positions count from the start of the
    user's text, in bytes, from 1. A syntax error is told as a position, line and
    column of the user's statement with the text there; one that ClickHouse found past
    the end of the user's text (in the suffix) means the statement stopped too early.
    Other errors keep ClickHouse's text, without the appended clauses.
    """
    text = " ".join(message.split())
    found = _SYNTAX_POSITION.search(text)
    if found is None:
        return _APPENDED.sub("", text)[:800]
    raw = statement.encode()
    offset = int(found.group(1)) - 1
    if offset >= len(raw.rstrip()):
        tail = " ".join(statement.split())
        tail = tail if len(tail) <= 30 else "…" + tail[-30:]
        return (
            f"syntax error at the end of your statement (position {len(statement.rstrip())}, "
            f"after '{tail}'): it stops before it is complete"
        )
    at = len(raw[:offset].decode(errors="ignore"))
    line = statement.count("\n", 0, at) + 1
    column = at - (statement.rfind("\n", 0, at) + 1) + 1
    near = statement[at:].split("\n", 1)[0][:30].rstrip()
    before = " ".join(statement[:at].split()[-2:])
    where = f"position {at + 1}" + (f" (line {line}, column {column})" if "\n" in statement else "")
    explained = f"syntax error at {where} of your statement, at '{near}'"
    if before:
        explained += f" (after '{before}')"
    expected = _EXPECTED.search(text[found.end() :])
    if expected:
        items = [i.strip() for i in expected.group(1).split(",") if i.strip()]
        shown = ", ".join(items[:_SHOWN_EXPECTED]) + (", …" if len(items) > _SHOWN_EXPECTED else "")
        explained += f"; expected {shown}"
    return explained


def plain(value: Any) -> Any:
    """A JSON/CSV-friendly form of a ClickHouse value (timestamps as RFC 3339, UTC)."""
    if isinstance(value, datetime):
        text = value.isoformat()
        return text + "Z" if value.tzinfo is None else text
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, uuid.UUID | Decimal):
        return str(value)
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    return value


def to_json(result: QueryResult) -> str:
    """A JSON array with one object per row."""
    objects = [
        dict(zip(result.columns, (plain(v) for v in row), strict=True)) for row in result.rows
    ]
    return orjson.dumps(objects, option=orjson.OPT_INDENT_2).decode()


def to_csv(result: QueryResult) -> str:
    """CSV with a header row; arrays and maps as JSON."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(result.columns)
    for row in result.rows:
        writer.writerow([_cell(plain(v)) for v in row])
    return out.getvalue()


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list | dict):
        return orjson.dumps(value).decode()
    return str(value)


def render(result: QueryResult, fmt: str, stream: TextIO) -> None:
    """Write a result in `fmt` (table, json or csv) to `stream`."""
    if fmt == "json":
        stream.write(to_json(result) + "\n")
    elif fmt == "csv":
        stream.write(to_csv(result))
    elif fmt == "table":
        _table(result.columns, result.rows, stream)
    else:
        raise ValueError(f"unknown format {fmt!r}; expected one of {FORMATS}")


def _table(columns: Sequence[str], rows: Sequence[tuple[Any, ...]], stream: TextIO) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(show_lines=False, caption=f"{len(rows)} row{'s' if len(rows) != 1 else ''}")
    for name in columns:
        table.add_column(name, overflow="fold")
    for row in rows:
        table.add_row(*(_cell(plain(v)) if v is not None else "NULL" for v in row))
    Console(file=stream, soft_wrap=False).print(table)
