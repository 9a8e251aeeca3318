"""Which worker owns a run (streams/gate_members.py): the run-log partition by Kafka's
murmur2, and the owner's door from the group's own description."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from outcomes.streams.gate_members import (
    Owners,
    client_id,
    group_owners,
    partition_of,
    url_of,
)

KEYS = ["run-five-files", "abc", "claude-code-jsonl:0b6f-11", "é" * 7, "x" * 257, "k"]


def test_partition_of_agrees_with_librdkafkas_murmur2_partitioner(
    kafka_config: dict[str, Any], kafka_topic: Callable[..., str]
) -> None:
    topic = kafka_topic("p", partitions=7)
    producer = Producer({**kafka_config, "partitioner": "murmur2_random"})
    placed: dict[str, int] = {}

    def delivered(err: Any, msg: Any) -> None:
        assert err is None
        placed[msg.key().decode()] = msg.partition()

    for key in KEYS:
        producer.produce(topic, b"v", key.encode(), on_delivery=delivered)
    assert producer.flush(30) == 0
    assert placed == {key: partition_of(key, 7) for key in KEYS}


def test_the_group_description_names_each_partitions_door(
    kafka_config: dict[str, Any], kafka_topic: Callable[..., str]
) -> None:
    topic = kafka_topic("runlog", partitions=4)
    group = f"test-gate-members-{uuid.uuid4().hex[:8]}"
    door = "http://127.0.0.1:16066"
    consumer = Consumer({**kafka_config, "group.id": group, "client.id": client_id(door)})
    consumer.subscribe([topic])
    try:
        deadline = time.monotonic() + 30
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        assert consumer.assignment(), "the group never assigned the test consumer"
        owners = group_owners(AdminClient(kafka_config), group, topic)
        assert owners == dict.fromkeys(range(4), door)
    finally:
        consumer.close()


@pytest.mark.parametrize(
    ("cid", "url"),
    [
        ("outcomes-worker@http://10.1.2.3:6066", "http://10.1.2.3:6066"),
        ("outcomes-worker@ftp://x", None),
        ("rdkafka", None),
        ("", None),
    ],
)
def test_url_of_reads_only_our_client_ids(cid: str, url: str | None) -> None:
    assert url_of(cid) == url


def test_owners_are_cached_then_described_again() -> None:
    calls: list[int] = []
    now = [0.0]

    def describe() -> dict[int, str]:
        calls.append(1)
        return {0: "http://a", 1: "http://b"}

    owners = Owners(describe, clock=lambda: now[0])
    assert owners.owner(1) == "http://b"
    assert owners.owner(0) == "http://a"
    assert len(calls) == 1
    assert owners.owner(5) is None  # unknown partition: described again, still unknown
    assert len(calls) == 2
    now[0] = 10.0
    owners.owner(0)
    assert len(calls) == 3
    owners.forget()
    owners.owner(0)
    assert len(calls) == 4
