"""`outcomes bench`: end-to-end throughput, latency, memory and per-event cost.

One worker and one sink run for the whole benchmark, as subprocesses, exactly as
`outcomes worker` and `outcomes sink` (the sink through a thin probe that notes when
each INSERT returned; see docs/benchmarks.md). Phases, all against the real broker
and a fresh chDB:

1. throughput: publish a realistic mix as fast as the SDK goes; events/s from the first
   produce until the last account revision of those runs is stored in ClickHouse;
2. raw ceiling: consume the same input records with confluent-kafka and decode them
   with `Codec().decode_event_fast`, nothing else, in one process; and the pure fold:
   the same events through `outcomes replay`'s work (JSON lines in, validate, fold,
   JSON lines out), CPU time per event, the yardstick every stage is printed against;
3. per-event cost: runs of 10, 1,000 and 100,000 events, wall and CPU time per event;
4. latency: publish at half the throughput measured in 1 for a while; for every
   revision, ClickHouse INSERT acknowledgement time minus its `observation_cutoff`
   (the send-time stamp of the latest event folded into it), split at the Kafka
   timestamp of the revision's record into the worker's part and the sink's part;
5. peak RSS (VmHWM) of the worker and the sink;
6. the gate (issue #35): during phase 4, a probe publishes a run, waits for the broker's
   acknowledgement and at once checks an answer about it at the worker's door, its
   events as the position: the latency a runtime sees, read-your-writes wait included
   (`devtools/gate_probe.py`);
7. catch-up (issue #36): once the worker and the sink have stopped, a worker under a new
   application id (no run log, changelog or state) folds every input record the phases
   above published; events/s from its start until everything is committed, and its
   peak RSS (`catch_up`).

Results go to `bench/results/<UTC time>[-quick].json`; the work dir keeps the logs.
"""

from __future__ import annotations

import gc
import io
import json
import logging
import math
import os
import platform
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

import orjson

from outcomes.common.codec import Codec
from outcomes.common.errors import CodecError
from outcomes.common.settings import Settings
from outcomes.devtools.demo import (
    Child,
    DemoError,
    committed_offsets,
    delete_worker_internals,
    end_offsets,
    ensure_broker,
    migrate_clickhouse,
    start_group_at,
    worker_argv,
)
from outcomes.devtools.gate_probe import GateProbe
from outcomes.devtools.harness import free_port
from outcomes.devtools.loadgen import (
    LoadResult,
    LoadSpec,
    default_prefix,
    padding_for_size,
    publish_load,
)
from outcomes.reducers.catalog import INPUT_TOPICS, OUTPUT_TOPICS, RUN_LOG_TOPIC, run_log_topic
from outcomes.reducers.engine import Engine
from outcomes.reducers.errors import OutcomesError
from outcomes.reducers.limits import Limits
from outcomes.reducers.timefmt import parse_rfc3339
from outcomes.sinks import defaults as sink_defaults
from outcomes.sinks import schema
from outcomes.sinks.consumer import Sink, SinkConfig
from outcomes.sinks.rows import Row
from outcomes.sinks.writer import ClickHouseWriter, Encoded
from outcomes.streams.gate_door import read_token
from outcomes.streams.replay import ReplayStats, jsonl_items, replay_items, settling_state
from outcomes.streams.topics import PARTITIONS, ensure_topics, read_range, topic_table

REVISIONS_TOPIC = OUTPUT_TOPICS["account_revision"]

# Issue #20's targets, each a ratio within one run (docs/benchmarks.md).
TARGET_WORKER_X_FOLD = 2.0  # worker CPU per event <= 2 x the pure fold's
TARGET_SINK_X_FOLD = 0.5  # sink CPU per event <= 0.5 x the pure fold's
TARGET_E2E_X_CEILING = 0.15  # end to end >= 0.15 x the raw ceiling
TARGET_P99_S = 1.0  # p99 latency at half load
# Issue #35's: a gate check at half load, read-your-writes wait included.
TARGET_GATE_P50_S = 0.05
TARGET_GATE_P99_S = 0.25
# Issue #36's: a new worker group catching up on the bench's history.
TARGET_CATCH_UP_PEAK_RSS = 1 << 30  # bytes


class BenchError(OutcomesError):
    """The benchmark could not complete a phase. Operators: the message names the phase;
    the worker's and sink's logs are kept in the bench work directory it names."""


class PhaseTimeout(BenchError):
    """A phase's load was not in ClickHouse within its time budget."""


# --------------------------------------------------------------------------- probe sink


class TimedWriter(ClickHouseWriter):
    """The sink's writer, noting when each INSERT of account revisions returned.

    One JSON line per such INSERT: `[ack_time_s, [[run_id, revision, cutoff_us], ...]]`.
    A row is queryable once its synchronous INSERT returned, so that is its visibility
    time (the rows of the tables after it in the flush order come later, the offsets
    are committed after the whole write).
    """

    def __init__(self, dsn: str, log_path: Path) -> None:
        super().__init__(dsn)
        self._log = log_path.open("a", buffering=1)

    def _insert(self, table: str, rows: Sequence[Row]) -> None:
        super()._insert(table, rows)
        if table == schema.ACCOUNT_REVISION_ROWS.name:
            acked = time.time()
            revisions = [[r[0], r[1], r[6]] for r in rows]
            self._log.write(json.dumps([acked, revisions]) + "\n")

    def _insert_json(self, table: str, records: Mapping[str, Sequence[Encoded]]) -> None:
        """The same note for records the sink writes from their canonical JSON (those
        published with the sink's headers): one INSERT … SELECT per table."""
        super()._insert_json(table, records)
        written = records.get("account_revision")
        if written:
            acked = time.time()
            revisions = []
            for record in written:
                body = orjson.loads(record.json)
                cutoff = parse_rfc3339(body["observation_cutoff"])
                revisions.append([record.run_id, body["revision"], cutoff])
            self._log.write(json.dumps([acked, revisions]) + "\n")


def probe_sink(bootstrap: str, dsn: str, group: str, log_path: Path, batch_seconds: float) -> None:
    """Run `outcomes sink` with a TimedWriter until SIGTERM (the bench's sink process)."""
    # Each flush's size and duration, with a timestamp, into the work dir's sink.log.
    logging.basicConfig(level=logging.INFO, format="%(created).3f %(name)s %(message)s")
    settings = Settings.load(bootstrap=bootstrap, clickhouse=dsn)
    config = SinkConfig(group_id=group, batch_seconds=batch_seconds)
    sink = Sink(settings, config, writer=TimedWriter(dsn, log_path))

    def graceful(signum: int, frame: FrameType | None) -> None:
        sink.stop()

    signal.signal(signal.SIGTERM, graceful)
    signal.signal(signal.SIGINT, graceful)
    sink.run()


class AckLog:
    """Reads the probe's log incrementally: first ack time and cutoff per revision."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self.acks: dict[tuple[str, int], tuple[float, int]] = {}

    def refresh(self) -> None:
        if not self.path.exists():
            return
        with self.path.open("rb") as handle:
            handle.seek(self._offset)
            data = handle.read()
        end = data.rfind(b"\n") + 1
        self._offset += end
        for line in data[:end].splitlines():
            acked, revisions = json.loads(line)
            for run_id, revision, cutoff in revisions:
                self.acks.setdefault((run_id, revision), (acked, cutoff))

    def for_prefix(self, prefix: str) -> dict[tuple[str, int], tuple[float, int]]:
        head = prefix + "-"
        return {k: v for k, v in self.acks.items() if k[0].startswith(head)}


# --------------------------------------------------------------------------- measuring


def read_status(pid: int) -> dict[str, int]:
    """VmHWM / VmRSS of a process in bytes (Linux /proc)."""
    found: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmHWM", "VmRSS"):
            found[key] = int(value.split()[0]) * 1024
    return found


def _stat_cpu_seconds(stat_path: Path) -> float:
    """User + system CPU seconds from a /proc `stat` file (of a process or a thread)."""
    fields = stat_path.read_text().rsplit(")", 1)[1].split()  # after "(comm)"
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used so far."""
    return _stat_cpu_seconds(Path(f"/proc/{pid}/stat"))


def thread_cpu_seconds(pid: int) -> dict[str, float]:
    """User + system CPU seconds per thread name of a process so far, summed over its
    threads of that name (`/proc/<pid>/task`; Python threads are all named "python")."""
    totals: dict[str, float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            seconds = _stat_cpu_seconds(task / "stat")
        except FileNotFoundError:  # the thread ended between the listing and the read
            continue
        totals[name] = totals.get(name, 0.0) + seconds
    return totals


def thread_shares(
    before: Mapping[str, float], after: Mapping[str, float], seconds: float
) -> dict[str, float]:
    """Share of one core per thread name between two `thread_cpu_seconds` samples,
    largest first, names under 0.5% left out. A thread that ended in between takes its
    CPU with it (a name's total can fall): such a name counts from zero."""
    shares = {
        name: (total - before.get(name, 0.0)) / seconds
        if total >= before.get(name, 0.0)
        else total / seconds
        for name, total in after.items()
    }
    return {
        name: round(share, 3)
        for name, share in sorted(shares.items(), key=lambda item: -item[1])
        if share >= 0.005
    }


def thread_deltas(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    """CPU seconds per thread name between two `thread_cpu_seconds` samples (a name whose
    total fell, a thread that ended, counts from zero), rounded to milliseconds."""
    return {
        name: round(total - before.get(name, 0.0) if total >= before.get(name, 0.0) else total, 3)
        for name, total in after.items()
    }


def machine() -> dict[str, Any]:
    """What the benchmark ran on: cores, memory, CPU model, load."""
    model = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    mem_kib = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            mem_kib = int(line.split()[1])
    return {
        "nproc": os.cpu_count(),
        "memory_gib": round(mem_kib / 2**20, 1),
        "cpu_model": model,
        "loadavg_at_start": list(os.getloadavg()),
        "python": platform.python_version(),
        "kernel": platform.release(),
    }


def percentile(values: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))
    return ordered[index]


@dataclass
class Pipeline:
    """The running worker and probe sink, and how to tell when they caught up."""

    settings: Settings
    app_id: str
    sink_group: str
    worker: Child
    sink: Child
    acks: AckLog

    def wait_for_run_log(self, timeout: float) -> None:
        """Wait until the worker has created its run log (it does so first thing)."""
        deadline = time.monotonic() + timeout
        while True:
            if self.worker.poll() is not None:
                raise BenchError(f"worker exited with {self.worker.poll()}: {self.worker.tail()}")
            try:
                end_offsets(self.settings, [run_log_topic(self.app_id)])
                return
            except DemoError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def drained(self, inputs_end: Mapping[tuple[str, int], int], timeout: float) -> None:
        """Wait until the worker consumed up to `inputs_end` and the sink everything after."""
        deadline = time.monotonic() + timeout
        self._wait(self.app_id, inputs_end, deadline, "worker (input topics)")
        run_log = end_offsets(self.settings, [run_log_topic(self.app_id)])
        self._wait(self.app_id, run_log, deadline, "worker (run log)")
        outputs = end_offsets(self.settings, list(OUTPUT_TOPICS.values()))
        self._wait(self.sink_group, outputs, deadline, "sink")

    def _wait(
        self, group: str, target: Mapping[tuple[str, int], int], deadline: float, what: str
    ) -> None:
        wanted = {tp: o for tp, o in target.items() if o > 0}
        while True:
            for child in (self.worker, self.sink):
                if child.poll() is not None:
                    raise BenchError(
                        f"{child.name} exited with {child.poll()}: {child.tail()} "
                        f"(log: {child.log_path})"
                    )
            done = committed_offsets(self.settings, group, list(wanted))
            if all(done[tp] >= o for tp, o in wanted.items()):
                return
            if time.monotonic() > deadline:
                behind = sum(o - max(0, done[tp]) for tp, o in wanted.items() if done[tp] < o)
                raise PhaseTimeout(f"{what} still {behind:,} records behind at the phase timeout")
            time.sleep(0.25)

    def cpu(self) -> dict[str, float]:
        return {"worker": cpu_seconds(self.worker.pid), "sink": cpu_seconds(self.sink.pid)}

    def thread_cpu(self) -> dict[str, dict[str, float]]:
        return {
            "worker": thread_cpu_seconds(self.worker.pid),
            "sink": thread_cpu_seconds(self.sink.pid),
        }


@dataclass
class PhaseResult:
    """One measured load: what was sent and when its last revision became visible."""

    name: str
    runs: int
    events: int
    seconds: float
    events_per_s: float
    runs_with_revisions: int
    revisions: int
    publish_seconds: float
    cpu_us_per_event: dict[str, float] = field(default_factory=dict)
    latency_s: dict[str, float] = field(default_factory=dict)
    # The latency's two parts, each as latency_s: "worker" from the cutoff until the
    # revision's record was produced, "sink" from then until its INSERT returned.
    latency_parts_s: dict[str, dict[str, float]] = field(default_factory=dict)
    # Per process, the share of one core each of its threads (by name) used in the phase.
    cpu_share_by_thread: dict[str, dict[str, float]] = field(default_factory=dict)
    # Per process, CPU seconds each of its threads (by name) used in the phase.
    cpu_seconds_by_thread: dict[str, dict[str, float]] = field(default_factory=dict)
    offered_rate: float | None = None
    complete: bool = True
    events_folded: int | None = None


def run_phase(
    pipe: Pipeline,
    name: str,
    spec: LoadSpec,
    *,
    timeout: float,
    echo: Callable[[str], None],
    latency: bool = False,
) -> tuple[PhaseResult, LoadResult]:
    """Publish one load, wait until it is in ClickHouse, and measure it."""
    cpu0, threads0, sampled0 = pipe.cpu(), pipe.thread_cpu(), time.monotonic()
    run_log_start = end_offsets(pipe.settings, [run_log_topic(pipe.app_id)])
    revisions_start = end_offsets(pipe.settings, [REVISIONS_TOPIC]) if latency else {}
    load = publish_load(pipe.settings, spec)
    inputs_end = end_offsets(pipe.settings, list(INPUT_TOPICS))
    try:
        pipe.drained(inputs_end, timeout)
    except PhaseTimeout as exc:
        # Report how far the worker got: run-log records it folded since the phase began.
        elapsed = time.time() - load.first_produce_at
        done = committed_offsets(pipe.settings, pipe.app_id, list(run_log_start))
        folded = sum(max(0, done[tp] - o) for tp, o in run_log_start.items())
        cpu1 = pipe.cpu()
        echo(
            f"{name}: NOT finished within {timeout:.0f} s ({exc}); the worker folded "
            f"{folded:,} of {load.events:,} events ({folded / elapsed:,.0f} events/s)"
        )
        partial = PhaseResult(
            name=name,
            runs=load.runs,
            events=load.events,
            seconds=round(elapsed, 3),
            events_per_s=round(folded / elapsed, 1),
            runs_with_revisions=0,
            revisions=0,
            publish_seconds=round(load.seconds, 3),
            cpu_us_per_event={
                k: round((cpu1[k] - cpu0[k]) / max(1, folded) * 1e6, 1) for k in ("worker", "sink")
            },
            offered_rate=spec.rate,
            complete=False,
            events_folded=folded,
        )
        return partial, load
    cpu1, threads1, sampled1 = pipe.cpu(), pipe.thread_cpu(), time.monotonic()
    pipe.acks.refresh()
    acks = pipe.acks.for_prefix(spec.prefix)
    if not acks:
        raise BenchError(f"phase {name}: no account revision of {spec.prefix}-* reached ClickHouse")
    last = max(acked for acked, _ in acks.values())
    seconds = last - load.first_produce_at
    runs_seen = len({run_id for run_id, _ in acks})
    result = PhaseResult(
        name=name,
        runs=load.runs,
        events=load.events,
        seconds=round(seconds, 3),
        events_per_s=round(load.events / seconds, 1),
        runs_with_revisions=runs_seen,
        revisions=len(acks),
        publish_seconds=round(load.seconds, 3),
        cpu_us_per_event={
            k: round((cpu1[k] - cpu0[k]) / load.events * 1e6, 1) for k in ("worker", "sink")
        },
        offered_rate=spec.rate,
        cpu_share_by_thread={
            k: thread_shares(threads0[k], threads1[k], sampled1 - sampled0)
            for k in ("worker", "sink")
        },
        cpu_seconds_by_thread={
            k: thread_deltas(threads0[k], threads1[k]) for k in ("worker", "sink")
        },
    )
    if latency:
        result.latency_s = spread([acked - cutoff / 1e6 for acked, cutoff in acks.values()])
        revisions_end = end_offsets(pipe.settings, [REVISIONS_TOPIC])
        produced = revisions_produced(pipe.settings, revisions_start, revisions_end, spec.prefix)
        result.latency_parts_s = latency_parts(acks, produced)
    if runs_seen != load.runs:
        echo(f"warning: {name}: {runs_seen} of {load.runs} runs have a revision in ClickHouse")
    echo(
        f"{name}: {load.events:,} events in {load.runs:,} runs -> {result.events_per_s:,.0f} "
        f"events/s end to end ({seconds:.1f} s; published in {load.seconds:.1f} s)"
        + (
            f"; latency p50 {result.latency_s['p50']} s, p99 {result.latency_s['p99']} s"
            if latency
            else ""
        )
    )
    for part, figures in result.latency_parts_s.items():
        echo(
            f"  of which the {part}: p50 {figures['p50']} s, p90 {figures['p90']} s, "
            f"p99 {figures['p99']} s ({figures['samples']:,} revisions)"
        )
    if latency:
        for process, shares in result.cpu_share_by_thread.items():
            top = ", ".join(f"{name} {share:.0%}" for name, share in list(shares.items())[:5])
            echo(f"  {process} threads, share of a core: {top}")
    return result, load


def spread(values: Sequence[float]) -> dict[str, float]:
    """p50, p90, p99 and max (seconds, rounded to ms) and the number of samples."""
    return {
        "p50": round(percentile(values, 0.50), 3),
        "p90": round(percentile(values, 0.90), 3),
        "p99": round(percentile(values, 0.99), 3),
        "max": round(max(values), 3),
        "samples": len(values),
    }


def latency_parts(
    acks: Mapping[tuple[str, int], tuple[float, int]],
    produced: Mapping[tuple[str, int], float],
) -> dict[str, dict[str, float]]:
    """Each revision's latency split where its record was produced: the worker's part
    (observation cutoff -> produced) and the sink's (produced -> INSERT returned).

    `acks`: (run_id, revision) -> (ack time, cutoff in microseconds), as `AckLog`;
    `produced`: (run_id, revision) -> Kafka timestamp in seconds. Revisions found in
    only one of them are left out (none, unless the topic was read short).
    """
    both = [(acks[key], at) for key, at in produced.items() if key in acks]
    if not both:
        return {}
    return {
        "worker": spread([at - cutoff / 1e6 for (_, cutoff), at in both]),
        "sink": spread([acked - at for (acked, _), at in both]),
    }


def revisions_produced(
    settings: Settings,
    start: Mapping[tuple[str, int], int],
    end: Mapping[tuple[str, int], int],
    prefix: str,
) -> dict[tuple[str, int], float]:
    """(run_id, revision) -> the Kafka timestamp (s) of its first account-revision record,
    for the runs under `prefix` among the records between `start` and `end`."""
    codec = Codec(settings)
    head = (prefix + "-").encode()
    produced: dict[tuple[str, int], float] = {}
    for batch in read_range(settings.kafka_config(), start, end):
        for message in batch:
            key, value = message.key() or b"", message.value()
            if not key.startswith(head) or value is None:
                continue
            revision = codec.decode(value).value["revision"]
            produced.setdefault((key.decode(), revision), message.timestamp()[1] / 1000)
    return produced


def raw_ceiling(
    settings: Settings,
    start: Mapping[tuple[str, int], int],
    end: Mapping[tuple[str, int], int],
    key_prefix: str | None = None,
) -> dict[str, float]:
    """Consume the records between `start` and `end` and decode them; nothing else. With
    `key_prefix`, only records keyed under it are decoded and counted (others are read)."""
    decoded, seconds = _read_range(settings, start, end, key_prefix)
    return {
        "events": decoded,
        "seconds": round(seconds, 3),
        "events_per_s": round(decoded / seconds),
    }


def pure_fold(
    settings: Settings,
    start: Mapping[tuple[str, int], int],
    end: Mapping[tuple[str, int], int],
    key_prefix: str | None = None,
) -> dict[str, float]:
    """`outcomes replay`'s work on the events between `start` and `end`: their canonical
    JSON lines (made first, untimed) read, validated, folded and the outputs written as
    JSON lines, in this process, timed by CPU (best of two passes, each on a fresh engine).
    No Kafka, no Avro, no store: the yardstick the worker's and the sink's CPU per event
    are measured against. With `key_prefix`, only events keyed under it."""
    codec = Codec(settings)
    prefix = key_prefix.encode() if key_prefix is not None else None
    found: list[tuple[int, int, bytes]] = []
    for batch in read_range(settings.kafka_config(), start, end):
        for message in batch:
            value = message.value()
            if value is None or (prefix and not (message.key() or b"").startswith(prefix)):
                continue
            try:
                event = codec.decode(value).value
            except CodecError:
                continue  # e.g. malformed test input: not an event
            stamp = codec.decode_event_fast(value)["occurred_at"]
            found.append((stamp, len(found), orjson.dumps(event)))
    # A range is read topic by topic; the worker's merge releases records in timestamp
    # order, and so does this (each run's events in the order they happened).
    found.sort()
    lines = b"".join(line + b"\n" for _, _, line in found)
    events = len(found)
    if not events:
        raise BenchError("pure fold: no events in the measured range")
    limits = Limits()
    with tempfile.TemporaryDirectory(prefix="outcomes-bench-fold-") as tmp:
        path = Path(tmp) / "events.jsonl"
        path.write_bytes(lines)
        best = float("inf")
        revisions = 0
        for _ in range(2):
            stats, out = ReplayStats(), io.BytesIO()
            began = time.process_time()
            for record in settling_state(
                replay_items(jsonl_items(path, limits), Engine(), limits, stats)
            ):
                out.write(record.to_json_line())
                out.write(b"\n")
            best = min(best, time.process_time() - began)
            gc.unfreeze()  # settling_state froze this process's heap: give it back
            revisions = stats.revisions
    return {
        "events": events,
        "revisions": revisions,
        "cpu_seconds": round(best, 3),
        "cpu_us_per_event": round(best / events * 1e6, 2),
        "events_per_cpu_s": round(events / best),
    }


def two_stage_floor(
    settings: Settings,
    start: Mapping[tuple[str, int], int],
    end: Mapping[tuple[str, int], int],
    key_prefix: str | None = None,
) -> dict[str, float]:
    """The Kafka work of the worker's two stages and nothing else, in one process: consume
    and decode the records (as `raw_ceiling`), produce each one's bytes, keyed as it was,
    to a scratch topic (the run log's settings: idempotent, lz4, linger 5 ms), then
    consume that topic. No validation, fold, state or outputs: an upper bound for any
    worker that forwards every input to a run log before folding it."""
    from confluent_kafka import Producer

    spec = next(t for t in topic_table() if t.name == RUN_LOG_TOPIC)
    scratch_app = f"outcomes-bench-floor-{os.getpid()}-{int(time.time())}"
    scratch = f"{scratch_app}-run-log"
    conf = settings.kafka_config()
    ensure_topics(conf, [replace(spec, name=scratch)])
    producer = Producer(
        {
            **conf,
            "enable.idempotence": True,
            "linger.ms": 5,
            "batch.num.messages": 10_000,
            "queue.buffering.max.messages": 1_000_000,
            "compression.type": "lz4",
            "partitioner": "murmur2_random",
        }
    )

    def forward(message: Any) -> None:
        while True:
            try:
                producer.produce(scratch, message.value(), message.key())
                return
            except BufferError:
                producer.poll(0.05)

    try:
        began = time.perf_counter()
        forwarded, _ = _read_range(settings, start, end, key_prefix, forward)
        producer.flush(60)
        first = time.perf_counter() - began
        scratch_start = {(scratch, p): 0 for p in range(PARTITIONS)}
        scratch_end = end_offsets(settings, [scratch])
        # Not decoded again: the worker hands its validated events to its fold stage and
        # decodes only run-log records that another worker forwarded.
        folded, second = _read_range(settings, scratch_start, scratch_end, decode=False)
    finally:
        delete_worker_internals(settings, scratch_app, lambda line: print(line, file=sys.stderr))
    seconds = first + second
    return {
        "events": folded,
        "forwarded": forwarded,
        "seconds": round(seconds, 3),
        "events_per_s": round(folded / seconds),
    }


def _read_range(
    settings: Settings,
    start: Mapping[tuple[str, int], int],
    end: Mapping[tuple[str, int], int],
    key_prefix: str | None = None,
    handle: Callable[[Any], None] | None = None,
    decode: bool = True,
) -> tuple[int, float]:
    """(records counted, seconds from the first record received) for the records between
    `start` and `end`, each decoded with `decode_event_fast` (unless not `decode`) and
    given to `handle`."""
    codec = Codec(settings)
    prefix = key_prefix.encode() if key_prefix is not None else None
    decoded = 0
    began = time.perf_counter()
    t0: float | None = None  # the clock starts at the first record, as the worker's does
    for batch in read_range(settings.kafka_config(), start, end):
        if t0 is None:
            t0 = time.perf_counter()
        for message in batch:
            if prefix is not None and not (message.key() or b"").startswith(prefix):
                continue  # other traffic on the shared topics: read, not counted
            value = message.value()
            if value is None:
                continue
            if decode:
                try:
                    codec.decode_event_fast(value)
                except CodecError:
                    continue  # e.g. malformed test input: not an event
            decoded += 1
            if handle is not None:
                handle(message)
    return decoded, time.perf_counter() - (t0 or began)


# --------------------------------------------------------------------------- catch-up


@dataclass
class CatchUp:
    """A new worker group folding a stretch of history: how fast, how large it grew."""

    events: int  # input records in the stretch
    seconds: float  # worker start -> every input and run-log record committed
    events_per_s: float
    peak_rss_bytes: int | None  # the worker's VmHWM when it was done
    rss_samples_mib: list[int] = field(default_factory=list)  # VmRSS every ~5 s
    complete: bool = True
    events_folded: int | None = None  # run-log records committed (when not complete)


def catch_up(
    settings: Settings,
    start: Mapping[tuple[str, int], int],
    end: Mapping[tuple[str, int], int],
    work: Path,
    *,
    timeout: float,
    echo: Callable[[str], None] = print,
    worker_args: Sequence[str] = (),
) -> CatchUp:
    """Start `outcomes worker` under a new application id (no run log, no changelog, no
    local state) at the input offsets `start`, and time it until it has committed every
    input record up to `end` and every run-log record it forwarded: the whole history
    folded, as a worker group that lost its state or a new deployment would. Its peak
    RSS is the process's VmHWM, read before it is stopped."""
    app_id = f"outcomes-{default_prefix('catchup')}"
    events = sum(max(0, o - start.get(tp, 0)) for tp, o in end.items())
    start_group_at(settings, app_id, start)
    argv = worker_argv(settings, app_id, until_idle=None, state_dir=work / app_id)
    samples: list[int] = []
    peak: int | None = None
    run_log = run_log_topic(app_id)
    began = time.monotonic()
    try:
        with Child("catch-up worker", [*argv, *worker_args], work / "catch-up.log") as worker:
            deadline, next_sample = began + timeout, began
            wanted = {tp: o for tp, o in end.items() if o > start.get(tp, 0)}
            while True:
                if worker.poll() is not None:
                    raise BenchError(
                        f"catch-up worker exited with {worker.poll()}: {worker.tail()} "
                        f"(log: {worker.log_path})"
                    )
                now = time.monotonic()
                if now >= next_sample:
                    samples.append(read_status(worker.pid).get("VmRSS", 0) // 2**20)
                    next_sample = now + 5.0
                done = committed_offsets(settings, app_id, list(wanted))
                if all(done[tp] >= o for tp, o in wanted.items()):
                    try:
                        log_end = end_offsets(settings, [run_log])
                    except DemoError:
                        log_end = {}
                    folded = committed_offsets(settings, app_id, list(log_end))
                    if log_end and all(folded[tp] >= o for tp, o in log_end.items()):
                        break
                if now > deadline:
                    peak = read_status(worker.pid).get("VmHWM")
                    try:
                        log_end = end_offsets(settings, [run_log])
                    except DemoError:  # the worker never got as far as its run log
                        log_end = {}
                    folded = committed_offsets(settings, app_id, list(log_end))
                    count = sum(max(0, o) for o in folded.values())
                    seconds = now - began
                    echo(
                        f"catch-up: NOT finished within {timeout:.0f} s; folded {count:,} of "
                        f"{events:,} events ({count / seconds:,.0f} events/s), peak RSS "
                        f"{(peak or 0) / 2**20:,.0f} MiB"
                    )
                    return CatchUp(
                        events=events,
                        seconds=round(seconds, 3),
                        events_per_s=round(count / seconds, 1),
                        peak_rss_bytes=peak,
                        rss_samples_mib=samples,
                        complete=False,
                        events_folded=count,
                    )
                time.sleep(0.25)
            seconds = time.monotonic() - began
            peak = read_status(worker.pid).get("VmHWM")
    finally:
        delete_worker_internals(settings, app_id, echo)
    result = CatchUp(
        events=events,
        seconds=round(seconds, 3),
        events_per_s=round(events / seconds, 1),
        peak_rss_bytes=peak,
        rss_samples_mib=samples,
    )
    echo(
        f"catch-up (a new worker group over the bench's history): {events:,} events in "
        f"{seconds:.1f} s -> {result.events_per_s:,.0f} events/s, start-up included; peak "
        f"RSS {(peak or 0) / 2**20:,.0f} MiB"
    )
    return result


# --------------------------------------------------------------------------- the bench


@dataclass(frozen=True)
class BenchPlan:
    """Sizes of every phase (full or --quick)."""

    throughput_runs: int
    throughput_padding: float
    latency_seconds: float
    sizes: tuple[int, ...]
    events_per_size: int
    phase_timeout: float
    size_timeout: float
    catch_up_timeout: float

    @classmethod
    def make(cls, quick: bool) -> BenchPlan:
        if quick:
            return cls(500, 4.0, 15.0, (10, 1_000, 10_000), 5_000, 180.0, 60.0, 300.0)
        return cls(2_000, 4.0, 45.0, (10, 1_000, 100_000), 20_000, 300.0, 120.0, 900.0)


def run_bench(
    *,
    quick: bool,
    bootstrap: str | None = None,
    clickhouse: str | None = None,
    workers: int = 4,
    sink_batch_seconds: float = sink_defaults.BATCH_SECONDS,
    echo: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run every phase and return the results document (see docs/benchmarks.md)."""
    plan = BenchPlan.make(quick)
    started = datetime.now(UTC)
    work = Path(tempfile.mkdtemp(prefix="outcomes-bench-"))
    dsn = clickhouse or f"chdb://{work / 'chdb'}"
    settings = Settings.load(bootstrap=bootstrap, clickhouse=dsn)
    prefix = default_prefix("bench")
    app_id, sink_group = f"outcomes-{prefix}", f"outcomes-sink-{prefix}"
    info = machine()
    echo(f"bench {prefix}: {info['nproc']} cores, {info['cpu_model']}, work dir {work}")

    ensure_broker(settings, echo)
    ensure_topics(settings.kafka_config())
    migrate_clickhouse(dsn)
    history_start = end_offsets(settings, list(INPUT_TOPICS))
    start_group_at(settings, app_id, history_start)
    start_group_at(settings, sink_group, end_offsets(settings, list(OUTPUT_TOPICS.values())))

    sink_cmd = [sys.executable, "-m", "outcomes.cli.bench", "--probe-sink", settings.bootstrap, dsn]
    sink_cmd += [sink_group, str(work / "acks.jsonl"), str(sink_batch_seconds)]
    results: dict[str, Any] = {
        "started_at": started.isoformat(),
        "mode": "quick" if quick else "full",
        "machine": info,
        "settings": {
            "agent_threads": workers,
            "sink_batch_seconds": sink_batch_seconds,
            "clickhouse": "chdb" if dsn.startswith("chdb:") else "server",
            "bootstrap": settings.bootstrap,
        },
        "plan": asdict(plan),
    }
    port = free_port()  # the worker's door: the gate the probe asks
    try:
        with (
            Child(
                "worker",
                with_web(worker_argv(settings, app_id, until_idle=None, state_dir=work), port),
                work / "worker.log",
            ) as worker,
            Child("sink", sink_cmd, work / "sink.log") as sink,
        ):
            pipe = Pipeline(settings, app_id, sink_group, worker, sink, AckLog(work / "acks.jsonl"))

            def spec(name: str, runs: int, **kw: Any) -> LoadSpec:
                return LoadSpec(
                    runs=runs, prefix=f"{prefix}-{name}", workers=workers, stamp_now=True, **kw
                )

            t0 = time.monotonic()
            pipe.wait_for_run_log(timeout=120)
            warm, _ = run_phase(pipe, "warm-up", spec("warm", 70), timeout=180, echo=echo)
            results["warm_up"] = asdict(warm) | {"startup_seconds": round(time.monotonic() - t0)}

            before = end_offsets(settings, list(INPUT_TOPICS))
            tput, _ = run_phase(
                pipe,
                "throughput",
                spec(
                    "tput",
                    plan.throughput_runs,
                    padding_mean=plan.throughput_padding,
                    size_distribution="exponential",
                ),
                timeout=plan.phase_timeout,
                echo=echo,
            )
            after = end_offsets(settings, list(INPUT_TOPICS))
            results["throughput"] = asdict(tput)
            ceiling = raw_ceiling(settings, before, after)
            results["raw_ceiling"] = ceiling
            echo(f"raw ceiling (consume + decode_event_fast): {ceiling['events_per_s']:,} events/s")
            fold = pure_fold(settings, before, after)
            results["pure_fold"] = fold
            echo(
                f"pure fold (`outcomes replay`'s work, same events): {fold['cpu_us_per_event']} "
                f"us of CPU per event ({fold['events_per_cpu_s']:,} events/s of CPU)"
            )
            echo_stages(results, "throughput", echo)

            rate = max(1.0, tput.events_per_s / 2)
            mean_events = tput.events / max(1, tput.runs)
            lat_runs = max(7, int(rate * plan.latency_seconds / mean_events))
            probe = GateProbe(
                settings, f"http://127.0.0.1:{port}", read_token(work, app_id), f"{prefix}-gate"
            )
            probe.start()
            latency, _ = run_phase(
                pipe,
                "latency at half load",
                spec(
                    "lat",
                    lat_runs,
                    padding_mean=plan.throughput_padding,
                    size_distribution="exponential",
                    rate=rate,
                ),
                timeout=plan.phase_timeout,
                echo=echo,
                latency=True,
            )
            probe.stop()
            results["latency"] = asdict(latency)
            results["gate"] = gate_figures(probe)
            echo_gate(results["gate"], echo)
            echo_stages(results, "latency", echo)
            results["peak_rss_bytes"] = {
                "worker": read_status(worker.pid).get("VmHWM"),
                "sink": read_status(sink.pid).get("VmHWM"),
            }

            # Smallest runs first: a size the worker cannot finish in its budget ends
            # the sweep (its backlog would distort anything measured after it).
            per_size: dict[str, Any] = {}
            for size in plan.sizes:
                runs = max(1, plan.events_per_size // size)
                padding = padding_for_size("clean", size)
                phase, _ = run_phase(
                    pipe,
                    f"runs of {size:,} events",
                    spec(f"size{size}", runs, padding_mean=padding, scenarios=("clean",)),
                    timeout=plan.size_timeout if size > 1_000 else plan.phase_timeout,
                    echo=echo,
                )
                per_size[str(size)] = asdict(phase) | {
                    "wall_us_per_event": round(1e6 / phase.events_per_s, 1)
                    if phase.events_per_s
                    else None
                }
                if not phase.complete:
                    break
            results["per_event_cost"] = per_size
            results["peak_rss_bytes_after_size_sweep"] = {
                "worker": read_status(worker.pid).get("VmHWM"),
                "sink": read_status(sink.pid).get("VmHWM"),
            }
        # The worker and the sink have stopped: a new worker group folds everything the
        # phases above published, on a machine as quiet as the bench found it.
        catch = catch_up(
            settings,
            history_start,
            end_offsets(settings, list(INPUT_TOPICS)),
            work,
            timeout=plan.catch_up_timeout,
            echo=echo,
        )
        results["catch_up"] = asdict(catch)
    finally:
        delete_worker_internals(settings, app_id, echo)
        tidy_work_dir(work)
    results["finished_at"] = datetime.now(UTC).isoformat()
    results["machine"]["loadavg_at_end"] = list(os.getloadavg())
    results["targets"] = targets(results)
    results["work_dir"] = str(work)
    return results


def with_web(argv: list[str], port: int) -> list[str]:
    """A worker's argv with its door on `port` (the gate) instead of `--no-web`."""
    return [*(a for a in argv if a != "--no-web"), "--web-port", str(port)]


def gate_figures(probe: GateProbe) -> dict[str, Any]:
    """What the probe saw during the half-load phase (issue #35's latency)."""
    figures: dict[str, Any] = {"checks": len(probe.latencies), "decisions": probe.decisions}
    if probe.latencies:
        figures["latency_s"] = spread(probe.latencies)
    figures["failures"] = probe.failures[:5]
    figures["failed"] = len(probe.failures)
    return figures


def echo_gate(gate: Mapping[str, Any], echo: Callable[[str], None]) -> None:
    if "latency_s" not in gate:
        echo(f"gate: no check answered ({gate['failed']} failed: {gate['failures'][:2]})")
        return
    lat = gate["latency_s"]
    echo(
        f"gate at half load: {gate['checks']} checks, p50 {lat['p50']} s, p99 {lat['p99']} s "
        f"(read your writes included; decisions {gate['decisions']}, {gate['failed']} failed)"
    )


def tidy_work_dir(work: Path) -> None:
    """Remove the data the worker and the sink left in the work dir (RocksDB stores and
    chDB files: gigabytes after a full run); their logs and the ack log stay."""
    for path in work.iterdir():
        if path.is_dir():
            shutil.rmtree(path)


def targets(results: Mapping[str, Any]) -> dict[str, Any]:
    """Issue #20's targets, each with its measured value (a ratio within this run) and
    whether it was met. The faust engine's target is `outcomes.bench.bench_worker`'s."""
    fold = float(results["pure_fold"]["cpu_us_per_event"])
    cpu = results["throughput"]["cpu_us_per_event"]
    worker, sink = float(cpu["worker"]) / fold, float(cpu["sink"]) / fold
    e2e = float(results["throughput"]["events_per_s"]) / float(
        results["raw_ceiling"]["events_per_s"]
    )
    p99 = float(results["latency"]["latency_s"]["p99"])
    return {
        "worker_cpu_per_event<=2x_pure_fold": {
            "value": round(worker, 2),
            "met": worker <= TARGET_WORKER_X_FOLD,
        },
        "sink_cpu_per_event<=0.5x_pure_fold": {
            "value": round(sink, 2),
            "met": sink <= TARGET_SINK_X_FOLD,
        },
        "e2e>=0.15x_raw_ceiling": {"value": round(e2e, 4), "met": e2e >= TARGET_E2E_X_CEILING},
        "p99_at_half_load<1s": {"value": p99, "met": p99 < TARGET_P99_S},
        **gate_targets(results.get("gate") or {}),
        **catch_up_targets(results),
    }


def catch_up_targets(results: Mapping[str, Any]) -> dict[str, Any]:
    """Issue #36's: catch-up at least as fast as end to end on the mixed runs (the
    throughput phase), and its peak RSS within 1 GiB."""
    catch = results.get("catch_up")
    if not catch:
        return {}
    rate = float(catch["events_per_s"]) if catch["complete"] else 0.0
    ratio = rate / float(results["throughput"]["events_per_s"])
    peak = catch["peak_rss_bytes"]
    return {
        "catch_up>=e2e_mixed_runs": {"value": round(ratio, 2), "met": ratio >= 1.0},
        "catch_up_peak_rss<=1GiB": {
            "value": round(peak / 2**20) if peak is not None else None,
            "met": peak is not None and peak <= TARGET_CATCH_UP_PEAK_RSS,
        },
    }


def gate_targets(gate: Mapping[str, Any]) -> dict[str, Any]:
    lat = gate.get("latency_s")
    if lat is None:
        return {}
    p50, p99 = float(lat["p50"]), float(lat["p99"])
    return {
        "gate_p50_at_half_load<=50ms": {"value": p50, "met": p50 <= TARGET_GATE_P50_S},
        "gate_p99_at_half_load<=250ms": {"value": p99, "met": p99 <= TARGET_GATE_P99_S},
    }


def stage_costs(results: Mapping[str, Any], phase: str) -> dict[str, dict[str, float]]:
    """A phase's CPU by process and thread name, in microseconds per event and per
    revision, and as a multiple of the pure fold's CPU per event."""
    data = results[phase]
    fold = float(results["pure_fold"]["cpu_us_per_event"])
    events, revisions = max(1, int(data["events"])), max(1, int(data["revisions"]))
    stages: dict[str, dict[str, float]] = {}
    for process, threads in data.get("cpu_seconds_by_thread", {}).items():
        for name, seconds in sorted(threads.items(), key=lambda item: -item[1]):
            if seconds * 1e6 / events < 0.5:
                continue  # under half a microsecond per event: left out
            per_event = seconds * 1e6 / events
            stages[f"{process} {name}"] = {
                "us_per_event": round(per_event, 1),
                "us_per_revision": round(seconds * 1e6 / revisions, 1),
                "x_pure_fold": round(per_event / fold, 2),
            }
    for process, per_event in data["cpu_us_per_event"].items():
        stages[f"{process} (all threads)"] = {
            "us_per_event": per_event,
            "us_per_revision": round(float(per_event) * events / revisions, 1),
            "x_pure_fold": round(float(per_event) / fold, 2),
        }
    return stages


def echo_stages(results: Mapping[str, Any], phase: str, echo: Callable[[str], None]) -> None:
    """Print a phase's CPU per stage against the pure fold's CPU per event."""
    fold = results["pure_fold"]["cpu_us_per_event"]
    echo(f"  CPU by stage, {phase} phase (pure fold {fold} us/event = 1x):")
    for stage, figures in stage_costs(results, phase).items():
        echo(
            f"    {stage:<26} {figures['us_per_event']:7.1f} us/event "
            f"{figures['us_per_revision']:8.1f} us/revision  {figures['x_pure_fold']:5.2f}x"
        )


def default_results_dir() -> Path:
    """`bench/results` of the source checkout (else ./bench-results)."""
    checkout = Path(__file__).resolve().parent.parent / "bench"
    return checkout / "results" if checkout.is_dir() else Path.cwd() / "bench-results"


def print_report(results: Mapping[str, Any], echo: Callable[[str], None] = print) -> None:
    """A short human summary of a results document."""
    m = results["machine"]
    echo(f"machine: {m['nproc']} cores, {m['memory_gib']} GiB, {m['cpu_model']}")
    echo(f"end to end: {results['throughput']['events_per_s']:,} events/s")
    echo(f"raw ceiling: {results['raw_ceiling']['events_per_s']:,} events/s")
    fold = results["pure_fold"]
    echo(f"pure fold: {fold['cpu_us_per_event']} us of CPU per event (`outcomes replay`'s work)")
    for phase in ("throughput", "latency"):
        cpu = results[phase]["cpu_us_per_event"]
        echo(
            f"{phase}: worker CPU {cpu['worker']} us/event "
            f"({cpu['worker'] / fold['cpu_us_per_event']:.2f}x the pure fold), sink CPU "
            f"{cpu['sink']} us/event ({cpu['sink'] / fold['cpu_us_per_event']:.2f}x)"
        )
    lat = results["latency"]
    echo(
        f"latency at {lat['offered_rate']:,.0f} events/s: p50 {lat['latency_s']['p50']} s, "
        f"p99 {lat['latency_s']['p99']} s"
        + "".join(
            f"; {part} p50 {figures['p50']} s, p99 {figures['p99']} s"
            for part, figures in lat.get("latency_parts_s", {}).items()
        )
    )
    if results.get("gate"):
        echo_gate(results["gate"], echo)
    for size, phase in results["per_event_cost"].items():
        done = "" if phase["complete"] else f" (NOT finished: {phase['events_folded']:,} folded)"
        echo(
            f"runs of {int(size):,} events: {phase['wall_us_per_event']} us/event wall, "
            f"worker CPU {phase['cpu_us_per_event']['worker']}, "
            f"sink CPU {phase['cpu_us_per_event']['sink']} us/event{done}"
        )
    for label, key in (
        ("mixed runs", "peak_rss_bytes"),
        ("after sizes", "peak_rss_bytes_after_size_sweep"),
    ):
        rss = results[key]
        echo(
            f"peak RSS ({label}): worker {rss['worker'] / 2**20:.0f} MiB, "
            f"sink {rss['sink'] / 2**20:.0f} MiB"
        )
    catch = results.get("catch_up")
    if catch:
        done = "" if catch["complete"] else f" (NOT finished: {catch['events_folded']:,} folded)"
        echo(
            f"catch-up: {catch['events']:,} events, {catch['events_per_s']:,} events/s, peak RSS "
            f"{(catch['peak_rss_bytes'] or 0) / 2**20:.0f} MiB{done}"
        )
    for name, verdict in results["targets"].items():
        echo(f"target {name}: {verdict['value']} -> {'met' if verdict['met'] else 'NOT met'}")
