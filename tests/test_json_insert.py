"""The sink's two ways to ClickHouse store the same rows: a record decoded from its Avro
value into Python rows (sinks/rows.py), and the same record handed over as the canonical
JSON its headers carry, made into rows by ClickHouse (sinks/json_insert.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from outcomes.common.codec import Codec
from outcomes.common.output_headers import output_headers, read_output_headers
from outcomes.devtools import samples
from outcomes.devtools.workload import generate_runs
from outcomes.reducers.answers import answer_checked_event
from outcomes.reducers.catalog import OUTPUT_KINDS
from outcomes.reducers.engine import Engine
from outcomes.reducers.records import OutputRecord, dead_letter
from outcomes.reducers.validate import parse_event
from outcomes.sinks import clickhouse, schema
from outcomes.sinks.rows import Row, rows_for
from outcomes.sinks.writer import ClickHouseWriter, Encoded

pytestmark = pytest.mark.clickhouse


@pytest.fixture
def chdb_path(tmp_path: Path) -> Iterator[str]:
    clickhouse.close_all()
    yield f"{tmp_path}/chdb"
    clickhouse.close_all()


def _records() -> list[OutputRecord]:
    """Every output kind, every provenance row type, with awkward text in the JSON: the
    fold's outputs (what a worker publishes) and the hand-made samples whose bodies are
    complete (a sample that leaves out optional fields is no worker's output: its JSON
    lacks the nulls its Avro value decodes to)."""
    engine = Engine()
    codec = Codec()
    out = [
        r for r in samples.sample_records() if codec.decode(codec.encode_output(r)).value == r.body
    ]
    for index, run in enumerate(generate_runs(40, seed=3, padding=1, prefix="json")):
        for event in run:
            out += engine.apply(parse_event(event))
        if index < 2:
            checked = answer_checked_event(
                run_id=run[0]["run_id"],
                answer_chain_id="chain-$json_0$",
                attempt=index + 1,
                decision="pass",
                text="All done.",
                counts={"supported": 2},
                account_revision=1,
                occurred_at=1_790_000_000_123_456,
                source="test",
            )
            out += engine.apply(parse_event(checked))
    out.append(
        dead_letter(
            reason="undecodable",
            message='quote " backslash \\ dollar $json_0$ and \u00e9\u4e2d \U0001f600',
            raw=b"\x00\xff$json_0$\n{}",
            origin_topic="outcomes.events.v1",
            origin_partition=2,
            origin_offset=7,
            run_id="run-\u00e9",
        )
    )
    return out


def _encoded(records: list[OutputRecord]) -> dict[str, list[Encoded]]:
    """What the sink buffers from the headers the worker publishes."""
    out: dict[str, list[Encoded]] = {}
    for record in records:
        read = read_output_headers(output_headers(record))
        assert read is not None
        kind, record_id, body = read
        out.setdefault(kind, []).append(Encoded(record.key, record_id, body))
    return out


def _decoded_rows(records: list[OutputRecord]) -> dict[str, list[Row]]:
    """What the sink makes of the same records decoded from their Avro values."""
    codec = Codec()
    rows: dict[str, list[Row]] = {}
    for record in records:
        value = codec.decode(codec.encode_output(record))
        decoded = OutputRecord(value.kind, record.key, record.id, value.value)
        for table, row in rows_for(decoded):
            rows.setdefault(table, []).append(row)
    return rows


def _stored(conn: clickhouse.Connection) -> dict[str, list[tuple[object, ...]]]:
    out = {}
    for table in schema.DATA_TABLES:
        cols = ", ".join(f"`{c}`" for c in table.column_names)
        out[table.name] = sorted(
            conn.rows(f"SELECT {cols} FROM {conn.table(table.name)}"), key=repr
        )
    return out


def test_json_and_decoded_records_store_identical_rows(chdb_path: str) -> None:
    records = _records()
    kinds = {r.kind for r in records}
    rows_by_type = {r.body["row_type"] for r in records if r.kind == "provenance_row"}
    assert kinds == set(OUTPUT_KINDS), kinds
    assert rows_by_type == {"retrieval_candidate", "context_injection", "finding"}

    decoded = ClickHouseWriter(f"chdb://{chdb_path}?database=decoded")
    report_rows = decoded.write_rows(_decoded_rows(records))
    via_json = ClickHouseWriter(f"chdb://{chdb_path}?database=json")
    report_json = via_json.write_rows({}, _encoded(records))
    assert report_json.inserted == report_rows.inserted
    assert sum(report_json.inserted.values()) == len(records)

    want, got = _stored(decoded.conn), _stored(via_json.conn)
    for table in want:
        names = schema.TABLES_BY_NAME[table].column_names
        for mine, theirs in zip(got[table], want[table], strict=True):
            differ = [(n, a, b) for n, a, b in zip(names, mine, theirs, strict=True) if a != b]
            assert not differ, (table, differ)
    # The account column is the worker's canonical JSON, byte for byte.
    accounts = dict(via_json.conn.rows("SELECT row_id, account FROM json.account_revision_rows"))
    for record in records:
        if record.kind == "account_revision":
            assert accounts[record.id].encode() == output_headers(record)[2][1]


def test_json_records_are_written_once_and_purged_runs_never(chdb_path: str) -> None:
    records = _records()
    encoded = _encoded(records)
    writer = ClickHouseWriter(f"chdb://{chdb_path}")
    first = writer.write_rows({}, encoded)
    again = writer.write_rows({}, encoded)
    assert again.rows_inserted == 0
    assert sum(again.already_present.values()) == first.rows_inserted == len(records)
    # A half-landed batch (a crash between tables) is completed, not doubled.
    half = {k: v[: len(v) // 2] for k, v in encoded.items()}
    fresh = ClickHouseWriter.on(clickhouse.connect(f"chdb://{chdb_path}?database=half"))
    schema.ensure_schema(fresh.conn)
    fresh.write_rows({}, half)
    rest = fresh.write_rows({}, encoded)
    assert rest.rows_inserted == len(records) - sum(len(v) for v in half.values())
    for table in schema.DATA_TABLES:
        key = (
            "concat(record_table, '/', row_id)"
            if "record_table" in table.column_names
            else "row_id"
        )
        n, distinct = fresh.conn.rows(
            f"SELECT count(), uniqExact({key}) FROM {fresh.conn.table(table.name)}"
        )[0]
        assert n == distinct, table.name

    # A purged run's records are dropped, counted as purged.
    purged = ClickHouseWriter.on(clickhouse.connect(f"chdb://{chdb_path}?database=purged"))
    schema.ensure_schema(purged.conn)
    victim = records[0].key
    purged.conn.command(
        f"INSERT INTO {purged.conn.table('purge_log')} (run_id) VALUES ('{victim}')"
    )
    report = purged.write_rows({}, encoded)
    mine = sum(1 for r in records if r.key == victim)
    assert mine and sum(report.purged.values()) == mine
    revisions = purged.conn.table("account_revision_rows")
    assert purged.conn.rows(f"SELECT count() FROM {revisions} WHERE run_id = '{victim}'") == [(0,)]


def test_a_record_given_both_ways_in_one_write_lands_once(chdb_path: str) -> None:
    """The same records as rows and as JSON in one write (delivered once with headers and
    once without, in one flush) store one row each."""
    records = _records()
    writer = ClickHouseWriter(f"chdb://{chdb_path}")
    report = writer.write_rows(_decoded_rows(records), _encoded(records))
    assert report.rows_inserted == len(records)
    for table in schema.DATA_TABLES:
        key = "row_id"
        if "record_table" in table.column_names:
            key = "concat(record_table, '/', row_id)"
        n, distinct = writer.conn.rows(
            f"SELECT count(), uniqExact({key}) FROM {writer.conn.table(table.name)}"
        )[0]
        assert n == distinct, table.name
