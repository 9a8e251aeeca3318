"""The events recorder (sinks/events.py): a run log on a real broker into chDB's `events`
table, every valid event once, garbage as dead letters, a second reading adding nothing."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from confluent_kafka import Producer

from outcomes.common.codec import Codec
from outcomes.common.settings import Settings
from outcomes.sinks import clickhouse, schema
from outcomes.sinks.events import EventRecorder, EventsConfig
from tests.builders import five_file_events


@pytest.fixture
def chdb_dsn(tmp_path: Path) -> Iterator[str]:
    clickhouse.close_all()
    yield f"chdb://{tmp_path}/chdb"
    clickhouse.close_all()


def _produce(config: dict[str, str], topic: str, values: list[tuple[str, bytes]]) -> None:
    producer = Producer({**config, "linger.ms": "20"})
    for key, value in values:
        producer.produce(topic, key=key.encode(), value=value)
    assert producer.flush(30) == 0


def _record(settings: Settings, dsn: str, topic: str, group: str) -> Any:
    settings = Settings.load(bootstrap=settings.bootstrap, clickhouse=dsn)
    recorder = EventRecorder(
        settings, EventsConfig(group_id=group, topic=topic, batch_records=4, until_idle=3.0)
    )
    return recorder.run()


def test_run_log_events_land_once_with_their_fields_and_garbage_is_a_dead_letter(
    kafka_settings: Settings,
    kafka_config: dict[str, str],
    kafka_topic: Callable[..., str],
    chdb_dsn: str,
) -> None:
    topic = kafka_topic("run-log", partitions=2)
    prefix = uuid.uuid4().hex[:8]
    events = five_file_events(prefix)
    started = next(e for e in events if e["type"] == "run.started")
    started["model"] = "model-x-1"
    started["task"] = "Rename the five files and keep the tests green"
    codec = Codec()
    run_id = started["run_id"]
    values = [(run_id, codec.encode_event(e)) for e in events]
    # Redelivered records (the worker forwards again after a crash) and bad bytes.
    _produce(kafka_config, topic, [*values, *values[:3], (run_id, b"\x00not avro")])

    stats = _record(kafka_settings, chdb_dsn, topic, f"g-{prefix}")
    unique = list({e["event_id"]: e for e in reversed(events)}.values())[::-1]
    assert stats.inserted == len(unique)
    assert stats.already_present + stats.inserted + stats.dead_letters == stats.consumed
    assert stats.dead_letters == 1

    conn = clickhouse.connect(chdb_dsn)
    table = conn.table(schema.EVENTS_TABLE)
    rows = conn.rows(
        f"SELECT event_id, type, source, event, agent, model, task FROM {table} FINAL "
        "ORDER BY occurred_at, log_offset"
    )
    # The sample repeats one event (a redelivery): the first copy is the one kept.
    assert sorted(r[0] for r in rows) == sorted(e["event_id"] for e in unique)
    by_id = {r[0]: r for r in rows}
    first = by_id[started["event_id"]]
    assert first[1] == "run.started"
    assert (first[4], first[5], first[6]) == (started["agent"], "model-x-1", started["task"])
    for event in events:
        stored = orjson.loads(by_id[event["event_id"]][3])
        assert stored["type"] == event["type"] and stored["source"] == event["source"]
    others = [r for r in rows if r[1] != "run.started"]
    assert all(r[4] == r[5] == r[6] == "" for r in others)
    letters = conn.rows(
        f"SELECT reason, message FROM {conn.table('dead_letters')} FINAL "
        "WHERE origin_topic = {t:String}",
        {"t": topic},
    )
    assert len(letters) == 1 and letters[0][1].startswith("events recorder:")

    # Another group reads the whole log again: nothing is stored twice.
    again = _record(kafka_settings, chdb_dsn, topic, f"g2-{prefix}")
    assert again.inserted == 0 and again.already_present > 0
    physical = conn.rows(f"SELECT count() FROM {table}")[0][0]
    assert physical == len(unique)


def test_events_of_a_purged_run_are_never_written_again(chdb_dsn: str) -> None:
    from datetime import UTC, datetime

    from outcomes.sinks.events import EventStore, row_of

    events = five_file_events("purged")
    conn = clickhouse.connect(chdb_dsn)
    schema.ensure_schema(conn)
    conn.insert(
        "purge_log",
        [(uuid.uuid4(), events[0]["run_id"], "finished", datetime.now(UTC), "test", "test",
          "a test", {})],
        ["purge_id", "run_id", "phase", "purged_at", "purged_by", "clickhouse_user", "reason",
         "row_counts"],
    )  # fmt: skip
    store = EventStore(conn)
    assert store.write([row_of(e, 0, n) for n, e in enumerate(events)]) == (0, len(events))
    table = conn.table(schema.EVENTS_TABLE)
    assert conn.rows(f"SELECT count() FROM {table}")[0][0] == 0


def test_outcomes_sink_records_the_run_log_in_the_same_process(
    kafka_settings: Settings,
    kafka_config: dict[str, str],
    kafka_topic: Callable[..., str],
    chdb_dsn: str,
) -> None:
    import subprocess
    import sys

    outputs = kafka_topic("outputs")  # the sink's own input, empty here
    run_log = kafka_topic("run-log")
    events = five_file_events(uuid.uuid4().hex[:8])
    codec = Codec()
    _produce(kafka_config, run_log, [(e["run_id"], codec.encode_event(e)) for e in events])
    argv = [sys.executable, "-m", "outcomes.cli", "sink", "--bootstrap", kafka_settings.bootstrap,
            "--clickhouse", chdb_dsn, "--group-id", f"g-{uuid.uuid4().hex[:8]}",
            "--topic", outputs, "--until-idle", "3", "--no-query-endpoint"]  # fmt: skip
    clickhouse.close_all()  # chDB: one process per directory
    done = subprocess.run(
        [*argv, "--run-log", run_log], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    unique = {e["event_id"] for e in events}
    assert f"events: {len(events)} run-log records consumed, {len(unique)} events inserted" in (
        done.stderr
    )
    conn = clickhouse.connect(chdb_dsn)
    stored = conn.rows(f"SELECT count() FROM {conn.table(schema.EVENTS_TABLE)} FINAL")[0][0]
    assert stored == len(unique)
    clickhouse.close_all()
    # With --topic and no --run-log, or with --no-events, no events are recorded.
    for extra in ([], ["--run-log", run_log, "--no-events"]):
        quiet = subprocess.run([*argv, *extra], capture_output=True, text=True, timeout=120)
        assert quiet.returncode == 0, quiet.stderr
        assert "events:" not in quiet.stderr
