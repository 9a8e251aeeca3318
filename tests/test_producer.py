"""Producer SDK: typed methods match the schemas, ids, bounded failures, real delivery."""

from __future__ import annotations

import inspect
import time
import typing
import uuid
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from confluent_kafka import Consumer, KafkaError

from outcomes import schemas
from outcomes.common.codec import Codec
from outcomes.common.errors import CodecError, DeliveryError, ProducerBackpressure, ProducerClosed
from outcomes.reducers.catalog import EVENT_TOPICS, EVENT_TYPES
from outcomes.streams.sdk import producer as sdk
from outcomes.streams.sdk.producer import DeliveryReport, OutcomesProducer
from outcomes.streams.sdk.uuid7 import uuid7

DEFS = schemas.current_definitions()
ENVELOPE = {"event_id", "run_id", "type", "occurred_at", "source"}
CALL_OPTIONS = {"event_id", "occurred_at", "source", "on_delivery"}
UNREACHABLE = "127.0.0.1:1"


def method_name(event_type: str) -> str:
    return event_type.replace(".", "_")


# -- the typed API mirrors the schemas ------------------------------------------------------


@pytest.mark.parametrize("event_type", EVENT_TYPES)
def test_one_method_per_event_type_with_the_schema_fields(event_type: str) -> None:
    method = getattr(OutcomesProducer, method_name(event_type))
    params = inspect.signature(method).parameters
    assert all(p.kind is p.KEYWORD_ONLY for n, p in params.items() if n != "self")
    fields = {f["name"] for f in DEFS[schemas.EVENT_SCHEMAS[event_type]]["fields"]}
    assert set(params) - {"self"} - CALL_OPTIONS == fields - ENVELOPE | {"run_id"}


def _enum_symbols(name: str) -> list[str]:
    return list(DEFS[f"{schemas.NAMESPACE}.{name}"]["symbols"])


@pytest.mark.parametrize(
    ("literal", "enum"),
    [
        (sdk.AuthoredBy, "AuthoredBy"),
        (sdk.CheckScope, "CheckScope"),
        (sdk.ToolOutcome, "ToolOutcome"),
        (sdk.TransitionState, "TransitionState"),
        (sdk.ReceiptOrigin, "ReceiptOrigin"),
        (sdk.ReceiptObservation, "ReceiptObservation"),
        (sdk.CheckResult, "CheckResult"),
        (sdk.ArtifactChange, "ArtifactChange"),
        (sdk.Completion, "Completion"),
        (sdk.ReviewState, "ReviewState"),
        (sdk.CandidateDecision, "CandidateDecision"),
    ],
)
def test_literal_types_equal_the_schema_enums(literal: object, enum: str) -> None:
    assert list(typing.get_args(literal)) == _enum_symbols(enum)


@pytest.mark.parametrize(
    ("typed", "record"),
    [
        (sdk.RequiredCheck, "RequiredCheck"),
        (sdk.Artifact, "Artifact"),
        (sdk.Candidate, "Candidate"),
    ],
)
def test_typed_dicts_equal_the_schema_records(typed: type, record: str) -> None:
    fields = DEFS[f"{schemas.NAMESPACE}.{record}"]["fields"]
    assert set(typing.get_type_hints(typed)) == {f["name"] for f in fields}
    optional = {f["name"] for f in fields if isinstance(f["type"], list)}
    assert typed.__optional_keys__ == optional  # type: ignore[attr-defined]


def test_uuid7_is_versioned_time_ordered_and_unique() -> None:
    before = time.time_ns() // 1_000_000
    ids = [uuid7() for _ in range(5000)]
    after = time.time_ns() // 1_000_000
    assert all(u.version == 7 and u.variant == uuid.RFC_4122 for u in ids)
    assert ids == sorted(ids, key=lambda u: u.int) and len(set(ids)) == len(ids)
    assert before <= ids[0].int >> 80 <= ids[-1].int >> 80 <= after + 1


# -- bounded failure without a broker ---------------------------------------------------------


def test_unreachable_broker_fails_flush_within_the_message_timeout() -> None:
    reports: list[DeliveryReport] = []
    started = time.monotonic()
    producer = OutcomesProducer(
        source="test", bootstrap=UNREACHABLE, message_timeout_ms=1500, on_delivery=reports.append
    )
    first = producer.run_started(run_id="r-1", agent="a", requested_by="u")
    second = producer.run_cancelled(run_id="r-1", reason=None)
    with pytest.raises(DeliveryError) as err:
        producer.close()
    elapsed = time.monotonic() - started
    assert elapsed < 8.0, elapsed
    assert set(err.value.event_ids) == {first, second}
    assert "timed out" in str(err.value)
    assert {r.event_id for r in reports} == {first, second}
    assert all(not r.ok and r.offset is None for r in reports)
    with pytest.raises(ProducerClosed):
        producer.run_started(run_id="r-1", agent="a", requested_by="u")


def test_full_buffer_raises_backpressure_after_a_bounded_wait() -> None:
    producer = OutcomesProducer(
        source="test",
        bootstrap=UNREACHABLE,
        buffer_max_messages=3,
        message_timeout_ms=60_000,
        backpressure_timeout=0.5,
    )
    for _ in range(3):
        producer.inference_started(run_id="r-2", model_call_id="m")
    started = time.monotonic()
    with pytest.raises(ProducerBackpressure, match="not queued"):
        producer.inference_started(run_id="r-2", model_call_id="m")
    assert 0.4 <= time.monotonic() - started < 3.0
    with pytest.raises(DeliveryError) as err:
        producer.flush(timeout=0.2)
    assert len(err.value.failures) == 3 and "still pending" in str(err.value)
    started = time.monotonic()
    with pytest.raises(DeliveryError) as err:
        producer.close(timeout=0.2)  # bounded shutdown: the queue is dropped and listed
    assert len(err.value.failures) == 3 and time.monotonic() - started < 3.0


def test_invalid_arguments_fail_at_the_call() -> None:
    with OutcomesProducer(source="test", bootstrap=UNREACHABLE) as producer:
        with pytest.raises(CodecError, match="outcome"):
            producer.tool_finished(run_id="r", action_id="a", tool="t", outcome="great")  # type: ignore[arg-type]
        with pytest.raises(CodecError, match="occurred_at"):
            producer.run_started(
                run_id="r", agent="a", requested_by="u", occurred_at=datetime(2026, 1, 1)
            )
    with pytest.raises(ValueError, match="source"):
        OutcomesProducer(source="", bootstrap=UNREACHABLE)


def test_context_manager_keeps_the_body_error_and_notes_undelivered_events() -> None:
    with (
        pytest.raises(RuntimeError, match="agent step failed") as err,
        OutcomesProducer(source="test", bootstrap=UNREACHABLE, message_timeout_ms=1000) as producer,
    ):
        producer.review_recorded(run_id="r-3", state="fail")
        raise RuntimeError("agent step failed")
    assert any("not delivered" in note for note in err.value.__notes__)


# -- against the real broker ---------------------------------------------------------------


def consume(
    bootstrap: str, topics: list[str], run_id: str, expected: int, timeout: float = 30.0
) -> list[bytes]:
    """Values of records keyed by `run_id` on `topics`, from the start, until `expected`."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"test-sdk-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe(topics)
    found: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while len(found) < expected and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            error = msg.error()
            if error is not None:
                assert error.code() == KafkaError._PARTITION_EOF, error
                continue
            value = msg.value()
            if msg.key() == run_id.encode() and value is not None:
                found.append(value)
    finally:
        consumer.close()
    return found


def test_events_reach_their_topics_keyed_by_run_id(
    kafka_bootstrap: str, kafka_topic: Callable[..., str]
) -> None:
    topics = {
        t: kafka_topic(t.split(".")[1], partitions=3) for t in dict.fromkeys(EVENT_TOPICS.values())
    }
    override = {event_type: topics[topic] for event_type, topic in EVENT_TOPICS.items()}
    run_id = f"run-{uuid.uuid4().hex}"
    at = datetime(2026, 11, 30, 10, 0, 0, 123456, tzinfo=UTC)
    reports: list[DeliveryReport] = []
    with OutcomesProducer(
        source="worker-7", bootstrap=kafka_bootstrap, topics=override, on_delivery=reports.append
    ) as producer:
        goal = producer.goal_revised(
            run_id=run_id,
            goal_revision=1,
            authored_by="user",
            deliverables=["report.md"],
            required_checks=[{"label": "unit", "scope": "suite"}],
            occurred_at=at,
        )
        snap = producer.workspace_snapshot(
            run_id=run_id,
            snapshot_id="s1",
            sealed=True,
            artifacts=[{"path": "report.md", "change": "added", "verification_sensitive": True}],
        )
        final = producer.finalize_requested(run_id=run_id, candidate_snapshot="s1")
    assert {r.event_id for r in reports if r.ok} == {goal, snap, final}  # flushed on close
    values = consume(kafka_bootstrap, list(set(override.values())), run_id, 3)
    decoded = {d.value["event_id"]: d.value for d in map(Codec().decode, values)}
    assert set(decoded) == {goal, snap, final}
    assert decoded[goal]["occurred_at"] == "2026-11-30T10:00:00.123456Z"
    assert decoded[goal]["source"] == "worker-7"
    assert decoded[goal]["required_checks"] == [{"label": "unit", "scope": "suite"}]
    assert decoded[snap]["artifacts"][0]["digest"] is None
    assert decoded[final]["type"] == "finalize.requested"


def test_flush_reports_delivery_and_republishing_keeps_the_event_id(
    kafka_bootstrap: str, kafka_topic: Callable[..., str]
) -> None:
    topic = kafka_topic("tool")
    run_id = f"run-{uuid.uuid4().hex}"
    reports: list[DeliveryReport] = []
    producer = OutcomesProducer(
        source="w", bootstrap=kafka_bootstrap, topics={"tool.started": topic}
    )
    event_id = producer.tool_started(
        run_id=run_id, action_id="a1", tool="pytest", on_delivery=reports.append
    )
    producer.tool_started(run_id=run_id, action_id="a1", tool="pytest", event_id=event_id)
    producer.flush()
    assert len(reports) == 1 and reports[0].ok and reports[0].topic == topic
    producer.close()
    producer.close()  # idempotent
    values = consume(kafka_bootstrap, [topic], run_id, 2)
    assert [Codec().decode_event_fast(v)["event_id"] for v in values] == [event_id, event_id]
