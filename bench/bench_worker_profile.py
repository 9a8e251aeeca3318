"""Where the batch worker's CPU per revision goes, in one process, on the same records.

The worker's two stages without Kafka: each input record is ingested as
`streams/worker_batch.py` does it (`ingest_record`: decode and validate), then folded by a
`RunFolder` over an in-memory store (the handed-off event, the store append with its
applied-at position), and each output encoded to Avro as `_publish` does. Kafka
(consume, produce, acknowledgements, the changelog's produce) is left out: it is
measured by `outcomes bench`'s raw ceiling and two-stage floor. The pure fold
(`outcomes replay`'s work: JSON lines in, validate, fold, JSON lines out) runs on the
same events, as the yardstick.

Loads: `--runs` runs of the bench's throughput mix (every scenario in turn, exponential
sizes of mean padding 4; ~12 events per run), events stamped in order and interleaved
as concurrent agents publish. Each stage's CPU is timed per record (`process_time` is too
coarse; `perf_counter` around each call, one core, best of `--passes`), then one pass
runs under cProfile and prints the functions with the most own time.

    .venv/bin/python -m outcomes.bench.bench_worker_profile [--runs 2000] [--passes 3]
        [--profile 25]

Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import pstats
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from outcomes.common.codec import Codec
from outcomes.common.runtime import freeze_survivors
from outcomes.common.settings import Settings
from outcomes.devtools.loadgen import LoadSpec, plan_runs
from outcomes.devtools.workload import Event, generate_run, interleave
from outcomes.reducers.engine import Engine
from outcomes.reducers.limits import Limits
from outcomes.reducers.records import OutputRecord
from outcomes.reducers.timefmt import format_rfc3339
from outcomes.streams.ingest import ingest_record
from outcomes.streams.replay import ReplayStats, jsonl_items, replay_items, settling_state
from outcomes.streams.runfold import Origin, RunFolder
from outcomes.streams.store import MemoryEventStore

_TOPIC = "bench-input"
_RUN_LOG = "bench-run-log"


def mixed_load(runs: int, seed: int = 0, prefix: str = "prof") -> list[Event]:
    """The bench's throughput mix: `runs` runs, exponential sizes, interleaved, stamped
    one microsecond apart in publish order (as `--stamp-now` agents would)."""
    spec = LoadSpec(
        runs=runs, seed=seed, prefix=prefix, padding_mean=4.0, size_distribution="exponential"
    )
    planned = [generate_run(p.run_id, p.scenario, p.padding, seed) for p in plan_runs(spec)]
    events = interleave(planned, seed=seed)
    base = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z
    for n, event in enumerate(events):
        event["occurred_at"] = format_rfc3339(base + n)
    return events


@dataclass
class StageTimes:
    """Seconds per stage of one pass, and what the pass made."""

    seconds: dict[str, float] = field(default_factory=dict)
    events: int = 0
    outputs: int = 0
    revisions: int = 0

    def add(self, stage: str, seconds: float) -> None:
        self.seconds[stage] = self.seconds.get(stage, 0.0) + seconds


def worker_pass(records: Sequence[bytes], settings: Settings, codec: Codec) -> StageTimes:
    """The worker's per-record work on `records`, each stage timed."""
    folder = RunFolder(MemoryEventStore(), codec.decode_event_fast, settings.limits)
    times = StageTimes(events=len(records))
    clock = time.perf_counter
    encode = codec.encode_output
    ingest_s = fold_s = encode_s = 0.0
    for offset, raw in enumerate(records):
        t0 = clock()
        event = ingest_record(codec, settings, raw, _TOPIC, 0, offset)
        t1 = clock()
        assert not isinstance(event, OutputRecord), event.body
        outputs = folder.process(event.run_id, raw, Origin(_RUN_LOG, 0, offset), event)
        t2 = clock()
        for record in outputs:
            encode(record)
        t3 = clock()
        ingest_s += t1 - t0
        fold_s += t2 - t1
        encode_s += t3 - t2
        times.outputs += len(outputs)
        times.revisions += sum(1 for r in outputs if r.kind == "account_revision")
    times.add("ingest (decode + validate)", ingest_s)
    times.add("fold (RunFolder.process: state, store)", fold_s)
    times.add("encode outputs (Avro)", encode_s)
    return times


def fold_only_pass(records: Sequence[bytes], settings: Settings, codec: Codec) -> StageTimes:
    """`RunFolder.process` alone, split into the reducer's fold and the rest (the store,
    the checks): a second folder over the same events, the events pre-parsed."""
    parsed = [ingest_record(codec, settings, raw, _TOPIC, 0, n) for n, raw in enumerate(records)]
    engine = Engine()
    times = StageTimes(events=len(records))
    clock = time.perf_counter
    t0 = clock()
    for event in parsed:
        assert not isinstance(event, OutputRecord)
        engine.apply(event)
    times.add("reducer fold alone (Engine.apply)", clock() - t0)
    return times


def pure_fold_pass(lines: bytes, limits: Limits) -> StageTimes:
    """`outcomes replay`'s work, as `outcomes bench`'s pure fold measures it."""
    with tempfile.TemporaryDirectory(prefix="outcomes-prof-") as tmp:
        path = Path(tmp) / "events.jsonl"
        path.write_bytes(lines)
        stats, out = ReplayStats(), io.BytesIO()
        began = time.perf_counter()
        for record in settling_state(
            replay_items(jsonl_items(path, limits), Engine(), limits, stats)
        ):
            out.write(record.to_json_line())
            out.write(b"\n")
        seconds = time.perf_counter() - began
    # Not `gc.unfreeze()`: that would hand the load and everything frozen so far back to
    # the collector, and the next pass would pay for scanning it.
    times = StageTimes(events=stats.read, revisions=stats.revisions)
    times.add("pure fold (replay)", seconds)
    return times


def best(passes: Sequence[StageTimes]) -> StageTimes:
    """Per stage, the fastest pass (the least disturbed by other processes)."""
    out = StageTimes(events=passes[0].events, outputs=passes[0].outputs)
    out.revisions = passes[0].revisions
    for stage in passes[0].seconds:
        out.seconds[stage] = min(p.seconds[stage] for p in passes)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2_000, help="runs in the load")
    parser.add_argument("--passes", type=int, default=3, help="timed passes (best is kept)")
    parser.add_argument(
        "--profile", type=int, default=25, help="cProfile's top functions by own time (0: none)"
    )
    args = parser.parse_args(argv)
    settings = Settings.load()
    codec = Codec(settings)
    events = mixed_load(args.runs)
    records = [codec.encode_event(e) for e in events]
    lines = b"".join(orjson.dumps(e) + b"\n" for e in events)

    # As the worker runs: survivors of a young collection are frozen (run state), and the
    # load itself is out of the collector's view.
    freeze_survivors()
    gc.freeze()
    # The three kinds of pass take turns, round after round: which pass follows which
    # moves a figure by up to half (the allocator reuses what the previous pass freed),
    # so each kind's best comes from the same mix of positions.
    rounds = [
        (
            pure_fold_pass(lines, settings.limits),
            worker_pass(records, settings, codec),
            fold_only_pass(records, settings, codec),
        )
        for _ in range(args.passes)
    ]
    pure, worker, reducer = (best([r[kind] for r in rounds]) for kind in range(3))

    fold_us = pure.seconds["pure fold (replay)"] / pure.events * 1e6
    revisions = max(1, worker.revisions)
    total = sum(worker.seconds.values())
    print(
        f"{worker.events:,} events in {args.runs:,} runs -> {worker.outputs:,} outputs, "
        f"{worker.revisions:,} account revisions ({worker.events / revisions:.2f} events per "
        f"revision); best of {args.passes} passes"
    )
    print(f"pure fold: {fold_us:.1f} us per event ({pure.revisions:,} revisions) = 1x")
    print(f"{'stage':<42} {'us/event':>9} {'us/revision':>12} {'share':>6} {'x fold':>7}")
    rows = [*worker.seconds.items(), ("worker stages, all", total), *reducer.seconds.items()]
    for stage, seconds in rows:
        per_event = seconds / worker.events * 1e6
        print(
            f"{stage:<42} {per_event:9.1f} {seconds / revisions * 1e6:12.1f} "
            f"{seconds / total:6.1%} {per_event / fold_us:7.2f}"
        )
    if args.profile:
        profile = cProfile.Profile()
        profile.enable()
        worker_pass(records, settings, codec)
        profile.disable()
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(args.profile)
        print(out.getvalue())


if __name__ == "__main__":
    main()
