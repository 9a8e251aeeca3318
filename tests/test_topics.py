"""The topic table matches the contract, and `topics ensure` is idempotent and honest."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import ClassVar

import pytest
from click.testing import CliRunner
from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
)

from outcomes.cli.main import main
from outcomes.cli.topics import topics
from outcomes.common.retry import wait_for
from outcomes.reducers.catalog import INPUT_TOPICS, OUTPUT_TOPICS, RUN_LOG_TOPIC
from outcomes.reducers.limits import Limits
from outcomes.streams.topics import (
    TOPICS,
    Drift,
    TopicsError,
    TopicSpec,
    describe_topic_configs,
    end_offsets,
    ensure_topics,
    topic_table,
)

# --------------------------------------------------------------------------- end offsets


class _MovingConsumer:
    """A consumer whose broker answers `failures` errors in turn, then the watermarks."""

    failures: ClassVar[list[int]] = []
    calls: ClassVar[int] = 0

    def __init__(self, conf: dict[str, object]) -> None:
        pass

    def list_topics(self, timeout: float) -> SimpleNamespace:
        topic = SimpleNamespace(partitions={0: None, 1: None}, error=None)
        return SimpleNamespace(topics={"t": topic})

    def get_watermark_offsets(self, partition: TopicPartition, timeout: float) -> tuple[int, int]:
        type(self).calls += 1
        if self.failures:
            raise KafkaException(KafkaError(self.failures.pop(0)))
        return 0, 10 + partition.partition

    def close(self) -> None:
        pass


@pytest.fixture
def moving(monkeypatch: pytest.MonkeyPatch) -> type[_MovingConsumer]:
    import confluent_kafka

    monkeypatch.setattr(confluent_kafka, "Consumer", _MovingConsumer)
    _MovingConsumer.failures, _MovingConsumer.calls = [], 0
    return _MovingConsumer


def test_end_offsets_asks_again_while_leadership_moves(moving: type[_MovingConsumer]) -> None:
    """A restarted cluster broker's partitions answer NOT_LEADER, LEADER_NOT_AVAILABLE,
    or a request times out (_TIMED_OUT: the cluster-kill chaos test met it) or loses its
    connection, until the new leader is known: asked again, not failed."""
    moving.failures = [
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError._TIMED_OUT,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError._TRANSPORT,
        KafkaError._DESTROY_BROKER,  # a killed broker's handle, dropped with the metadata
    ]
    assert end_offsets({}, ["t"]) == {("t", 0): 10, ("t", 1): 11}
    assert moving.calls == 7


def test_end_offsets_gives_up_after_its_patience(moving: type[_MovingConsumer]) -> None:
    moving.failures = [KafkaError._TIMED_OUT] * 1000
    started = time.monotonic()
    with pytest.raises(TopicsError, match=r"reading end offsets failed: .*Timed out"):
        end_offsets({}, ["t"], patience=1.0)
    assert 1.0 <= time.monotonic() - started < 5.0


def test_end_offsets_fails_at_once_on_another_error(moving: type[_MovingConsumer]) -> None:
    moving.failures = [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    with pytest.raises(TopicsError, match="reading end offsets failed"):
        end_offsets({}, ["t"])
    assert moving.calls == 1


# --------------------------------------------------------------------------- the table


def test_table_declares_every_contract_topic_once() -> None:
    names = [spec.name for spec in TOPICS]
    assert len(names) == len(set(names))
    assert set(names) == {*INPUT_TOPICS, *OUTPUT_TOPICS.values(), RUN_LOG_TOPIC}
    roles = {spec.name: spec.role for spec in TOPICS}
    assert all(roles[t] == "input" for t in INPUT_TOPICS)
    assert all(roles[t] == "output" for t in OUTPUT_TOPICS.values())
    assert roles[RUN_LOG_TOPIC] == "internal"


def test_all_topics_are_co_partitioned() -> None:
    """Every topic is keyed by run_id, so all share one partition count."""
    assert len({spec.partitions for spec in TOPICS}) == 1


def test_record_size_limits_follow_the_event_limit() -> None:
    limit = Limits().max_event_bytes
    by_name = {spec.name: spec for spec in TOPICS}
    for name in INPUT_TOPICS:
        assert limit < by_name[name].max_message_bytes <= limit + 128 * 1024
    dead_letter = by_name[OUTPUT_TOPICS["dead_letter"]]
    assert dead_letter.max_message_bytes > by_name[INPUT_TOPICS[0]].max_message_bytes
    assert by_name[RUN_LOG_TOPIC].max_message_bytes >= by_name[INPUT_TOPICS[0]].max_message_bytes
    # A raised limit (OUTCOMES_MAX_EVENT_BYTES) raises the input topics with it.
    bigger = topic_table(Limits(max_event_bytes=4 * 1024 * 1024))
    assert all(s.max_message_bytes > 4 * 1024 * 1024 for s in bigger if s.role == "input")


def test_nothing_keyed_by_run_is_compacted() -> None:
    """Compaction would keep one record per run_id and silently drop the rest."""
    assert all(spec.cleanup_policy == "delete" for spec in TOPICS)


def test_replication_and_min_insync_follow_broker_count() -> None:
    spec = TOPICS[0]
    assert [spec.replication(n) for n in (1, 2, 3, 5)] == [1, 2, 3, 3]
    assert spec.configs(1)["min.insync.replicas"] == "1"
    assert spec.configs(3)["min.insync.replicas"] == "2"


# --------------------------------------------------------------------------- ensure


@pytest.fixture
def scratch_table(
    unique_topic: Callable[[str], str], kafka_config: dict[str, str | int | float | bool]
) -> Iterator[tuple[TopicSpec, ...]]:
    """The real table's shapes under unique names; its topics are deleted afterwards."""
    table = tuple(
        dataclasses.replace(spec, name=unique_topic(spec.name.removeprefix("outcomes.")))
        for spec in TOPICS[:3] + TOPICS[-2:]
    )
    yield table
    admin = AdminClient(kafka_config)
    existing = set(admin.list_topics(timeout=10).topics)
    doomed = [s.name for s in table if s.name in existing]
    if doomed:
        for future in admin.delete_topics(doomed, operation_timeout=30).values():
            future.result()


def test_ensure_creates_then_changes_nothing(
    kafka_config: dict[str, str | int | float | bool], scratch_table: tuple[TopicSpec, ...]
) -> None:
    first = ensure_topics(kafka_config, scratch_table)
    assert first.created == [s.name for s in scratch_table]
    assert first.changed and not first.drift

    admin = AdminClient(kafka_config)
    metadata = admin.list_topics(timeout=10)
    for spec in scratch_table:
        assert len(metadata.topics[spec.name].partitions) == spec.partitions

    second = ensure_topics(kafka_config, scratch_table)
    assert second.created == [] and second.fixed == [] and second.drift == []
    assert second.unchanged == [s.name for s in scratch_table]
    assert not second.changed


def test_ensure_reports_config_drift_and_fixes_it_on_request(
    kafka_config: dict[str, str | int | float | bool], scratch_table: tuple[TopicSpec, ...]
) -> None:
    ensure_topics(kafka_config, scratch_table)
    victim = scratch_table[0]
    admin = AdminClient(kafka_config)
    resource = ConfigResource(
        ConfigResource.Type.TOPIC,
        victim.name,
        incremental_configs=[
            ConfigEntry("retention.ms", "60000", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin.incremental_alter_configs([resource])[resource].result()
    # The broker learns altered configs asynchronously.
    wait_for(
        lambda: (
            describe_topic_configs(admin, [victim.name])[victim.name]["retention.ms"] == "60000"
        ),
        timeout=60,
        what="altered retention.ms never became visible",
        error=AssertionError,
    )

    report = ensure_topics(kafka_config, scratch_table)
    assert report.drift == [Drift(victim.name, "retention.ms", str(victim.retention_ms), "60000")]
    assert victim.name not in report.unchanged

    fixed = ensure_topics(kafka_config, scratch_table, fix_config=True)
    assert fixed.fixed == report.drift and fixed.drift == []
    assert ensure_topics(kafka_config, scratch_table).drift == []


def test_ensure_reports_partition_drift_and_never_repartitions(
    kafka_config: dict[str, str | int | float | bool], scratch_table: tuple[TopicSpec, ...]
) -> None:
    ensure_topics(kafka_config, scratch_table)
    victim = scratch_table[1]
    admin = AdminClient(kafka_config)
    admin.create_partitions([NewPartitions(victim.name, victim.partitions + 2)])[
        victim.name
    ].result()
    # Brokers learn new partitions asynchronously.
    wait_for(
        lambda: (
            len(admin.list_topics(victim.name, timeout=10).topics[victim.name].partitions)
            == victim.partitions + 2
        ),
        timeout=60,
        what="new partitions never became visible",
        error=AssertionError,
    )

    for fix in (False, True):
        report = ensure_topics(kafka_config, scratch_table, fix_config=fix)
        drift = [d for d in report.drift if d.topic == victim.name]
        assert drift == [
            Drift(victim.name, "partitions", str(victim.partitions), str(victim.partitions + 2))
        ]
        assert not drift[0].fixable


def test_input_topic_takes_an_event_at_the_limit_and_refuses_far_larger(
    kafka_config: dict[str, str | int | float | bool], scratch_table: tuple[TopicSpec, ...]
) -> None:
    """A 1 MiB event fits an input topic; 2 MiB is refused by the broker, not the client."""
    ensure_topics(kafka_config, scratch_table)
    topic = scratch_table[0].name
    producer = Producer({**kafka_config, "message.max.bytes": str(8 * 1024 * 1024)})
    errors: list[KafkaError | None] = []

    def send(size: int) -> None:
        producer.produce(
            topic,
            key=b"run-big",
            value=b"x" * size,
            on_delivery=lambda err, _msg: errors.append(err),
        )
        producer.flush(30)

    send(Limits().max_event_bytes)
    assert errors == [None]
    send(2 * 1024 * 1024)
    assert errors[1] is not None
    assert errors[1].code() == KafkaError.MSG_SIZE_TOO_LARGE


def test_cli_ensure_on_the_real_table_is_idempotent(kafka_bootstrap: str) -> None:
    runner = CliRunner()
    runner.invoke(topics, ["ensure", "--bootstrap", kafka_bootstrap])
    result = runner.invoke(topics, ["ensure", "--bootstrap", kafka_bootstrap])
    assert result.exit_code == 0, result.output
    assert "0 created" in result.output and "nothing to do" in result.output
    assert f"{len(TOPICS)} unchanged" in result.output


def test_cli_ensure_without_broker_is_one_clear_error() -> None:
    result = CliRunner().invoke(
        main, ["topics", "ensure", "--bootstrap", "127.0.0.1:1", "--timeout", "2"]
    )
    assert result.exit_code == 1
    assert "outcomes topics ensure: error: no Kafka broker answered at 127.0.0.1:1" in (
        result.output
    )
    assert "Traceback" not in result.output


def test_unknown_topic_is_not_auto_created(
    kafka_config: dict[str, str | int | float | bool], unique_topic: Callable[[str], str]
) -> None:
    """Only `topics ensure` makes topics: a typo fails instead of creating a stray topic."""
    name = unique_topic("typo")
    producer = Producer({**kafka_config, "message.timeout.ms": "3000"})
    errors: list[KafkaError | None] = []
    try:
        producer.produce(name, value=b"x", on_delivery=lambda err, _msg: errors.append(err))
    except KafkaException as exc:  # librdkafka may refuse at once for a known-missing topic
        errors.append(exc.args[0])
    producer.flush(10)
    assert errors and errors[0] is not None
    assert name not in AdminClient(kafka_config).list_topics(timeout=10).topics
