"""The SDK's docs: the README example runs against the real broker and its events arrive;
docs/sdk.md is exactly what `python -m outcomes.streams.sdk.reference` generates."""

from __future__ import annotations

import re
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition

from outcomes.common.codec import Codec
from outcomes.reducers.catalog import EVENT_TOPICS
from outcomes.streams.sdk import reference
from outcomes.streams.topics import ensure_topics

DOC = Path(__file__).resolve().parent.parent / "README.md"
REFERENCE = DOC.parent / "docs" / "sdk.md"
EXAMPLE_RUN_ID = '"run-2026-11-30-0042"'


def example_code() -> str:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    examples = [block for block in blocks if EXAMPLE_RUN_ID in block]
    assert len(examples) == 1, "README.md must have exactly one SDK example"
    return examples[0]


def test_sdk_example_publishes_its_events(
    kafka_bootstrap: str, kafka_config: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ensure_topics(kafka_config)
    run_id = f"docs-{uuid.uuid4().hex}"
    code = example_code().replace(EXAMPLE_RUN_ID, repr(run_id))
    types = re.findall(r"events\.([a-z_]+)\(", code)
    assert len(types) == 5
    topics = sorted({EVENT_TOPICS[t.replace("_", ".", 1)] for t in types})
    consumer = Consumer({**kafka_config, "group.id": f"docs-{run_id}", "enable.auto.commit": False})
    metadata = consumer.list_topics(timeout=10)
    start = []
    for topic in topics:
        for partition in metadata.topics[topic].partitions:
            _, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
            start.append(TopicPartition(topic, partition, high))

    monkeypatch.setenv("OUTCOMES_BOOTSTRAP", kafka_bootstrap)
    exec(compile(code, str(DOC), "exec"), {"__name__": "docs_sdk_example"})

    consumer.assign(start)
    codec = Codec()
    arrived: list[dict[str, Any]] = []
    deadline = time.monotonic() + 30
    try:
        while len(arrived) < len(types) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            error = msg.error()
            if error is not None:
                assert error.code() == KafkaError._PARTITION_EOF, error
                continue
            value = msg.value()
            if msg.key() == run_id.encode() and value is not None:
                arrived.append(codec.decode(value).value)
    finally:
        consumer.close()
    assert sorted(e["type"] for e in arrived) == sorted(t.replace("_", ".", 1) for t in types)
    assert all(e["run_id"] == run_id and e["source"] == "agent-worker-7" for e in arrived)
    final = next(e for e in arrived if e["type"] == "finalize.requested")
    assert final["occurred_at"] == "2026-11-30T10:00:00.000000Z"


def test_sdk_reference_is_the_generated_text() -> None:
    assert REFERENCE.read_text(encoding="utf-8") == reference.render(), (
        "docs/sdk.md is stale: run `python -m outcomes.streams.sdk.reference > docs/sdk.md`"
    )


def test_sdk_reference_lists_every_typed_method_and_the_readme_links_it() -> None:
    text = REFERENCE.read_text(encoding="utf-8")
    assert all(f"### `{t.replace('.', '_')}`" in text for t in EVENT_TOPICS)
    assert "[`docs/sdk.md`](docs/sdk.md)" in DOC.read_text(encoding="utf-8")
