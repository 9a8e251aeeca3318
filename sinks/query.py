"""`outcomes query`: analysts' read-only SQL, rendered as a table, JSON or CSV."""

from __future__ import annotations

import base64
import csv
import io
import re
import threading
import uuid
from collections.abc import Mapping, Sequence
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


# The analyst session's limits (docs/clickhouse.md, analysts). They are set on the
# session before `readonly = 1`, which is set last: from then on no statement, setting
# or URL parameter of that session can change any of them.
LIMITS: dict[str, int | str] = {
    "max_execution_time": 30,
    "max_memory_usage": 1024**3,
    "max_result_rows": 1_000_000,
    "max_result_bytes": 128 * 1024**2,
    "result_overflow_mode": "throw",
    "max_query_size": 1024**2,
    "max_ast_elements": 50_000,
    "max_parser_depth": 1000,
}


def session_settings(final: bool, limits: Mapping[str, int | str] = LIMITS) -> dict[str, Any]:
    """Every setting of an analyst session, in the order they are set (readonly last)."""
    return {**limits, "final": int(final), "readonly": 1}


def set_statements(settings: Mapping[str, Any]) -> list[str]:
    """`SET` statements for a session's settings (values are this module's, not users')."""
    return [
        f"SET {name} = {value if isinstance(value, int) else repr(str(value))}"
        for name, value in settings.items()
    ]


_catalogues: dict[tuple[str, str], guard.Catalogue] = {}
_catalogue_lock = threading.Lock()


def catalogue_for(key: str, database: str, ask: guard.Ask) -> guard.Catalogue:
    """The analyst catalogue of one engine (cached per process: it changes with the
    engine's version and the migrations, not between statements)."""
    with _catalogue_lock:
        found = _catalogues.get((key, database))
        if found is None:
            statements = [s for m in schema.MIGRATIONS for s in m.statements(database)]
            readable = guard.analyst_grants(statements, database)
            found = guard.load_catalogue(ask, database, readable)
            _catalogues[(key, database)] = found
        return found


def forget_catalogues() -> None:
    """Drop cached catalogues (after a migration added tables in this process)."""
    with _catalogue_lock:
        _catalogues.clear()


def run_query(dsn: str, sql: str, *, final: bool = True) -> QueryResult:
    """Run one analyst statement read-only against the outcomes database.

    The engine decides (`outcomes.sinks.guard`): ClickHouse parses the text, the tree is
    checked against the allowlists, and the statement ClickHouse prints back from it is
    what runs, in a session whose limits and `readonly = 1` were set before it arrived.
    A chDB directory a sink holds is reached through the sink's live endpoint, which
    decides the same way on its own engine.

    Unqualified names resolve in the outcomes database. With `final` (the default)
    every ReplacingMergeTree table is read as FINAL, so no query can ever count a
    not-yet-merged duplicate (docs/clickhouse.md, exactly once).
    """
    conn = clickhouse.open_private(dsn)
    try:
        if conn.live:
            return _through_endpoint(conn, sql, final)
        if not conn.database_exists():
            schema.ensure_schema(conn)
            forget_catalogues()
        conn.use_database()
        session = AnalystSession(conn, final)
        catalogue = catalogue_for(session.key, conn.database, session.ask)
        statement = guard.decide(sql, session.ask, catalogue, explain=explain_error)
        return session.run(statement.sql, stream=statement.kind == "select")
    finally:
        clickhouse.close(conn)


def _through_endpoint(conn: clickhouse.Connection, sql: str, final: bool) -> QueryResult:
    try:
        result = conn.client.query(sql, settings={"final": int(final)})
    except DriverError as exc:
        raise QueryFailed(_endpoint_error(str(exc))) from exc
    return QueryResult(tuple(result.column_names), [tuple(r) for r in result.result_rows])


_ENDPOINT_TEXT = re.compile(r"Code: \d+\. DB::Exception: (.*?)(?: \(version [^)]*\))?$")


def _endpoint_error(message: str) -> str:
    """The endpoint's one line, without the driver's HTTP wrapping."""
    text = " ".join(message.split())
    found = _ENDPOINT_TEXT.search(text)
    return (found.group(1) if found else text)[:800]


class AnalystSession:
    """One connection's session, limited and read-only before any analyst text arrives.

    On chDB the settings are `SET` on the connection's own session (readonly last); on
    a server they travel with every request, readonly among them, so the statement can
    change none (ClickHouse applies a request's settings before reading its query).
    """

    def __init__(self, conn: clickhouse.Connection, final: bool) -> None:
        self.conn = conn
        self.key = conn.target.path or conn.target.server_dsn or conn.target.dsn
        settings = session_settings(final)
        self._settings: dict[str, Any] = {}
        if conn.target.embedded:
            for statement in set_statements(settings):
                conn.client.command(statement)
        else:
            self._settings = settings

    def ask(self, sql: str) -> str:
        """One String value (the guard's questions: its own SQL, the user's text hex)."""
        result = self.conn.client.query(sql, settings=self._settings)
        return str(result.result_rows[0][0])

    def run(self, sql: str, *, stream: bool = True) -> QueryResult:
        """The rows, read block by block and stopped past `max_result_rows`: chDB does
        not apply the result limits to a statement without a table (`SELECT
        arrayJoin(range(…))`; measured, docs/clickhouse.md), so the reader does. chDB
        streams only SELECTs: SHOW, DESCRIBE and EXPLAIN (`stream=False`) are read
        whole (their answers are the size of a schema or a plan)."""
        most = int(LIMITS["max_result_rows"])
        try:
            if not stream:
                whole = self.conn.client.query(sql, settings=self._settings)
                return QueryResult(tuple(whole.column_names), [tuple(r) for r in whole.result_rows])
            rows: list[tuple[Any, ...]] = []
            with self.conn.client.query_row_block_stream(sql, settings=self._settings) as blocks:
                columns = tuple(blocks.source.column_names)
                for block in blocks:
                    rows.extend(tuple(r) for r in block)
                    if len(rows) > most:
                        raise QueryFailed(
                            f"Code: 396. Limit for result exceeded, max rows: {most:,} "
                            "(TOO_MANY_ROWS_OR_BYTES); add a LIMIT or aggregate"
                        )
            if not rows and not columns:
                # chDB sends no block for an empty result, so no names either; the
                # checked statement's own columns, as ClickHouse describes them.
                described = self.conn.client.query(
                    f"DESCRIBE TABLE ({sql})", settings=self._settings
                )
                columns = tuple(str(r[0]) for r in described.result_rows)
        except DriverError as exc:
            raise QueryFailed(explain_error(sql, str(exc))) from exc
        return QueryResult(columns, rows)


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
    from rich.text import Text

    console = Console(file=stream, soft_wrap=False, markup=False, emoji=False, highlight=False)
    caption = f"{len(rows)} row{'s' if len(rows) != 1 else ''}"
    if not columns:
        console.print(Text(caption))
        return
    table = Table(show_lines=False)
    for name in columns:
        table.add_column(Text(literal(name)), overflow="fold")
    for row in rows:
        table.add_row(*(Text(literal(_cell(plain(v)))) if v is not None else "NULL" for v in row))
    console.print(table)
    # A caption under the table, not rich's: a zero-row table prints it too.
    console.print(Text(caption))


_ESCAPED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def literal(text: str) -> str:
    """`text` for a terminal: control characters, bidi overrides and other invisible
    format characters written as escapes, so data can neither move the cursor, recolour
    the screen nor reorder what is shown."""
    if text.isprintable():
        return text
    return "".join(_escape(c) for c in text)


def _escape(char: str) -> str:
    if char.isprintable() or char == " ":
        return char
    if char in _ESCAPED:
        return _ESCAPED[char]
    code = ord(char)
    return (
        f"\\x{code:02x}"
        if code < 0x100
        else f"\\u{code:04x}"
        if code < 0x10000
        else f"\\U{code:08x}"
    )
