"""`outcomes produce`: JSONL and Avro files to their topics; bad lines reported, not fatal."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner
from confluent_kafka import Consumer, KafkaError, TopicPartition

from outcomes.cli.produce import produce
from outcomes.common.codec import Codec, write_container
from outcomes.reducers.catalog import EVENT_TOPICS, INPUT_TOPICS
from outcomes.streams.topics import ensure_topics
from tests.codec_support import sample_event


def _ends(conf: dict[str, str], topics: list[str]) -> list[TopicPartition]:
    """The current end offset of every partition of `topics`."""
    consumer = Consumer({**conf, "group.id": f"ends-{uuid.uuid4().hex}"})
    try:
        positions = []
        metadata = consumer.list_topics(timeout=10)
        for topic in topics:
            for partition in metadata.topics[topic].partitions:
                _, high = consumer.get_watermark_offsets(
                    TopicPartition(topic, partition), timeout=10
                )
                positions.append(TopicPartition(topic, partition, high))
        return positions
    finally:
        consumer.close()


def _read_run(
    conf: dict[str, str], start: list[TopicPartition], run_id: str, expected: int
) -> list[tuple[str, dict[str, Any]]]:
    """(topic, canonical event) of records keyed by `run_id` written after `start`."""
    consumer = Consumer(
        {**conf, "group.id": f"produce-cli-{uuid.uuid4().hex}", "enable.auto.commit": False}
    )
    consumer.assign(start)
    codec = Codec()
    found: list[tuple[str, dict[str, Any]]] = []
    deadline = time.monotonic() + 30
    try:
        while len(found) < expected and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            error = msg.error()
            if error is not None:
                assert error.code() == KafkaError._PARTITION_EOF, error
                continue
            topic, value = msg.topic(), msg.value()
            if msg.key() == run_id.encode() and topic is not None and value is not None:
                found.append((topic, codec.decode(value).value))
    finally:
        consumer.close()
    return found


def _jsonl(path: Path, lines: list[Any]) -> Path:
    path.write_bytes(
        b"\n".join(line if isinstance(line, bytes) else orjson.dumps(line) for line in lines)
    )
    return path


def test_produce_publishes_valid_events_and_reports_bad_lines(
    tmp_path: Path, kafka_bootstrap: str, kafka_config: dict[str, str]
) -> None:
    ensure_topics(kafka_config)
    run_id = f"run-{uuid.uuid4().hex}"
    goal = sample_event("goal.revised", run_id=run_id, event_id=f"{run_id}-1")
    tool = sample_event("tool.finished", run_id=run_id, event_id=f"{run_id}-2")
    bad_enum = sample_event("tool.finished", run_id=run_id, outcome="great")
    jsonl = _jsonl(tmp_path / "events.jsonl", [goal, b"{not json", b"", bad_enum, tool])
    snapshot = sample_event("workspace.snapshot", run_id=run_id, event_id=f"{run_id}-3")
    final = sample_event("finalize.requested", run_id=run_id, event_id=f"{run_id}-4")
    avro_file = tmp_path / "more.avro"
    write_container(avro_file, [snapshot, final])
    start = _ends(kafka_config, list(INPUT_TOPICS))

    result = CliRunner().invoke(
        produce, [str(jsonl), str(avro_file), "--bootstrap", kafka_bootstrap]
    )

    assert result.exit_code == 1, result.output
    assert f"{jsonl}:2: undecodable: not JSON" in result.stderr
    assert f"{jsonl}:4: schema_violation: tool.finished: outcome: expected one of" in result.stderr
    assert f"{jsonl}:3" not in result.stderr  # blank lines are skipped
    assert "produced 4 event(s) from 2 file(s)" in result.stderr
    assert "2 invalid, 0 not delivered" in result.stderr
    arrived = dict((e["event_id"], (t, e)) for t, e in _read_run(kafka_config, start, run_id, 4))
    assert set(arrived) == {
        goal["event_id"],
        tool["event_id"],
        snapshot["event_id"],
        final["event_id"],
    }
    for event in (goal, tool, snapshot, final):
        topic, value = arrived[event["event_id"]]
        assert topic == EVENT_TOPICS[event["type"]]
        assert value == event


def test_produce_all_valid_exits_zero(
    tmp_path: Path, kafka_bootstrap: str, kafka_config: dict[str, str]
) -> None:
    ensure_topics(kafka_config)
    run_id = f"run-{uuid.uuid4().hex}"
    jsonl = _jsonl(tmp_path / "ok.jsonl", [sample_event("run.started", run_id=run_id)])
    result = CliRunner().invoke(produce, [str(jsonl), "--bootstrap", kafka_bootstrap])
    assert result.exit_code == 0, result.stderr
    assert "produced 1 event(s) from 1 file(s)" in result.stderr


def test_unreachable_broker_is_a_bounded_failure(tmp_path: Path) -> None:
    jsonl = _jsonl(
        tmp_path / "ok.jsonl", [sample_event("run.started"), sample_event("run.started")]
    )
    started = time.monotonic()
    result = CliRunner().invoke(
        produce, [str(jsonl), "--bootstrap", "127.0.0.1:1", "--timeout", "1"]
    )
    assert result.exit_code == 1
    assert time.monotonic() - started < 10
    assert "2 event(s) not delivered" in result.stderr
    assert "produced 0 event(s)" in result.stderr and "2 not delivered" in result.stderr


def test_a_jsonl_file_named_avro_is_one_clear_line(tmp_path: Path) -> None:
    """Not fastavro's "read length must be non-negative": the line replay gives too."""
    path = _jsonl(tmp_path / "events.avro", [sample_event("run.started")])
    result = CliRunner().invoke(
        produce, [str(path), "--bootstrap", "127.0.0.1:1", "--timeout", "1"]
    )
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert lines[0] == (
        f"{path}:1: undecodable: {path}: not an Avro container file (it starts with JSON "
        "text, not Obj\\x01); a file named *.avro is read as Avro: name a JSONL file *.jsonl"
    )
    assert "produced 0 event(s) from 1 file(s)" in lines[-1] and "1 invalid" in lines[-1]
    assert "read length" not in result.stderr
