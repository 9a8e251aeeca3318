"""What the consumer SDK, follow and relay tests share: notifications on a test topic,
and reading back what landed on a test dead-letter topic."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer

from outcomes.common.codec import Codec
from outcomes.devtools.samples import notification
from outcomes.reducers.records import OutputRecord

STATUSES = ("unresolved", "blocked", "partially_complete", "complete")


def run_notifications(prefix: str, runs: int, revisions: int) -> list[OutputRecord]:
    """`revisions` notifications for each of `runs` runs, in the order the worker emits
    them (a run's revision r before r + 1); statuses cycle so every one is a change."""
    records = []
    for revision in range(1, revisions + 1):
        for run in range(runs):
            status = STATUSES[(revision - 1) % len(STATUSES)]
            previous = None if revision == 1 else STATUSES[(revision - 2) % len(STATUSES)]
            records.append(
                notification(f"{prefix}-{run:03d}", revision, status, previous, revision % 60)
            )
    return records


def publish(
    config: Mapping[str, Any],
    topic: str,
    records: Iterable[OutputRecord | tuple[bytes, bytes | None]],
) -> None:
    """Publish records (encoded with the codec, keyed by run id) or raw (key, value) pairs."""
    codec = Codec()
    producer = Producer({**config, "enable.idempotence": True, "acks": "all", "linger.ms": 5})
    for record in records:
        if isinstance(record, OutputRecord):
            producer.produce(topic, codec.encode_output(record), record.key.encode())
        else:
            producer.produce(topic, record[1], record[0])
        producer.poll(0)
    assert producer.flush(30) == 0


def read_all(
    config: Mapping[str, Any], topic: str, count: int, timeout: float = 30.0
) -> list[dict[str, Any]]:
    """Decode the first `count` records of `topic` (all partitions), waiting up to
    `timeout` seconds for them."""
    codec = Codec()
    consumer = Consumer(
        {
            **config,
            "group.id": f"check-{topic}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    found: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    try:
        while len(found) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            error = message.error()
            if error is not None:
                assert error.code() == KafkaError._PARTITION_EOF, error
                continue
            value = message.value()
            assert value is not None
            found.append(dict(codec.decode(value).value))
    finally:
        consumer.close()
    return found
