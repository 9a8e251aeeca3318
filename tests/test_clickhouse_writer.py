"""ClickHouseWriter on chDB: every record lands once, whatever is retried or replayed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from outcomes.devtools import samples
from outcomes.reducers.records import OutputRecord
from outcomes.sinks import clickhouse, schema
from outcomes.sinks.exceptions import EngineBusy, EngineLocked
from outcomes.sinks.rows import rows_for
from outcomes.sinks.writer import ClickHouseWriter

pytestmark = pytest.mark.clickhouse
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def chdb_dsn(tmp_path: Path) -> Iterator[str]:
    """A fresh chDB directory for this test; the engine is closed afterwards."""
    clickhouse.close_all()
    yield f"chdb://{tmp_path}/chdb"
    clickhouse.close_all()


def expected_counts(records: list[OutputRecord]) -> dict[str, int]:
    """Rows per table the records must produce (distinct identities: the row id, and in
    output_rows the record table too)."""
    ids: dict[str, set[str]] = {}
    for record in records:
        for table, row in rows_for(record):
            ids.setdefault(table, set()).add(identity(table, row))
    return {t: len(v) for t, v in ids.items()}


def identity(table: str, row: tuple[object, ...]) -> str:
    names = schema.TABLES_BY_NAME[table].column_names
    row_id = str(row[names.index("row_id")])
    if "record_table" in names:
        return f"{row[names.index('record_table')]}/{row_id}"
    return row_id


def _identity_sql(table: schema.Table) -> str:
    if "record_table" in table.column_names:
        return "concat(record_table, '/', row_id)"
    return "row_id"


def physical_counts(conn: clickhouse.Connection) -> dict[str, tuple[int, int]]:
    """(rows, distinct identities) per table, read WITHOUT FINAL: physical duplicates show."""
    out = {}
    for table in schema.DATA_TABLES:
        rows = conn.rows(
            f"SELECT count(), uniqExact({_identity_sql(table)}) FROM {conn.table(table.name)}"
        )
        out[table.name] = (int(rows[0][0]), int(rows[0][1]))
    return out


def assert_exactly_once(conn: clickhouse.Connection, records: list[OutputRecord]) -> None:
    want = expected_counts(records)
    got = physical_counts(conn)
    for table, (rows, distinct) in got.items():
        assert rows == distinct == want.get(table, 0), (table, rows, distinct, want.get(table))


def engine_records(runs: int = 21, padding: int = 1) -> list[OutputRecord]:
    """Records the real domain core emits for a seeded workload."""
    from outcomes.devtools.workload import generate_runs
    from outcomes.reducers.engine import Engine
    from outcomes.reducers.validate import parse_event

    engine = Engine()
    out: list[OutputRecord] = []
    for run in generate_runs(runs, seed=3, padding=padding):
        for event in run:
            out += engine.apply(parse_event(event))
    return out


def test_sample_lands_with_headline_columns_and_canonical_account(chdb_dsn: str) -> None:
    records = samples.sample_records()
    writer = ClickHouseWriter(chdb_dsn)
    report = writer.write(records)
    assert report.inserted == {t: n for t, n in expected_counts(records).items()}
    assert_exactly_once(writer.conn, records)
    row = writer.conn.rows(
        f"SELECT run_id, revision, supersedes, status, workflow_status, "
        f"formatDateTime(created_at, '%Y-%m-%dT%H:%i:%S.%fZ'), account "
        f"FROM {writer.conn.table('account_revisions')} WHERE run_id = 'run-a' AND revision = 2"
    )
    run_id, revision, supersedes, status, workflow, created, account = row[0]
    source = next(r for r in records if r.id == "run-a:2")
    assert (run_id, revision, supersedes, status, workflow) == (
        "run-a",
        2,
        1,
        "complete",
        "finalized",
    )
    assert created == source.body["observation_cutoff"]
    assert account == orjson.dumps(source.body, option=orjson.OPT_SORT_KEYS).decode()


def test_redelivered_batch_adds_no_row(chdb_dsn: str) -> None:
    records = samples.sample_records()
    writer = ClickHouseWriter(chdb_dsn)
    writer.write(records)
    again = writer.write(records + records)
    assert again.rows_inserted == 0
    assert_exactly_once(writer.conn, records)


def test_second_writer_replaying_with_other_batches_adds_no_row(chdb_dsn: str) -> None:
    records = engine_records()
    ClickHouseWriter(chdb_dsn, batch_rows=50).write(records)
    replay = ClickHouseWriter(chdb_dsn, batch_rows=7).write(reversed(records))
    assert replay.rows_inserted == 0
    assert_exactly_once(clickhouse.connect(chdb_dsn), records)


def test_batch_cut_short_midway_is_completed_by_the_retry(chdb_dsn: str) -> None:
    records = engine_records()
    writer = ClickHouseWriter(chdb_dsn)
    # A crash after some tables, and after part of a table, were inserted.
    rows: dict[str, list[tuple[object, ...]]] = {}
    for record in records:
        for table, row in rows_for(record):
            rows.setdefault(table, []).append(row)
    partial = {
        "account_revision_rows": rows["account_revision_rows"][::2],
        "output_rows": rows["output_rows"],
    }
    writer.write_rows(partial)
    report = writer.write(records)
    assert report.already_present["output_rows"] == len(rows["output_rows"])
    assert report.already_present["account_revision_rows"] == len(partial["account_revision_rows"])
    assert_exactly_once(writer.conn, records)


def test_engine_records_of_every_kind_map_to_rows(chdb_dsn: str) -> None:
    records = engine_records()
    kinds = {r.kind for r in records}
    assert {"account_revision", "notification", "provenance_row"} <= kinds
    writer = ClickHouseWriter(chdb_dsn)
    writer.write(records)
    assert_exactly_once(writer.conn, records)
    # The current-account view holds the newest revision of every run.
    newest: dict[str, int] = {}
    for r in records:
        if r.kind == "account_revision":
            newest[r.key] = max(newest.get(r.key, 0), r.body["revision"])
    got = writer.conn.rows(f"SELECT run_id, revision FROM {writer.conn.table('current_accounts')}")
    assert dict(got) == newest


def settled_run_records() -> list[OutputRecord]:
    """A run whose two narratives settle again: one judged before any account, one
    whose claim flips twice, with an omission raised, withdrawn and raised again."""
    from tests.builders import Replay, RunBuilder

    b = RunBuilder("run-settle")
    replay = Replay()
    replay.apply(
        b.goal(checks=["unit"]),
        b.narrative("All tests pass.", narrative_id="early"),
        b.snapshot(),
        b.receipt("unit", "fail"),
        b.finalize(),
        b.narrative("Done. I tidied the module.", narrative_id="late"),
        b.receipt("unit", "pass"),
        b.receipt("unit", "fail"),
    )
    return replay.outputs


def test_current_claim_verdicts_holds_one_row_per_claim(chdb_dsn: str) -> None:
    """The view gives every claim exactly one row, its latest settlement, even with
    redelivered batches and copies inserted behind the writer's back."""
    records = settled_run_records()
    verdicts = [r.body for r in records if r.kind == "claim_verdict"]
    latest: dict[str, dict[str, object]] = {}
    for v in verdicts:
        latest[v["claim_id"]] = dict(v)  # settlements come in order
    want = sorted(
        (c, v["settlement"], v["verdict"], v["reason"])
        for c, v in latest.items()
        if not v["withdrawn"]
    )
    assert max(v["settlement"] for v in verdicts) >= 3
    assert any(v["withdrawn"] for v in verdicts)
    assert any(r.kind == "claim_notification" for r in records)

    writer = ClickHouseWriter(chdb_dsn)
    writer.write(records)
    writer.write(records)
    conn = writer.conn
    table = schema.CLAIM_VERDICTS
    extra = [row for r in records for t, row in rows_for(r) if t == table.name]
    conn.insert(table.name, extra, table.column_names)  # a racer: no read-back
    got = conn.rows(
        "SELECT claim_id, settlement, verdict, reason FROM "
        f"{conn.table('current_claim_verdicts')} ORDER BY claim_id"
    )
    assert sorted(got) == want
    assert len({c for c, *_ in got}) == len(got)
    notified = conn.rows(f"SELECT count() FROM {conn.table('claim_notifications')} FINAL")
    assert notified[0][0] == sum(1 for r in records if r.kind == "claim_notification")


def test_racing_duplicates_never_show_through_final_or_views(chdb_dsn: str) -> None:
    """Layer 1: even rows inserted behind the writer's back are deduplicated by identity."""
    records = samples.sample_records()
    writer = ClickHouseWriter(chdb_dsn)
    writer.write(records)
    conn = writer.conn
    table = schema.ACCOUNT_REVISION_ROWS  # the physical table behind account_revisions
    extra = [row for r in records for t, row in rows_for(r) if t == table.name]
    conn.insert(table.name, extra, table.column_names)  # no read-back, no token: a racer
    raw = conn.rows(f"SELECT count() FROM {conn.table(table.name)}")[0][0]
    final = conn.rows(f"SELECT count() FROM {conn.table(table.name)} FINAL")[0][0]
    current = conn.rows(f"SELECT count() FROM {conn.table('current_accounts')}")[0][0]
    history = conn.rows(f"SELECT count() FROM {conn.table('supersession_history')}")[0][0]
    assert raw == 2 * len(extra)
    assert final == history == len(extra)
    assert current == 4
    conn.command(f"OPTIMIZE TABLE {conn.table(table.name)} FINAL")
    assert conn.rows(f"SELECT count() FROM {conn.table(table.name)}")[0][0] == len(extra)


def test_same_insert_token_is_stored_once(chdb_dsn: str) -> None:
    """Layer 3: the dedup window makes a repeated token a no-op on plain (non-replicated) tables."""
    writer = ClickHouseWriter(chdb_dsn)
    conn = writer.conn
    table = schema.OUTPUT_ROWS  # notifications and the other rows that share it
    rows = [row for r in samples.sample_records() for t, row in rows_for(r) if t == table.name]
    for _ in range(3):
        conn.insert(table.name, rows, table.column_names, {"insert_deduplication_token": "t-1"})
    assert conn.rows(f"SELECT count() FROM {conn.table(table.name)}")[0][0] == len(rows)


_KILLED_WRITER = textwrap.dedent(
    """
    import sys
    from outcomes.devtools import samples
    from outcomes.sinks.writer import ClickHouseWriter
    records = [samples.account(f"run-{i:05d}", 1, status="complete", minute=i % 60, padding=20,
               predicates=[samples.predicate(f"check:c{j}", "satisfied", "passing", "e")
                           for j in range(5)])
               for i in range(int(sys.argv[2]))]
    writer = ClickHouseWriter(sys.argv[1], batch_rows=2000)
    writer.write(records[:100])
    print("first batch stored", flush=True)
    writer.write(records[100:])
    print("done", flush=True)
    """
)


def test_writer_killed_mid_batch_then_restarted_stores_each_row_once(
    chdb_dsn: str, tmp_path: Path
) -> None:
    count = 12000
    clickhouse.close_all()  # the child process must own the chDB path
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, chdb_dsn, str(count)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "first batch stored"
    time.sleep(0.5)  # well inside the remaining batches (they take seconds)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    conn = clickhouse.connect(chdb_dsn)
    stored_before = conn.rows(f"SELECT count() FROM {conn.table('predicate_results')}")[0][0]
    assert 0 < stored_before < count * 5, "kill should land mid-write; tune the sleep"
    records = [
        samples.account(
            f"run-{i:05d}",
            1,
            status="complete",
            minute=i % 60,
            padding=20,
            predicates=[
                samples.predicate(f"check:c{j}", "satisfied", "passing", "e") for j in range(5)
            ],
        )
        for i in range(count)
    ]
    ClickHouseWriter(chdb_dsn).write(records)
    assert_exactly_once(conn, records)


_HOLDER = textwrap.dedent(
    """
    import sys, time
    from outcomes.sinks import clickhouse
    clickhouse.connect(sys.argv[1])
    print("held", flush=True)
    time.sleep(30)
    """
)


def test_chdb_path_held_by_another_process_is_a_clear_error(chdb_dsn: str) -> None:
    clickhouse.close_all()
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, chdb_dsn], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(EngineLocked, match=f"PID: {holder.pid}"):
            clickhouse.connect(chdb_dsn)
    finally:
        holder.kill()
        holder.wait()


def test_second_chdb_path_in_one_process_is_refused(chdb_dsn: str, tmp_path: Path) -> None:
    clickhouse.connect(chdb_dsn)
    with pytest.raises(EngineBusy):
        clickhouse.connect(f"chdb://{tmp_path}/other")
    clickhouse.close_all()
    assert clickhouse.connect(f"chdb://{tmp_path}/other").rows("SELECT 1") == [(1,)]


def test_ids_with_quotes_backslashes_and_unicode_deduplicate(chdb_dsn: str) -> None:
    odd = [
        "run-'quoted'",
        "run-back\\slash",
        "run-ünï-🚀",
        "run-%(x)s-{y:String}",
        'run-"json"-\\u0041-$h$',
        "run-$row_ids$-$run_ids$-$$",
        "run-tab\there-new\nline",
    ]
    records = [samples.account(run, 1, status="complete", minute=1) for run in odd]
    writer = ClickHouseWriter(chdb_dsn)
    assert writer.write(records).inserted["account_revision_rows"] == len(odd)
    assert writer.write(records).rows_inserted == 0
    assert_exactly_once(writer.conn, records)
    stored = writer.conn.rows(f"SELECT run_id FROM {writer.conn.table('account_revisions')}")
    assert sorted(r[0] for r in stored) == sorted(odd)


def test_async_inserts_keep_exactly_once(chdb_dsn: str) -> None:
    """`--async-insert`: each INSERT is acknowledged only once flushed (wait = 1), so the
    next read-back sees it, and its token still deduplicates a repeated insert."""
    records = samples.sample_records()
    writer = ClickHouseWriter(chdb_dsn, async_insert=True)
    assert writer.insert_settings == {"async_insert": 1, "wait_for_async_insert": 1}
    first = writer.write(records)
    assert first.rows_inserted > 0
    again = writer.write(records)
    assert again.rows_inserted == 0
    assert_exactly_once(writer.conn, records)
    rows = [row for r in records for t, row in rows_for(r) if t == "output_rows"]
    for _ in range(2):  # racing writers: the same rows and token, past the read-back
        writer._insert("output_rows", rows)
    assert_exactly_once(writer.conn, records)


def test_transient_failures_are_retried_then_raised() -> None:
    """write_rows retries ClickHouseUnavailable `retries` times (common/retry.py), lets
    any other error through at once, and re-raises once out of attempts."""
    from outcomes.sinks.exceptions import ClickHouseUnavailable
    from outcomes.sinks.writer import WriteReport

    class Flaky(ClickHouseWriter):
        def __init__(self, failures: int, error: Exception) -> None:
            self.retries, self.retry_delay, self.calls = 2, 0.0, 0
            self.failures, self.error = failures, error

        def _write_once(self, rows: object, encoded: object = None) -> WriteReport:
            self.calls += 1
            if self.calls <= self.failures:
                raise self.error
            return WriteReport(inserted={"output_rows": 1})

    down = ClickHouseUnavailable("ClickHouse refused: connection reset")
    flaky = Flaky(2, down)
    assert flaky.write_rows({}).inserted == {"output_rows": 1} and flaky.calls == 3
    gone = Flaky(3, down)
    with pytest.raises(ClickHouseUnavailable):
        gone.write_rows({})
    assert gone.calls == 3
    broken = Flaky(1, ValueError("a bug, not an outage"))
    with pytest.raises(ValueError):
        broken.write_rows({})
    assert broken.calls == 1
