"""The batch engine's store restore, against the real broker: a store catches up with
its changelog partition from its checkpoint, and only from there."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Producer

from outcomes.streams.store import PartitionStore, store_key
from outcomes.streams.worker_batch import restore
from outcomes.streams.worker_common import WorkerOptions

pytestmark = pytest.mark.kafka


def _append(
    config: dict[str, str], topic: str, partition: int, items: list[tuple[str, int]]
) -> None:
    producer = Producer(config)
    for run_id, seq in items:
        producer.produce(topic, f"{run_id}:{seq}".encode(), store_key(run_id, seq), partition)
    assert producer.flush(30) == 0


def test_restore_reads_each_changelog_partition_from_its_checkpoint(
    kafka_config: dict[str, str], kafka_topic: Callable[..., str], tmp_path: Path
) -> None:
    topic = kafka_topic("changelog", partitions=2)
    _append(kafka_config, topic, 0, [("run-a", seq) for seq in range(300)])
    _append(kafka_config, topic, 1, [("run-b", seq) for seq in range(5)])
    options = WorkerOptions()
    stores = {p: PartitionStore(tmp_path / str(p), p, options) for p in (0, 1)}

    assert restore(stores, kafka_config, topic) == 305
    assert stores[0].count("run-a") == 300 and stores[1].count("run-b") == 5
    assert stores[0].get("run-a", 299) == b"run-a:299"
    assert (stores[0].checkpoint, stores[1].checkpoint) == (300, 5)

    # Only what follows the checkpoints is read again.
    _append(kafka_config, topic, 1, [("run-b", seq) for seq in range(5, 8)])
    assert restore(stores, kafka_config, topic) == 3
    assert stores[1].count("run-b") == 8 and stores[1].checkpoint == 8
    assert restore(stores, kafka_config, topic) == 0
    for store in stores.values():
        store.close(None)
