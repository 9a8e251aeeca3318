"""The dev broker is a real Apache Kafka 4 that the project's clients can use.

These tests exercise the broker features the pipeline relies on, through both client
libraries it ships with: confluent-kafka (librdkafka) and aiokafka (faust's transport).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource

from outcomes.common.settings import Settings
from outcomes.streams.topics import aiokafka_options

pytestmark = pytest.mark.kafka


def _consume_all(
    conf: dict[str, str | int | float | bool],
    topic: str,
    expected: int,
    *,
    timeout: float = 30.0,
    isolation: str = "read_uncommitted",
) -> list[Message]:
    """Read `topic` from the beginning until `expected` records arrived (or time ran out)."""
    consumer = Consumer(
        {
            **conf,
            "group.id": f"{topic}.reader.{time.monotonic_ns()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": "false",
            "isolation.level": isolation,
        }
    )
    consumer.subscribe([topic])
    records: list[Message] = []
    deadline = time.monotonic() + timeout
    try:
        while len(records) < expected and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            error = msg.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    continue
                raise AssertionError(f"consumer error: {error}")
            records.append(msg)
    finally:
        consumer.close()
    return records


def test_broker_is_kraft_apache_kafka_4(kafka_config: dict[str, str | int | float | bool]) -> None:
    """The broker runs in KRaft mode (no ZooKeeper): Kafka 4's only mode."""
    admin = AdminClient(kafka_config)
    metadata = admin.list_topics(timeout=10)
    broker_id = next(iter(metadata.brokers))
    resource = ConfigResource(ConfigResource.Type.BROKER, str(broker_id))
    configs = admin.describe_configs([resource])[resource].result()
    assert "broker" in configs["process.roles"].value
    assert "zookeeper.connect" not in configs  # removed in Kafka 4.0
    assert admin.describe_cluster().result(timeout=10).cluster_id


def test_confluent_kafka_produce_consume_keeps_per_run_order(
    kafka_config: dict[str, str | int | float | bool], kafka_topic: Callable[..., str]
) -> None:
    """Records with the same key (run_id) land on one partition, in produced order."""
    topic = kafka_topic("events", partitions=3)
    producer = Producer({**kafka_config, "acks": "all", "enable.idempotence": "true"})
    runs = [f"run-{i}" for i in range(5)]
    for seq in range(20):
        for run in runs:
            producer.produce(topic, key=run.encode(), value=f"{run}:{seq}".encode())
    assert producer.flush(30) == 0

    records = _consume_all(kafka_config, topic, expected=100)
    assert len(records) == 100
    by_run: dict[str, list[int]] = {}
    partitions: dict[str, set[int]] = {}
    for msg in records:
        key, value, partition = msg.key(), msg.value(), msg.partition()
        assert key is not None and value is not None and partition is not None
        run_id, seq_text = value.decode().split(":")
        assert run_id == key.decode()
        by_run.setdefault(run_id, []).append(int(seq_text))
        partitions.setdefault(run_id, set()).add(partition)
    assert by_run == {run: list(range(20)) for run in runs}
    assert all(len(p) == 1 for p in partitions.values())


def test_aiokafka_produce_consume(
    kafka_settings: Settings, kafka_topic: Callable[..., str]
) -> None:
    """aiokafka (faust's transport) talks to the same broker with the same Settings."""
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    topic = kafka_topic("aio", partitions=2)
    options = aiokafka_options(kafka_settings)

    async def roundtrip() -> list[tuple[bytes, bytes]]:
        producer = AIOKafkaProducer(**options, acks="all", enable_idempotence=True)
        await producer.start()
        try:
            for i in range(10):
                await producer.send_and_wait(topic, key=b"run-a", value=f"v{i}".encode())
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            topic, **options, group_id=f"{topic}.g", auto_offset_reset="earliest"
        )
        await consumer.start()
        received: list[tuple[bytes, bytes]] = []
        try:
            deadline = time.monotonic() + 30
            while len(received) < 10 and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=500)
                for records in batches.values():
                    received.extend((r.key, r.value) for r in records)
        finally:
            await consumer.stop()
        return received

    received = asyncio.run(roundtrip())
    assert received == [(b"run-a", f"v{i}".encode()) for i in range(10)]


def test_transactions_commit_visible_abort_invisible(
    kafka_config: dict[str, str | int | float | bool], kafka_topic: Callable[..., str]
) -> None:
    """read_committed sees committed records only; the aborted ones did reach the log."""
    topic = kafka_topic("tx", partitions=1)
    producer = Producer({**kafka_config, "transactional.id": f"{topic}.tx"})
    producer.init_transactions(30)

    def write(values: list[str], commit: bool) -> None:
        producer.begin_transaction()
        for value in values:
            producer.produce(topic, key=b"run-tx", value=value.encode())
        if commit:
            producer.commit_transaction(30)
        else:
            producer.flush(30)  # make sure the aborted records are really on the broker
            producer.abort_transaction(30)

    write(["c1", "c2"], commit=True)
    write(["a1", "a2"], commit=False)
    write(["c3"], commit=True)

    committed = _consume_all(kafka_config, topic, 3, isolation="read_committed")
    assert [m.value() for m in committed] == [b"c1", b"c2", b"c3"]
    everything = _consume_all(kafka_config, topic, 5, isolation="read_uncommitted")
    assert [m.value() for m in everything] == [b"c1", b"c2", b"a1", b"a2", b"c3"]


def _assignment(consumer: Consumer) -> set[int]:
    return {tp.partition for tp in consumer.assignment()}


def _poll_until(consumers: list[Consumer], done: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "consumer group did not settle in time"
        for consumer in consumers:
            consumer.poll(0.2)


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_consumer_group_rebalance(
    kafka_config: dict[str, str | int | float | bool],
    kafka_topic: Callable[..., str],
    protocol: str,
) -> None:
    """Two members split the partitions; when one leaves, the other takes them all.

    `classic` is the protocol aiokafka/faust speak; `consumer` is Kafka 4's KIP-848.
    """
    topic = kafka_topic("group", partitions=4)
    conf = {
        **kafka_config,
        "group.id": f"{topic}.g",
        "group.protocol": protocol,
        "auto.offset.reset": "earliest",
    }
    if protocol == "classic":
        conf["session.timeout.ms"] = "10000"
        conf["heartbeat.interval.ms"] = "500"
    first = Consumer(conf)
    second = Consumer(conf)
    second_open = True
    try:
        first.subscribe([topic])
        _poll_until([first], lambda: _assignment(first) == {0, 1, 2, 3})

        second.subscribe([topic])
        _poll_until(
            [first, second],
            lambda: len(_assignment(first)) == 2 and len(_assignment(second)) == 2,
        )
        assert _assignment(first) | _assignment(second) == {0, 1, 2, 3}
        assert not _assignment(first) & _assignment(second)

        second.close()
        second_open = False
        _poll_until([first], lambda: _assignment(first) == {0, 1, 2, 3})
    finally:
        first.close()
        if second_open:
            second.close()


def test_committed_offsets_survive_a_new_consumer(
    kafka_config: dict[str, str | int | float | bool], kafka_topic: Callable[..., str]
) -> None:
    """A group resumes after its committed offset: the basis of exactly-once resumption."""
    topic = kafka_topic("resume", partitions=1)
    producer = Producer(kafka_config)
    for i in range(6):
        producer.produce(topic, value=str(i).encode())
    assert producer.flush(30) == 0
    conf = {
        **kafka_config,
        "group.id": f"{topic}.g",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": "false",
    }
    first = Consumer(conf)
    first.subscribe([topic])
    seen: list[bytes | None] = []
    deadline = time.monotonic() + 30
    while len(seen) < 3 and time.monotonic() < deadline:
        msg = first.poll(0.5)
        if msg is not None and msg.error() is None:
            seen.append(msg.value())
            if len(seen) == 3:
                first.commit(message=msg, asynchronous=False)
    first.close()
    assert seen == [b"0", b"1", b"2"]

    second = Consumer(conf)
    committed = second.committed([TopicPartition(topic, 0)], timeout=10)
    assert committed[0].offset == 3
    second.subscribe([topic])
    rest: list[bytes | None] = []
    deadline = time.monotonic() + 30
    while len(rest) < 3 and time.monotonic() < deadline:
        msg = second.poll(0.5)
        if msg is not None and msg.error() is None:
            rest.append(msg.value())
    second.close()
    assert rest == [b"3", b"4", b"5"]
