"""`outcomes loadgen`: publish realistic, seeded agent runs through the producer SDK.

The generator behind `outcomes demo` and `outcomes bench`, usable on its own against any
bootstrap. K threads stand in for K agent workers: each owns an `OutcomesProducer` and
publishes its share of the runs, several runs in flight at once (each run's own order
kept), optionally under a global rate limit. Runs come from `outcomes.devtools.workload` (every
scenario in turn); their size is the scenario's own events plus `padding` extra tool
attempts (two events each), drawn per run from a seeded distribution. `--malformed N`
adds N raw, non-Avro messages to an input topic, which the worker must dead-letter.
"""

from __future__ import annotations

import math
import random
import re
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from outcomes.common.errors import DeliveryError, ProducerBackpressure, ProducerClosed
from outcomes.common.settings import Settings
from outcomes.devtools.workload import MALFORMED_LINES, SCENARIOS, Event, generate_run, interleave
from outcomes.reducers.errors import OutcomesError
from outcomes.reducers.timefmt import format_rfc3339
from outcomes.streams.sdk.producer import DeliveryReport, OutcomesProducer

SizeDistribution = Literal["fixed", "exponential"]
SIZE_DISTRIBUTIONS: tuple[str, ...] = ("fixed", "exponential")
MALFORMED_TOPIC = "outcomes.tool.v1"
"""Input topic that receives the raw malformed messages (any input topic would do)."""

IN_FLIGHT_RUNS = 32
"""Runs one simulated agent worker publishes concurrently (interleaved)."""

_PREFIX_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,80}")


class LoadgenError(OutcomesError):
    """The load could not be published (broker unreachable, events not acknowledged).

    Operators: check the bootstrap address (`outcomes dev status` for the dev stack) and
    that the input topics exist (`outcomes topics ensure`).
    """


@dataclass(frozen=True)
class LoadSpec:
    """What to publish: how many runs, how large, how fast, under which run-id prefix."""

    runs: int
    seed: int = 0
    prefix: str = "lg"
    padding_mean: float = 0.0
    size_distribution: SizeDistribution = "fixed"
    rate: float | None = None
    malformed: int = 0
    workers: int = 4
    stamp_now: bool = False
    scenarios: tuple[str, ...] = tuple(SCENARIOS)
    narrated: bool = False
    """Vary runs within their scenario and end each with its agent's final message
    (`outcomes.devtools.workload`, narrated runs)."""

    def __post_init__(self) -> None:
        if self.runs < 0 or self.malformed < 0:
            raise LoadgenError("--runs and --malformed must not be negative")
        if self.workers < 1:
            raise LoadgenError("--workers must be at least 1")
        if self.rate is not None and self.rate <= 0:
            raise LoadgenError("--rate must be positive (events per second)")
        if self.padding_mean < 0:
            raise LoadgenError("--padding-mean must not be negative")
        if self.size_distribution not in SIZE_DISTRIBUTIONS:
            raise LoadgenError(f"--size-distribution must be one of {SIZE_DISTRIBUTIONS}")
        if not _PREFIX_RE.fullmatch(self.prefix):
            raise LoadgenError(
                f"--run-prefix {self.prefix!r}: use 1-81 letters, digits, '_', '.', ':', '-'"
            )
        unknown = set(self.scenarios) - set(SCENARIOS)
        if unknown or not self.scenarios:
            raise LoadgenError(f"unknown scenarios {sorted(unknown)}; known: {sorted(SCENARIOS)}")


@dataclass(frozen=True)
class PlannedRun:
    """One run of the load: its id, scenario and extra tool attempts."""

    run_id: str
    scenario: str
    padding: int


@dataclass(frozen=True)
class Origin:
    """Where a published message landed."""

    topic: str
    partition: int
    offset: int


@dataclass
class LoadResult:
    """What was published: counts, timings and (if kept) the events themselves."""

    spec: LoadSpec
    runs: int = 0
    events: int = 0
    delivered: int = 0
    by_scenario: Counter[str] = field(default_factory=Counter)
    by_type: Counter[str] = field(default_factory=Counter)
    malformed: list[Origin] = field(default_factory=list)
    malformed_raw: list[bytes] = field(default_factory=list)
    first_produce_at: float = 0.0  # wall clock (time.time())
    seconds: float = 0.0
    published: list[Event] | None = None

    @property
    def rate(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else 0.0

    def summary(self) -> str:
        """One line for the console."""
        return (
            f"published {self.events:,} events in {self.runs:,} runs "
            f"({self.delivered:,} acknowledged) and {len(self.malformed)} malformed "
            f"message(s) in {self.seconds:.1f} s ({self.rate:,.0f} events/s)"
        )


def plan_runs(spec: LoadSpec) -> list[PlannedRun]:
    """The runs of a load, deterministic for the spec (ids `<prefix>-<seed>-<n>`)."""
    rng = random.Random(f"loadgen:{spec.seed}")
    planned = []
    for index in range(spec.runs):
        if spec.size_distribution == "fixed":
            padding = round(spec.padding_mean)
        else:  # exponential: most runs small, a long tail of large ones
            padding = int(rng.expovariate(1.0 / spec.padding_mean)) if spec.padding_mean else 0
        scenario = spec.scenarios[index % len(spec.scenarios)]
        planned.append(PlannedRun(f"{spec.prefix}-{spec.seed}-{index:06d}", scenario, padding))
    return planned


def padding_for_size(scenario: str, events: int) -> int:
    """Extra tool attempts that make a run of `scenario` about `events` events long."""
    base = len(generate_run("size-probe", scenario, 0))
    return max(0, math.ceil((events - base) / 2))


# Shortest sleep of a publishing thread waiting for a token (seconds).
MIN_SLEEP = 0.002


class RateLimiter:
    """A token bucket shared by every publishing thread (events per second)."""

    def __init__(self, rate: float | None, burst: float | None = None) -> None:
        self.rate = rate
        self.capacity = burst if burst is not None else max(1.0, (rate or 0) / 20)
        self._tokens = self.capacity
        self._last = time.monotonic()
        self._lock = threading.Lock()

    def acquire(self) -> None:
        """Take one token, sleeping until one is available."""
        if self.rate is None:
            return
        while True:
            with self._lock:
                now = time.monotonic()
                self._tokens = min(self.capacity, self._tokens + (now - self._last) * self.rate)
                self._last = now
                if self._tokens >= 1.0:
                    self._tokens -= 1.0
                    return
                wait = (1.0 - self._tokens) / self.rate
            # Not less than MIN_SLEEP: at thousands of events/s the exact wait is a fraction
            # of a millisecond, and threads waking that often took a core away from the
            # pipeline under test. The bucket holds the tokens that accrue meanwhile.
            time.sleep(max(wait, MIN_SLEEP))


class MonotonicStamp:
    """Wall-clock microseconds, strictly increasing across threads (event time = send time)."""

    def __init__(self) -> None:
        self._last = 0
        self._lock = threading.Lock()

    def next(self) -> int:
        now = time.time_ns() // 1000
        with self._lock:
            self._last = max(now, self._last + 1)
            return self._last


def malformed_payloads(prefix: str, count: int) -> list[bytes]:
    """`count` distinct raw messages that are not Avro (the workload's malformed lines)."""
    payloads = []
    for index in range(count):
        base = MALFORMED_LINES[index % len(MALFORMED_LINES)]
        tag = f"{prefix}-bad{index}"
        if base.startswith(b"{not json"):
            payloads.append(base + f" {tag}".encode())
            continue
        payloads.append(
            base.replace(b"run-bad", f"{prefix}-bad".encode()).replace(
                b'"bad-', f'"{tag}-'.encode()
            )
        )
    return payloads


def _batches(items: Sequence[PlannedRun], size: int) -> Iterator[Sequence[PlannedRun]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def publish_load(
    settings: Settings,
    spec: LoadSpec,
    *,
    keep_events: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> LoadResult:
    """Publish the load and wait for every acknowledgement; raise LoadgenError on failure.

    `progress(done, total)` is called from the calling thread a few times a second.
    """
    planned = plan_runs(spec)
    if spec.narrated:  # a narrated run's size depends on its own variation
        total = sum(
            len(generate_run(p.run_id, p.scenario, p.padding, spec.seed, narrate=True))
            for p in planned
        )
    else:
        sizes = {p.scenario: len(generate_run("size-probe", p.scenario, 0)) for p in planned}
        total = sum(sizes[p.scenario] + 2 * p.padding for p in planned)
    result = LoadResult(spec, runs=len(planned))
    kept: list[list[Event]] = [[] for _ in range(spec.workers)]
    limiter = RateLimiter(spec.rate)
    stamp = MonotonicStamp()
    lock = threading.Lock()
    counts = {"queued": 0, "delivered": 0}
    errors: list[BaseException] = []
    started = threading.Event()

    def delivered(report: DeliveryReport) -> None:
        if report.ok:
            with lock:
                counts["delivered"] += 1

    def agent(worker: int) -> None:
        mine = planned[worker :: spec.workers]
        source = f"agent-worker-{worker}"
        local_types: Counter[str] = Counter()
        try:
            with OutcomesProducer(
                settings, source=source, on_delivery=delivered, backpressure_timeout=30.0
            ) as producer:
                for batch in _batches(mine, IN_FLIGHT_RUNS):
                    runs = [
                        generate_run(
                            p.run_id, p.scenario, p.padding, spec.seed, narrate=spec.narrated
                        )
                        for p in batch
                    ]
                    order_seed = zlib.crc32(f"{spec.seed}:{batch[0].run_id}".encode())
                    for event in interleave(runs, seed=order_seed):
                        if errors:
                            return
                        event["source"] = source
                        limiter.acquire()
                        if spec.stamp_now:
                            event["occurred_at"] = format_rfc3339(stamp.next())
                        if not started.is_set():
                            with lock:
                                if not result.first_produce_at:
                                    result.first_produce_at = time.time()
                            started.set()
                        producer.publish(event)
                        local_types[event["type"]] += 1
                        with lock:
                            counts["queued"] += 1
                        if keep_events:
                            kept[worker].append(event)
        except (DeliveryError, ProducerBackpressure, ProducerClosed, OutcomesError) as exc:
            errors.append(exc)
        except Exception as exc:  # a bug or a client error: re-raised by the caller
            errors.append(exc)
        finally:
            with lock:
                result.by_type.update(local_types)

    t0 = time.monotonic()
    threads = [
        threading.Thread(target=agent, args=(w,), name=f"loadgen-{w}", daemon=True)
        for w in range(spec.workers)
    ]
    for thread in threads:
        thread.start()
    while any(t.is_alive() for t in threads):
        if progress is not None:
            progress(counts["delivered"], total)
        for thread in threads:
            thread.join(timeout=0.1)
    if errors:
        raise LoadgenError(f"publishing failed: {errors[0]}") from errors[0]
    if spec.malformed:
        result.malformed_raw = malformed_payloads(spec.prefix, spec.malformed)
        result.malformed = publish_raw(settings, MALFORMED_TOPIC, result.malformed_raw, spec.prefix)
    result.seconds = time.monotonic() - t0
    result.events = counts["queued"]
    result.delivered = counts["delivered"]
    result.by_scenario = Counter(p.scenario for p in planned)
    if progress is not None:
        progress(result.delivered, total)
    if keep_events:
        result.published = [event for events in kept for event in events]
    if result.delivered != result.events:
        raise LoadgenError(
            f"only {result.delivered} of {result.events} events were acknowledged by the broker"
        )
    return result


def publish_raw(
    settings: Settings, topic: str, payloads: Sequence[bytes], key: str
) -> list[Origin]:
    """Send raw bytes (bypassing the SDK's validation) and return where each landed."""
    from confluent_kafka import KafkaError, KafkaException, Message, Producer

    origins: list[Origin | None] = [None] * len(payloads)
    failures: list[str] = []

    def make_callback(index: int) -> Callable[[KafkaError | None, Message], None]:
        def done(err: KafkaError | None, msg: Message) -> None:
            if err is not None:
                failures.append(err.str())
                return
            partition, offset = msg.partition(), msg.offset()
            if partition is None or offset is None:
                failures.append(f"no partition/offset reported for message {index}")
                return
            origins[index] = Origin(str(msg.topic()), partition, offset)

        return done

    producer = Producer({**settings.kafka_config(), "acks": "all", "enable.idempotence": True})
    try:
        for index, payload in enumerate(payloads):
            producer.produce(
                topic, value=payload, key=key.encode(), on_delivery=make_callback(index)
            )
        remaining = producer.flush(30.0)
    except KafkaException as exc:
        raise LoadgenError(f"raw publish to {topic} failed: {exc}") from exc
    if remaining or failures or any(o is None for o in origins):
        detail = failures[0] if failures else f"{remaining} still queued after 30 s"
        raise LoadgenError(f"raw publish to {topic} failed: {detail}")
    return [o for o in origins if o is not None]


def default_prefix(kind: str = "lg") -> str:
    """A run-id prefix unique to this invocation: `<kind>-<UTC timestamp>`."""
    return f"{kind}-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S%f')[:-3]}"


def write_jsonl(path: Path, events: Sequence[Event]) -> None:
    """Write published events as JSONL (replayable with `outcomes replay`)."""
    import orjson

    with path.open("wb") as handle:
        for event in events:
            handle.write(orjson.dumps(event))
            handle.write(b"\n")
