"""ClickHouseWriter: output records -> rows of their tables, batched, exactly once.

Exactly once, in three layers (docs/clickhouse.md has the evidence):

1. Identity. A record's rows are a pure function of the record (sinks/rows.py) and
   each row's ORDER BY key derives from the record's deterministic id. The tables are
   ReplacingMergeTree on that key, so even if two copies of a row were ever stored,
   FINAL (which every view uses) shows one, and merges remove the other.
2. Read-before-insert. Before each insert the writer asks which of the batch's
   `row_id`s are already stored and inserts only the others. The batch's keys travel
   as one JSON array in a heredoc string that ClickHouse splits itself (`_json_keys`),
   not as thousands of SQL literals, which the SQL parser is slow at. Redelivered batches,
   a sink restarted after SIGKILL, and a second sink replaying the topic therefore add
   no physical row. Partial inserts (a crash between tables or between parts) are
   completed by the retry, since the check is per row, not per batch.
3. Insert tokens. Each insert carries `insert_deduplication_token` = SHA-256 of the
   table and its sorted row ids, and the tables keep a deduplication window, so two
   writers racing to insert the same rows at the same instant store them once.

Runs removed by `outcomes purge` are never written again (a replay would otherwise
resurrect them): rows of a run listed in `purge_log` are dropped.

A record that came with its canonical JSON (common/output_headers.py) is written the
same way without becoming Python rows: the read-back asks for its id, and the records
not stored go to ClickHouse as their JSON bytes, which one `INSERT … SELECT` per table
turns into the rows sinks/rows.py would have made (sinks/json_insert.py).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, cast

import orjson

from outcomes.common.retry import Backoff, Retrying, retry
from outcomes.reducers.records import OutputRecord
from outcomes.sinks import json_insert, schema
from outcomes.sinks.clickhouse import Connection, Source, connect
from outcomes.sinks.exceptions import ClickHouseUnavailable
from outcomes.sinks.rows import Row, rows_for

log = logging.getLogger(__name__)

# An account revision is one row with its predicates, contradictions and effects
# (atomic since migration 13); notifications follow their revisions and claim
# notifications the verdicts they list, in `output_rows`, written after both. Provenance
# rows share that table, so they become visible with it, after the revisions of the flush.
FLUSH_ORDER: tuple[str, ...] = (
    "account_revision_rows",
    "claim_verdicts",
    "output_rows",
    "dead_letters",
)
assert set(FLUSH_ORDER) == set(schema.TABLES_BY_NAME)

# Row ids per read-back query, and a query size limit that fits them.
_MAX_IDS_PER_QUERY = 50_000
_BIG_QUERY = {"max_query_size": 64 * 1024 * 1024}


class Encoded(NamedTuple):
    """A record as it came with its headers: its Kafka key (the run id, "" for a dead
    letter of no run), its deterministic id and its canonical JSON. (A tuple, so that
    the read-back takes encoded records and rows alike.)"""

    run_id: str
    id: str
    json: bytes


# JSON bytes per INSERT … SELECT (the data goes beside the statement, as a file or
# external data: Connection.insert_select).
_MAX_JSON_BYTES = 64 * 1024 * 1024
# How ClickHouse reads the records' JSON (sinks/json_insert.py): keys the rows do not
# need are skipped, and RFC 3339 timestamps are read as such.
_JSON_READ: dict[str, str | int] = {
    "input_format_skip_unknown_fields": 1,
    "date_time_input_format": "best_effort",
}


@dataclass
class WriteReport:
    """Rows inserted, rows dropped as already stored, rows dropped as purged, by table."""

    inserted: dict[str, int] = field(default_factory=dict)
    already_present: dict[str, int] = field(default_factory=dict)
    purged: dict[str, int] = field(default_factory=dict)

    def add(self, other: WriteReport) -> None:
        for mine, theirs in (
            (self.inserted, other.inserted),
            (self.already_present, other.already_present),
            (self.purged, other.purged),
        ):
            for table, n in theirs.items():
                mine[table] = mine.get(table, 0) + n

    @property
    def rows_inserted(self) -> int:
        return sum(self.inserted.values())


@dataclass(frozen=True)
class _Layout:
    """Where a table keeps its run_id, row_id and record_table columns, and what an
    insert names."""

    table: schema.Table
    run_idx: int
    row_idx: int
    columns: tuple[str, ...]
    types: tuple[str, ...]
    # output_rows: a row's identity is (record_table, row_id), its key "table/row_id"
    # (a record table's name has no "/").
    kind_idx: int | None = None

    def key(self, row: Row) -> str:
        if self.kind_idx is None:
            return str(row[self.row_idx])
        return f"{row[self.kind_idx]}/{row[self.row_idx]}"


def _layout(table: schema.Table) -> _Layout:
    names = table.column_names
    kind = names.index("record_table") if "record_table" in names else None
    return _Layout(
        table, names.index("run_id"), names.index("row_id"), names, table.column_types, kind
    )


_LAYOUTS = {t.name: _layout(t) for t in schema.DATA_TABLES}


class ClickHouseWriter:
    """Writes output records to ClickHouse in batches; every call is idempotent.

    `write` returns only after ClickHouse acknowledged every row of the records given,
    so a caller may commit its input position afterwards.
    """

    def __init__(
        self,
        dsn: str,
        *,
        batch_rows: int = 20_000,
        retries: int = 3,
        retry_delay: float = 0.5,
        async_insert: bool = False,
    ) -> None:
        self.conn: Connection = connect(dsn)
        schema.ensure_schema(self.conn)
        self.batch_rows = batch_rows
        self.retries = retries
        self.retry_delay = retry_delay
        # Asynchronous inserts, acknowledged only once the server flushed them to a part
        # (so they are visible to the next read-back, and the offsets are committed after
        # that); their deduplication token still applies (docs/clickhouse.md).
        self.insert_settings: dict[str, int] = (
            {"async_insert": 1, "wait_for_async_insert": 1} if async_insert else {}
        )

    @classmethod
    def on(cls, conn: Connection) -> ClickHouseWriter:
        """A writer on an open connection, without `ensure_schema` (for a database being
        migrated, e.g. in tests), with the default batching and retries."""
        writer = cls.__new__(cls)
        writer.conn = conn
        writer.batch_rows, writer.retries, writer.retry_delay = 20_000, 3, 0.5
        writer.insert_settings = {}
        return writer

    def write(self, records: Iterable[OutputRecord]) -> WriteReport:
        """Land records (any kinds, any number); flushes every `batch_rows` rows."""
        report = WriteReport()
        pending: dict[str, list[Row]] = {}
        count = 0
        for record in records:
            for table, row in rows_for(record):
                pending.setdefault(table, []).append(row)
                count += 1
            if count >= self.batch_rows:
                report.add(self.write_rows(pending))
                pending, count = {}, 0
        if pending:
            report.add(self.write_rows(pending))
        return report

    def close(self) -> None:
        """Nothing is buffered between calls; the cached connection stays for the process."""

    def __enter__(self) -> ClickHouseWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def write_rows(
        self,
        rows: Mapping[str, Sequence[Row]],
        encoded: Mapping[str, Sequence[Encoded]] | None = None,
    ) -> WriteReport:
        """Insert table rows and encoded records (by output kind) not already stored,
        retrying transient failures (`ClickHouseUnavailable`) `retries` times with
        backoff from `retry_delay`."""

        def warn(attempt: Retrying) -> None:
            log.warning(
                "ClickHouse write failed (%s); retry %d in %.1fs",
                attempt.error,
                attempt.attempt,
                attempt.delay,
            )

        return retry(
            lambda: self._write_once(rows, encoded or {}),
            retry_if=lambda exc: isinstance(exc, ClickHouseUnavailable),
            attempts=self.retries + 1,
            backoff=Backoff(base=self.retry_delay),
            on_retry=warn,
        )

    def _write_once(
        self,
        rows: Mapping[str, Sequence[Row]],
        encoded: Mapping[str, Sequence[Encoded]] | None = None,
    ) -> WriteReport:
        report = WriteReport()
        encoded = encoded or {}
        busy = any(rows.values()) or any(encoded.values())
        purged_runs = self._purged_runs() if busy else set()
        batches: dict[str, dict[str, Row]] = {}
        for table in FLUSH_ORDER:
            batch = rows.get(table)
            if not batch:
                continue
            lay = _LAYOUTS[table]
            if purged_runs:
                kept = [row for row in batch if row[lay.run_idx] not in purged_runs]
                _count_purged(report, table, len(batch) - len(kept))
                batch = kept
            unique: dict[str, Row] = {}
            for row in batch:
                unique.setdefault(lay.key(row), row)
            batches[table] = unique
        records: dict[str, dict[str, Encoded]] = {}
        for kind, given in encoded.items():
            table = json_insert.TABLE_OF_KIND[kind]
            if purged_runs:
                kept_records = [r for r in given if r.run_id not in purged_runs]
                _count_purged(report, table, len(given) - len(kept_records))
                given = kept_records
            by_id: dict[str, Encoded] = {}
            for record in given:
                by_id.setdefault(record.id, record)
            if by_id:
                records[kind] = by_id
        _drop_encoded_twins(batches, records)
        asked: dict[str, Sequence[Row]] = {t: list(u.values()) for t, u in batches.items() if u}
        asked.update((_kind_label(k), list(r.values())) for k, r in records.items())
        stored = self._stored_ids(asked)
        for table in FLUSH_ORDER:
            table_rows = batches.get(table)
            if table_rows is not None:
                present = stored.get(table, set())
                fresh = [row for key, row in table_rows.items() if key not in present]
                if fresh:
                    self._insert(table, fresh)
                _count(report, table, len(fresh), len(present))
            fresh_json: dict[str, list[Encoded]] = {}
            for kind, by_id in records.items():
                if json_insert.TABLE_OF_KIND[kind] != table:
                    continue
                present = stored.get(_kind_label(kind), set())
                fresh_json[kind] = [r for key, r in by_id.items() if key not in present]
                _count(report, table, len(fresh_json[kind]), len(present))
            if any(fresh_json.values()):
                self._insert_json(table, {k: v for k, v in fresh_json.items() if v})
        return report

    def _insert(self, table: str, rows: Sequence[Row]) -> None:
        """One synchronous INSERT: the rows are queryable once it returns."""
        lay = _LAYOUTS[table]
        self.conn.insert(
            table,
            rows,
            lay.columns,
            settings={
                **self.insert_settings,
                "insert_deduplication_token": _token(table, rows, lay),
            },
            column_types=lay.types,
        )

    def _insert_json(self, table: str, records: Mapping[str, Sequence[Encoded]]) -> None:
        """Synchronous `INSERT … SELECT`s of the records' rows, made by ClickHouse from
        their JSON (sinks/json_insert.py): one statement for all the kinds of a table,
        or more if their JSON exceeds `_MAX_JSON_BYTES`. Queryable once it returns."""
        for chunk in _json_chunks(records):
            keys = sorted(f"{kind}/{r.id}" for kind, group in chunk.items() for r in group)
            selects: list[str] = []
            sources: dict[str, Source] = {}
            for index, (kind, group) in enumerate(sorted(chunk.items())):
                blob = b"\n".join(r.json for r in group)
                typed, canonical = f"outcomes_json_{index}", f"outcomes_canonical_{index}"
                sources[typed] = Source(blob, "JSONEachRow", json_insert.structure(kind))
                if json_insert.NEEDS_CANONICAL[kind]:
                    sources[canonical] = Source(blob, "JSONAsString", "json String")
                selects.append(json_insert.select_sql(kind, f"{{{typed}}}", f"{{{canonical}}}"))
            token = hashlib.sha256("\0".join([table, *keys]).encode()).hexdigest()
            self.conn.insert_select(
                table,
                schema.TABLES_BY_NAME[table].column_names,
                "\nUNION ALL\n".join(selects),
                sources,
                settings={**_JSON_READ, "insert_deduplication_token": token},
            )

    def _purged_runs(self) -> set[str]:
        """Every run listed in purge_log.

        The whole log, not the batch's runs: it grows by two rows per privacy request,
        so reading it costs ~1 ms, while shipping a batch's 20,000 run ids cost ~80 ms.
        """
        sql = f"SELECT DISTINCT run_id FROM {self.conn.table('purge_log')}"
        return {r[0] for r in self.conn.rows(sql)}

    def _stored_ids(self, rows: Mapping[str, Sequence[Row]]) -> dict[str, set[str]]:
        """Per table, the keys (`_Layout.key`) among `rows` it already holds (any copy,
        merged or not); per encoded kind (`rows[_kind_label(kind)]`, `Encoded`
        records), the ids among them that its table holds.

        One query for all tables (a UNION ALL of one SELECT per table, up to
        `_MAX_IDS_PER_QUERY` ids per query): each query has a fixed cost, and a flush
        touches up to ten tables. Measured on chDB (bench flushes of ~3,300 events'
        outputs): the read-backs took 49 ms per flush as nine queries, 31 ms as one.
        """
        parts: list[tuple[str, Sequence[Row]]] = [
            (label, batch[start : start + _MAX_IDS_PER_QUERY])
            for label, batch in rows.items()
            for start in range(0, len(batch), _MAX_IDS_PER_QUERY)
        ]
        stored: dict[str, set[str]] = {label: set() for label in rows}
        while parts:
            selects: list[str] = []
            keys: dict[str, bytes] = {}
            ids = 0
            while parts and (not selects or ids + len(parts[0][1]) <= _MAX_IDS_PER_QUERY):
                label, chunk = parts.pop(0)
                ids += len(chunk)
                index = len(selects)
                if label in _LAYOUTS:
                    selects.append(self._stored_select(index, _LAYOUTS[label], chunk, keys))
                else:
                    records = cast(Sequence[Encoded], chunk)
                    selects.append(self._stored_json_select(index, label, records, keys))
            result = self.conn.rows(" UNION ALL ".join(selects), keys, settings=_BIG_QUERY)
            for label, row_id in result:
                stored[label].add(row_id)
        return stored

    def _stored_select(
        self, index: int, lay: _Layout, chunk: Sequence[Row], keys: dict[str, bytes]
    ) -> str:
        """`SELECT <table name>, <key>` of the chunk's stored rows; binds its key sets."""
        name = lay.table.name
        ids = f"$row_ids_{index}$"
        keys[ids] = _json_keys([row[lay.row_idx] for row in chunk])
        where = f"row_id IN {_KEY_SET.format(ids)}"
        if lay.table.has_run_id:
            # run_id leads the ORDER BY: the primary index prunes to these runs, and
            # the row_id bloom filter skips granules holding none of the ids.
            runs = f"$run_ids_{index}$"
            keys[runs] = _json_keys(list({row[lay.run_idx] for row in chunk}))
            where = f"run_id IN {_KEY_SET.format(runs)} AND {where}"
        key = "row_id"
        if lay.kind_idx is not None:
            # record_table leads output_rows' ORDER BY: the index prunes to those tables.
            kinds = f"$kinds_{index}$"
            keys[kinds] = _json_keys(list({row[lay.kind_idx] for row in chunk}))
            where = f"record_table IN {_KEY_SET.format(kinds)} AND {where}"
            key = "concat(record_table, '/', row_id)"
        # Table names are identifiers of our own schema (sinks/schema.py), never input.
        return f"SELECT '{name}', {key} FROM {self.conn.table(name)} WHERE {where}"

    def _stored_json_select(
        self, index: int, label: str, chunk: Sequence[Encoded], keys: dict[str, bytes]
    ) -> str:
        """`SELECT <label>, row_id` of the chunk's records already stored: by id among
        the rows of their kind (its record tables in `output_rows`)."""
        kind = label.removeprefix(_KIND_PREFIX)
        table = json_insert.TABLE_OF_KIND[kind]
        ids = f"$row_ids_{index}$"
        keys[ids] = _json_keys([r.id for r in chunk])
        where = f"row_id IN {_KEY_SET.format(ids)}"
        if schema.TABLES_BY_NAME[table].has_run_id:
            runs = f"$run_ids_{index}$"
            keys[runs] = _json_keys(list({r.run_id for r in chunk}))
            where = f"run_id IN {_KEY_SET.format(runs)} AND {where}"
        record_tables = json_insert.RECORD_TABLES.get(kind)
        if record_tables:
            names = ", ".join(f"'{name}'" for name in record_tables)
            where = f"record_table IN ({names}) AND {where}"
        # Kinds and table names are our own schema's (json_insert, sinks/schema.py).
        return f"SELECT '{label}', row_id FROM {self.conn.table(table)} WHERE {where}"


_KIND_PREFIX = "kind:"


def _kind_label(kind: str) -> str:
    """What `_stored_ids` files an encoded kind's stored ids under (no table is named so)."""
    return _KIND_PREFIX + kind


def _drop_encoded_twins(
    batches: dict[str, dict[str, Row]], records: Mapping[str, Mapping[str, Encoded]]
) -> None:
    """Drop the rows of records that the batch also holds encoded (the same record
    delivered once with headers and once without, in one flush): the read-back happens
    before either insert, so it would not stop the second copy."""
    for kind, by_id in records.items():
        unique = batches.get(json_insert.TABLE_OF_KIND[kind])
        if not unique:
            continue
        record_tables = json_insert.RECORD_TABLES.get(kind)
        if record_tables is None:
            twins = [record_id for record_id in by_id if record_id in unique]
        else:
            twins = [f"{t}/{i}" for i in by_id for t in record_tables if f"{t}/{i}" in unique]
        for key in twins:
            del unique[key]


def _count(report: WriteReport, table: str, inserted: int, present: int) -> None:
    report.inserted[table] = report.inserted.get(table, 0) + inserted
    report.already_present[table] = report.already_present.get(table, 0) + present


def _count_purged(report: WriteReport, table: str, purged: int) -> None:
    if purged:
        report.purged[table] = report.purged.get(table, 0) + purged
        log.info("%s: skipping %d row(s) of purged runs", table, purged)


def _json_chunks(
    records: Mapping[str, Sequence[Encoded]],
) -> list[dict[str, Sequence[Encoded]]]:
    """The records in groups of at most `_MAX_JSON_BYTES` of JSON (one statement each;
    a record larger than that alone)."""
    chunks: list[dict[str, Sequence[Encoded]]] = []
    current: dict[str, list[Encoded]] = {}
    size = 0
    for kind, group in records.items():
        for record in group:
            if current and size + len(record.json) > _MAX_JSON_BYTES:
                chunks.append(dict(current))
                current, size = {}, 0
            current.setdefault(kind, []).append(record)
            size += len(record.json) + 1
    if current:
        chunks.append(dict(current))
    return chunks


def _token(table: str, rows: Sequence[Row], lay: _Layout) -> str:
    """SHA-256 of the table name and the sorted row keys, each preceded by a NUL byte."""
    ids = sorted(lay.key(row) for row in rows)
    return hashlib.sha256("\0".join([table, *ids]).encode()).hexdigest()


# The batch's keys as one JSON array, bound as bytes: clickhouse-connect splices a
# `$name$` bytes parameter into the query as a heredoc string ($name$...$name$), which
# ClickHouse reads raw (no escapes), and JSONExtract splits in the engine. Measured on
# chDB for 20,000 ids: an array literal of 20,000 strings cost ~75 ms per query (the SQL
# parser handles each element); one escaped JSON string literal ~18 ms, mostly the
# driver's regex scans of the query text; the heredoc bind ~10 ms, as the driver scans
# only the short query template. The primary index still prunes with an IN subquery
# (EXPLAIN: "run_id in N-element set").
_KEY_SET = "(SELECT arrayJoin(JSONExtract({}, 'Array(String)')))"


def _json_keys(values: list[str]) -> bytes:
    """A JSON array of strings that cannot contain a `$`, hence never its heredoc's end tag."""
    return orjson.dumps(values).replace(b"$", b"\\u0024")
