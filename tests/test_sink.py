"""`outcomes sink` against the real Kafka broker and chDB: exactly once, never stalled.

Each test produces Avro output records to its own topics and counts, per key, the
rows that land, reading WITHOUT FINAL so that any physical duplicate would show.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO

import pytest
from confluent_kafka import Producer

from outcomes.common.codec import Codec
from outcomes.common.output_headers import Headers, canonical_json, output_headers
from outcomes.common.settings import Settings
from outcomes.devtools import samples
from outcomes.reducers.catalog import EVENT_TOPICS
from outcomes.reducers.records import OutputRecord
from outcomes.sinks import clickhouse, schema
from outcomes.sinks.consumer import Sink, SinkConfig
from outcomes.sinks.json_insert import TABLE_OF_KIND
from outcomes.sinks.rows import Row, rows_for
from outcomes.sinks.writer import Encoded, WriteReport

pytestmark = [pytest.mark.clickhouse, pytest.mark.slow]
ROOT = Path(__file__).resolve().parent.parent
OUTCOMES = str(Path(sys.executable).parent / "outcomes")


@pytest.fixture
def chdb_dsn(tmp_path: Path) -> Iterator[str]:
    clickhouse.close_all()
    yield f"chdb://{tmp_path}/chdb"
    clickhouse.close_all()


def produce(
    config: dict[str, str],
    topic: str,
    values: list[tuple[str, bytes]],
    headers: list[Headers | None] | None = None,
) -> None:
    producer = Producer({**config, "linger.ms": "20", "enable.idempotence": "true"})
    for index, (key, value) in enumerate(values):
        given = headers[index] if headers is not None else None
        producer.produce(topic, key=key.encode(), value=value, headers=given)
        producer.poll(0)
    assert producer.flush(30) == 0


def expected_counts(records: list[OutputRecord]) -> dict[str, int]:
    """Distinct identities per physical table (row id; in output_rows with its table)."""
    ids: dict[str, set[str]] = {}
    for record in records:
        for table, row in rows_for(record):
            names = schema.TABLES_BY_NAME[table].column_names
            key = str(row[names.index("row_id")])
            if "record_table" in names:
                key = f"{row[names.index('record_table')]}/{key}"
            ids.setdefault(table, set()).add(key)
    return {t: len(v) for t, v in ids.items()}


def physical(conn: clickhouse.Connection, table: str) -> tuple[int, int]:
    """(rows, distinct identities) of a physical table, WITHOUT FINAL."""
    names = schema.TABLES_BY_NAME[table].column_names
    key = "concat(record_table, '/', row_id)" if "record_table" in names else "row_id"
    row = conn.rows(f"SELECT count(), uniqExact({key}) FROM {conn.table(table)}")[0]
    return int(row[0]), int(row[1])


def assert_exactly_once(dsn: str, records: list[OutputRecord], extra_dead: int = 0) -> None:
    conn = clickhouse.connect(dsn)
    want = expected_counts(records)
    want["dead_letters"] = want.get("dead_letters", 0) + extra_dead
    for table in schema.DATA_TABLES:
        rows, distinct = physical(conn, table.name)
        assert rows == distinct == want.get(table.name, 0), (table.name, rows, distinct)


def test_sink_lands_everything_once_and_dead_letters_garbage(
    kafka_settings: Settings,
    kafka_config: dict[str, str],
    kafka_topic: Callable[..., str],
    chdb_dsn: str,
) -> None:
    codec = Codec(kafka_settings)
    records = samples.sample_records()
    topic = kafka_topic("out", partitions=3)
    encoded = [(r.key, codec.encode_output(r)) for r in records]
    an_input_event = codec.encode_event(
        {
            "event_id": "e-1",
            "run_id": "run-x",
            "type": "run.started",
            "occurred_at": "2026-11-30T10:00:00.000000Z",
            "source": "t",
            "agent": "a",
            "requested_by": "u",
        }
    )
    assert "run.started" in EVENT_TOPICS
    # Every record twice (a redelivering producer), plus two records that cannot land.
    produce(
        kafka_config,
        topic,
        encoded + encoded + [("junk", b"\x00garbage"), ("run-x", an_input_event)],
    )

    settings = Settings.load(bootstrap=kafka_settings.bootstrap, clickhouse=chdb_dsn)
    group = f"test-sink-{uuid.uuid4().hex[:8]}"
    config = SinkConfig(group_id=group, topics=(topic,), until_idle=4.0, batch_seconds=0.3)
    stats = Sink(settings, config).run()
    assert stats.consumed == 2 * len(records) + 2
    assert stats.dead_letters == 2
    assert_exactly_once(chdb_dsn, records, extra_dead=2)
    conn = clickhouse.connect(chdb_dsn)
    letters = conn.rows(
        f"SELECT reason, origin_topic FROM {conn.table('dead_letters')} "
        "WHERE recorded_by = 'sink' ORDER BY reason"
    )
    assert [r[1] for r in letters] == [topic, topic]
    assert {r[0] for r in letters} <= {"undecodable", "unknown_schema", "schema_violation"}

    # Offsets were committed: the same group finds nothing new.
    again = Sink(settings, config).run()
    assert again.consumed == 0


def test_records_with_headers_land_once_beside_records_without(
    kafka_settings: Settings,
    kafka_config: dict[str, str],
    kafka_topic: Callable[..., str],
    chdb_dsn: str,
) -> None:
    """A worker's outputs with their headers (common/output_headers.py) and an older
    worker's without, each delivered twice, land once; the account column holds the
    headers' canonical JSON; a record whose headers name no output kind is decoded."""
    codec = Codec(kafka_settings)
    records = samples.sample_records()
    topic = kafka_topic("out", partitions=3)
    values = [(r.key, codec.encode_output(r)) for r in records]
    headed: list[Headers | None] = [output_headers(r) for r in records]
    plain: list[Headers | None] = [None] * len(records)
    # Every other record with headers; the first with a kind no sink knows.
    mixed = [h if i % 2 else None for i, h in enumerate(headed)]
    odd: Headers = [("outcomes-kind", b"no_such_kind"), *output_headers(records[0])[1:]]
    mixed[0] = odd
    produce(kafka_config, topic, values + values, headed + plain)
    produce(kafka_config, topic, values, mixed)

    settings = Settings.load(bootstrap=kafka_settings.bootstrap, clickhouse=chdb_dsn)
    config = SinkConfig(
        group_id=f"test-sink-{uuid.uuid4().hex[:8]}",
        topics=(topic,),
        until_idle=4.0,
        batch_seconds=0.3,
        query_port=None,
    )
    stats = Sink(settings, config).run()
    assert stats.consumed == 3 * len(records)
    assert stats.dead_letters == 0
    assert_exactly_once(chdb_dsn, records)
    conn = clickhouse.connect(chdb_dsn)
    stored = dict(conn.rows(f"SELECT row_id, account FROM {conn.table('account_revision_rows')}"))
    accounts = [r for r in records if r.kind == "account_revision"]
    assert accounts and all(stored[r.id].encode() == canonical_json(r) for r in accounts)


def _start_sink(dsn: str, bootstrap: str, topic: str, group: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            OUTCOMES,
            "sink",
            "--bootstrap",
            bootstrap,
            "--clickhouse",
            dsn,
            "--topic",
            topic,
            "--group-id",
            group,
            "--batch-rows",
            "150",
            "--batch-seconds",
            "0.2",
            "--until-idle",
            "5",
        ],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_commit(stream: IO[str] | None, timeout: float = 60.0) -> None:
    assert stream is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            break
        if "offsets committed" in line:
            return
    pytest.fail("the sink committed nothing")


def summary(err: str) -> dict[str, int]:
    """The counts of the sink's final summary line."""
    match = re.search(
        r"sink: (\d+) records consumed, (\d+) rows inserted, (\d+) already present", err
    )
    assert match, err
    consumed, inserted, present = (int(g) for g in match.groups())
    return {"consumed": consumed, "inserted": inserted, "present": present}


def test_sink_killed_mid_batch_restarts_and_a_second_group_replays_without_duplicates(
    kafka_settings: Settings,
    kafka_config: dict[str, str],
    kafka_topic: Callable[..., str],
    chdb_dsn: str,
) -> None:
    codec = Codec(kafka_settings)
    # Enough that the sink, which writes on a thread while it consumes, is still busy
    # just after its first commit.
    records = samples.many_accounts(12_000)
    topic = kafka_topic("out", partitions=3)
    produce(kafka_config, topic, [(r.key, codec.encode_output(r)) for r in records])
    group = f"test-sink-{uuid.uuid4().hex[:8]}"
    clickhouse.close_all()  # the sink processes own the chDB path

    first = _start_sink(chdb_dsn, kafka_settings.bootstrap, topic, group)
    _wait_for_commit(first.stderr)
    time.sleep(0.05)
    os.kill(first.pid, signal.SIGKILL)
    first.wait(timeout=30)
    assert first.returncode == -signal.SIGKILL
    conn = clickhouse.connect(chdb_dsn)
    stored = physical(conn, "account_revision_rows")[0]
    assert 0 < stored < len(records), "the kill should land mid-stream"
    clickhouse.close_all()

    # The restart waits for the killed member's session to expire, then resumes at the
    # committed offsets: what the killed sink stored past them is found, not re-added.
    restarted = _start_sink(chdb_dsn, kafka_settings.bootstrap, topic, group)
    _, err = restarted.communicate(timeout=180)
    assert restarted.returncode == 0, err
    after_restart = summary(err)
    assert after_restart["consumed"] > 0
    assert_exactly_once(chdb_dsn, records)
    clickhouse.close_all()

    other_group = _start_sink(chdb_dsn, kafka_settings.bootstrap, topic, group + "-replay")
    _, err = other_group.communicate(timeout=180)
    assert other_group.returncode == 0, err
    replay = summary(err)
    assert replay["consumed"] == len(records)
    # Every row of every record is found stored (one per account revision since its
    # predicates are columns of it, migration 13).
    rows = sum(expected_counts(records).values())
    assert replay["inserted"] == 0 and replay["present"] == rows == len(records)
    assert_exactly_once(chdb_dsn, records)


def test_sigterm_finishes_the_batch_commits_and_exits_cleanly(
    kafka_settings: Settings,
    kafka_config: dict[str, str],
    kafka_topic: Callable[..., str],
    chdb_dsn: str,
) -> None:
    codec = Codec(kafka_settings)
    records = samples.many_accounts(4000)
    topic = kafka_topic("out", partitions=2)
    produce(kafka_config, topic, [(r.key, codec.encode_output(r)) for r in records])
    group = f"test-sink-{uuid.uuid4().hex[:8]}"
    clickhouse.close_all()

    sink = _start_sink(chdb_dsn, kafka_settings.bootstrap, topic, group)
    _wait_for_commit(sink.stderr)
    sink.send_signal(signal.SIGTERM)
    _, err = sink.communicate(timeout=60)
    assert sink.returncode == 0, err
    assert "finishing the current batch" in err
    first = summary(err)
    # Everything consumed before SIGTERM was stored: no batch was abandoned.
    conn = clickhouse.connect(chdb_dsn)
    assert physical(conn, "account_revision_rows")[0] == first["consumed"] < len(records)
    clickhouse.close_all()

    # ... and committed: the same group resumes exactly after it.
    rest = _start_sink(chdb_dsn, kafka_settings.bootstrap, topic, group)
    _, err = rest.communicate(timeout=180)
    assert rest.returncode == 0, err
    assert summary(err)["consumed"] == len(records) - first["consumed"]
    assert summary(err)["present"] == 0
    assert_exactly_once(chdb_dsn, records)


class _SlowWriter:
    """Stands in for ClickHouseWriter (two sinks in one process cannot share a chDB
    path): keeps every row id it is given, per table, and takes `delay` per write, so
    that writes are under way when the group rebalances."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.ids: dict[str, list[str]] = {}

    def write_rows(
        self,
        rows: Mapping[str, Sequence[Row]],
        encoded: Mapping[str, Sequence[Encoded]] | None = None,
    ) -> WriteReport:
        time.sleep(self.delay)
        report = WriteReport()
        for table, batch in rows.items():
            at = schema.TABLES_BY_NAME[table].column_names.index("row_id")
            self.ids.setdefault(table, []).extend(str(row[at]) for row in batch)
            report.inserted[table] = len(batch)
        for kind, records in (encoded or {}).items():
            table = TABLE_OF_KIND[kind]
            self.ids.setdefault(table, []).extend(r.id for r in records)
            report.inserted[table] = report.inserted.get(table, 0) + len(records)
        return report


def test_a_second_sink_joining_mid_stream_takes_over_with_nothing_lost_or_written_twice(
    kafka_settings: Settings,
    kafka_config: dict[str, str],
    kafka_topic: Callable[..., str],
) -> None:
    """The writer thread's write under way when partitions are revoked lands and is
    committed before they move, so the new owner starts after it: every record is
    written once, by one of the two sinks."""
    codec = Codec(kafka_settings)
    records = samples.many_accounts(6000)
    values = [(r.key, codec.encode_output(r)) for r in records]
    topic = kafka_topic("out", partitions=6)
    config = SinkConfig(
        group_id=f"test-sink-{uuid.uuid4().hex[:8]}",
        batch_records=200,
        batch_seconds=0.1,
        until_idle=6.0,
        topics=(topic,),
    )
    writers = [_SlowWriter(1.0), _SlowWriter(1.0)]
    sinks = [Sink(kafka_settings, config, writer=w, codec=Codec(kafka_settings)) for w in writers]
    errors: list[BaseException] = []

    def run(sink: Sink) -> None:
        try:
            sink.run()
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(s,), daemon=True) for s in sinks]
    produce(kafka_config, topic, values[:1000])
    threads[0].start()
    deadline = time.monotonic() + 60
    while not writers[0].ids and time.monotonic() < deadline:
        time.sleep(0.05)
    assert writers[0].ids, "the first sink wrote nothing"
    threads[1].start()  # joins while the first is writing: a rebalance mid-stream
    for start in range(1000, len(values), 500):  # paced, so records keep coming after it
        produce(kafka_config, topic, values[start : start + 500])
        time.sleep(0.5)
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads)

    first, second = (set(w.ids.get("account_revision_rows", ())) for w in writers)
    assert second, "the second sink was given no partition"
    assert sum(len(w.ids.get("account_revision_rows", ())) for w in writers) == len(records)
    assert len(first | second) == len(records)
    assert not first & second
