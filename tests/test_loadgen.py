"""The load generator: deterministic plans, run sizes, rate limit, and real publishing."""

from __future__ import annotations

import statistics
import time
from collections import Counter
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

from outcomes.common.codec import Codec
from outcomes.common.settings import Settings
from outcomes.devtools.demo import end_offsets
from outcomes.devtools.loadgen import (
    LoadgenError,
    LoadSpec,
    RateLimiter,
    malformed_payloads,
    padding_for_size,
    plan_runs,
    publish_load,
)
from outcomes.devtools.workload import SCENARIOS, generate_run
from outcomes.reducers.catalog import EVENT_TOPICS
from outcomes.reducers.timefmt import parse_rfc3339


def test_plan_is_deterministic_and_cycles_every_scenario() -> None:
    spec = LoadSpec(runs=70, seed=5, prefix="p")
    first, again = plan_runs(spec), plan_runs(spec)
    assert first == again
    assert Counter(p.scenario for p in first) == {name: 10 for name in SCENARIOS}
    assert first[0].run_id == "p-5-000000"
    assert len({p.run_id for p in first}) == 70


def test_exponential_sizes_have_the_requested_mean_and_a_tail() -> None:
    spec = LoadSpec(runs=4000, padding_mean=20, size_distribution="exponential")
    paddings = [p.padding for p in plan_runs(spec)]
    assert 17 <= statistics.mean(paddings) <= 22  # int() floors each draw
    assert max(paddings) > 5 * 20
    assert {p.padding for p in plan_runs(LoadSpec(runs=10, padding_mean=7))} == {7}


@pytest.mark.parametrize("size", [10, 1_000, 100_000])
def test_padding_for_size_hits_the_run_size(size: int) -> None:
    events = generate_run("r", "clean", padding_for_size("clean", size))
    assert size <= len(events) <= size + 2


def test_rate_limiter_holds_the_rate() -> None:
    limiter = RateLimiter(2_000)
    t0 = time.monotonic()
    for _ in range(600):
        limiter.acquire()
    elapsed = time.monotonic() - t0
    # 600 tokens at 2,000/s, less the initial burst of 100: at least 0.25 s.
    assert 0.24 <= elapsed <= 0.6


def test_malformed_payloads_are_tagged_and_not_avro() -> None:
    payloads = malformed_payloads("pfx", 5)
    assert len(payloads) == len(set(payloads)) == 5
    assert all(not p.startswith(b"\xc3\x01") for p in payloads)  # no Avro single-object marker
    assert b"pfx-bad" in payloads[1]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"runs": -1}, "must not be negative"),
        ({"runs": 1, "workers": 0}, "at least 1"),
        ({"runs": 1, "rate": 0}, "positive"),
        ({"runs": 1, "prefix": "bad prefix"}, "--run-prefix"),
        ({"runs": 1, "scenarios": ("nope",)}, "unknown scenarios"),
    ],
)
def test_invalid_specs_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(LoadgenError, match=message):
        LoadSpec(**kwargs)  # type: ignore[arg-type]


def test_published_events_are_on_their_topics_in_run_order(kafka_bootstrap: str) -> None:
    settings = Settings.load(bootstrap=kafka_bootstrap)
    topics = sorted(set(EVENT_TOPICS.values()))
    before = end_offsets(settings, topics)
    spec = LoadSpec(
        runs=21, prefix=f"lgtest-{time.time_ns()}", workers=3, malformed=2, stamp_now=True
    )
    result = publish_load(settings, spec, keep_events=True)
    assert result.published is not None
    assert result.delivered == result.events == len(result.published)
    assert len(result.malformed) == 2

    consumer = Consumer(
        {**settings.kafka_config(), "group.id": "lgtest", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(t, p, o) for (t, p), o in before.items()])
    codec = Codec(settings)
    seen: list[dict[str, object]] = []
    raw: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while len(seen) + len(raw) < len(result.published) + 2 and time.monotonic() < deadline:
            for message in consumer.consume(500, timeout=0.5):
                assert message.error() is None
                value = message.value()
                assert value is not None
                if value in result.malformed_raw:
                    raw.append(value)
                    continue
                # Other tests publish to the same topics at the same time: ours by key.
                if not (message.key() or b"").startswith(f"{spec.prefix}-".encode()):
                    continue
                seen.append(codec.decode_event_fast(value))
    finally:
        consumer.close()
    assert sorted(raw) == sorted(result.malformed_raw)
    assert sorted(str(e["event_id"]) for e in seen) == sorted(
        str(e["event_id"]) for e in result.published
    )
    # stamp_now: each run's events carry strictly increasing send times, in run order.
    by_run: dict[str, list[dict[str, Any]]] = {}
    for event in result.published:
        by_run.setdefault(event["run_id"], []).append(event)
    for events in by_run.values():
        stamps = [parse_rfc3339(str(e["occurred_at"])) for e in events]
        assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
        assert [e["event_id"] for e in events] == sorted(str(e["event_id"]) for e in events)
