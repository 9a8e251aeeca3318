"""Replay throughput of the pure core, side by side with the cost of just parsing JSON.

Prints figures; asserts nothing. Run: `.venv/bin/python -m outcomes.bench.bench_replay`.
Throughput is given by wall clock and by this process's CPU time: on a shared, busy
machine the wall figure also counts time spent waiting for a core.
Measures, in one process on one core:
  1. events/s of `json.loads` alone over a generated JSONL mix (the floor of any replay);
  2. events/s of the replay path (validate, fold, assemble, serialise outputs);
  3. per-event cost as a run grows from 10 to 100,000 events (the mean over many runs
     for the small sizes);
  4. peak RSS for 1M events in 10,000 runs (in a child process, so it is measured alone).
With `--stages`, instead: where a replay's time goes (reading, `orjson.loads`, validation,
the fold and its account assembly, serialising the outputs), for both mixes, with the
runs interleaved as in 2 and with one run's events after another.
With `--claims`, instead: what claim checking costs the replay path (issue 33: at most
10% on the agent-sized mix; issue 25 asked 5%), for both mixes: replays with the fold as
it is and with narratives not judged (the fold's `_verdicts` answering nothing),
alternated in pairs in this one process, so the machine's load falls on both sides
alike; prints each pair's ratio and their median.
"""

from __future__ import annotations

import argparse
import io
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from outcomes.common.runtime import tune_gc
from outcomes.devtools.workload import generate_run, generate_runs, interleave
from outcomes.reducers import engine as engine_module
from outcomes.reducers.engine import Engine, fold
from outcomes.reducers.limits import Limits
from outcomes.reducers.state import RunState
from outcomes.reducers.validate import event_parser, parse_event
from outcomes.streams.replay import ReplayStats, jsonl_items, replay_items, settling_state


def write_mix(path: Path, runs: int, padding: int, seed: int = 7, *, mixed: bool = True) -> int:
    """Write a JSONL mix; `mixed`: runs interleaved as concurrent agents would, else one
    run's events after another."""
    generated = list(generate_runs(runs, seed=seed, padding=padding))
    events = interleave(generated, seed=seed) if mixed else [e for run in generated for e in run]
    with path.open("wb") as handle:
        for event in events:
            handle.write(orjson.dumps(event))
            handle.write(b"\n")
    return len(events)


def time_json_only(path: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of `json.loads` over every line."""
    start, cpu = time.perf_counter(), time.process_time()
    with path.open("rb") as handle:
        for line in handle:
            json.loads(line)
    return time.perf_counter() - start, time.process_time() - cpu


def time_replay(path: Path) -> tuple[float, float, ReplayStats, int]:
    """(wall seconds, CPU seconds, counts, bytes written) of the replay path."""
    limits = Limits()
    stats = ReplayStats()
    sink = io.BytesIO()
    start, cpu = time.perf_counter(), time.process_time()
    records = replay_items(jsonl_items(path, limits), Engine(), limits, stats)
    for record in settling_state(records):  # as `outcomes replay` does
        sink.write(record.to_json_line())
        sink.write(b"\n")
    return time.perf_counter() - start, time.process_time() - cpu, stats, sink.tell()


def per_event_cost(size: int, budget: int = 100_000) -> tuple[float, float, int, int]:
    """(wall and CPU microseconds per event, events, runs) of folding runs of about
    `size` events, one run after another (pre-parsed).

    As many runs as make about `budget` events: one run of 10 events takes ~0.1 ms, too
    short to time alone (the first one also pays for cold caches), so small sizes are
    the mean over many runs of that size.
    """
    padding = max(0, (size - 9) // 2)
    runs = max(1, budget // size)
    events = [
        parse_event(e)
        for index in range(runs)
        for e in generate_run(f"grow-{index}", "late_receipt", padding=padding)
    ]
    engine = Engine()
    start, cpu = time.perf_counter(), time.process_time()
    for event in events:
        for record in engine.apply(event):
            record.to_json_line()
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return wall / len(events) * 1e6, cpu / len(events) * 1e6, len(events), runs


@contextmanager
def timing_assembly() -> Iterator[list[float]]:
    """Within the block, the fold's calls to `assemble` add their seconds to the list."""
    original = engine_module.assemble
    spent = [0.0]

    def timed(state: RunState) -> dict[str, Any] | None:
        start = time.perf_counter()
        try:
            return original(state)
        finally:
            spent[0] += time.perf_counter() - start

    engine_module.assemble = timed
    try:
        yield spent
    finally:
        engine_module.assemble = original


def stage_costs(path: Path) -> dict[str, float]:
    """Microseconds per event of each stage of a replay of `path`, run one after another
    over the whole file (each stage's input made by the one before)."""
    clock = time.perf_counter
    costs: dict[str, float] = {}

    def stage(name: str, work: Callable[[], Any]) -> Any:
        start = clock()
        result = work()
        costs[name] = clock() - start
        return result

    lines = stage("read lines", lambda: path.read_bytes().splitlines())
    values = stage("orjson.loads", lambda: [orjson.loads(line) for line in lines])
    parse = event_parser(Limits())
    events = stage("validate", lambda: [parse(value) for value in values])
    engine = Engine()

    def fold_all() -> list[Any]:
        outputs: list[Any] = []
        for event in settling_state(events):  # gc.freeze() as the replay does
            outputs += fold(engine.state(event.run_id), event)[1]
        return outputs

    with timing_assembly() as assembly:
        outputs = stage("fold", fold_all)
    costs["  of which assembly"] = assembly[0]
    stage("serialise outputs", lambda: [record.to_json_line() for record in outputs])
    return {name: seconds / len(events) * 1e6 for name, seconds in costs.items()}


def print_stages(mixes: list[tuple[str, int, int]]) -> None:
    for title, runs, padding in mixes:
        columns = []
        for mixed in (True, False):
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "mix.jsonl"
                count = write_mix(path, runs, padding, mixed=mixed)
                columns.append(stage_costs(path))
        print(
            f"{title}: {count:,} events in {runs:,} runs ({count / runs:.1f} per run); "
            "us/event, runs interleaved / one after another"
        )
        for name in columns[0]:
            print(f"  {name:<20} {columns[0][name]:6.2f} / {columns[1][name]:6.2f}")
        totals = [sum(v for k, v in c.items() if not k.startswith(" ")) for c in columns]
        print(
            f"  {'total':<20} {totals[0]:6.2f} / {totals[1]:6.2f} "
            f"({1e6 / totals[0]:,.0f} / {1e6 / totals[1]:,.0f} events/s)"
        )


@contextmanager
def claims_unjudged() -> Iterator[None]:
    """Within the block, the fold keeps and judges no narrative: no reading, no verdicts,
    nothing to settle again on later revisions."""
    original = engine_module._verdicts
    engine_module._verdicts = lambda state, narrative: []
    try:
        yield
    finally:
        engine_module._verdicts = original


def print_claims_cost(mixes: list[tuple[str, int, int]], pairs: int) -> None:
    for title, runs, padding in mixes:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "mix.jsonl"
            count = write_mix(path, runs, padding)
            ratios, on_rates, off_rates = [], [], []
            for index in range(pairs):
                # alternate which side runs first, so neither always meets a warm cache
                order = (True, False) if index % 2 == 0 else (False, True)
                cpu: dict[bool, float] = {}
                for judged in order:
                    if judged:
                        cpu[judged] = time_replay(path)[1]
                    else:
                        with claims_unjudged():
                            cpu[judged] = time_replay(path)[1]
                on_rates.append(count / cpu[True])
                off_rates.append(count / cpu[False])
                ratios.append(cpu[False] / cpu[True])
        print(f"{title}: {count:,} events in {runs:,} runs; events/s of CPU time")
        for on, off, ratio in zip(on_rates, off_rates, ratios, strict=True):
            print(f"  claims judged {on:>9,.0f}  not judged {off:>9,.0f}  ratio {ratio:.3f}")
        median = sorted(ratios)[len(ratios) // 2]
        print(
            f"  median ratio {median:.3f}: claim checking costs {1 - median:.1%} of replay "
            "throughput (target, issue 33: at most 10% on the agent-sized mix)"
        )


def peak_rss_child(runs: int, events_per_run: int) -> None:
    """Child mode: replay runs x events_per_run events from memory and print peak RSS."""
    engine = Engine()
    padding = max(0, (events_per_run - 13) // 2)
    total = 0
    for run in generate_runs(runs, seed=3, padding=padding):
        for event in run:
            engine.apply(parse_event(event))
            total += 1
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"events": total, "runs": runs, "peak_rss_mib": round(peak_kib / 1024, 1)}))


def main() -> None:
    tune_gc()  # as `outcomes replay` does
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20_000, help="runs in the small-run mix")
    parser.add_argument("--padding", type=int, default=4, help="extra tool calls per small run")
    parser.add_argument("--memory-child", nargs=2, type=int, metavar=("RUNS", "EVENTS_PER_RUN"))
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--stages", action="store_true", help="where the time goes, by stage")
    parser.add_argument(
        "--claims", type=int, metavar="PAIRS", help="claim checking's cost, in PAIRS pairs"
    )
    args = parser.parse_args()
    if args.memory_child:
        peak_rss_child(*args.memory_child)
        return

    mixes = [
        (f"small runs ({args.padding} extra tool calls each)", args.runs, args.padding),
        ("agent-sized runs (30 extra tool calls each)", max(1, args.runs // 5), 30),
    ]
    if args.stages:
        print_stages(mixes)
        return
    if args.claims:
        print_claims_cost(mixes, args.claims)
        return
    for title, runs, padding in mixes:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "mix.jsonl"
            count = write_mix(path, runs, padding)
            size_mib = path.stat().st_size / 2**20
            json_s, json_cpu = time_json_only(path)
            replay_s, replay_cpu, stats, out_bytes = time_replay(path)
        print(
            f"{title}: {count:,} events in {runs:,} runs ({count / runs:.1f} per run, "
            f"{size_mib:.1f} MiB JSONL)"
        )
        print(
            f"  json.loads only : {count / json_s:>10,.0f} events/s "
            f"({count / json_cpu:,.0f} events/s of CPU time)"
        )
        print(
            f"  replay          : {count / replay_s:>10,.0f} events/s "
            f"({count / replay_cpu:,.0f} events/s of CPU time; "
            f"{replay_s / json_s:.2f}x the json.loads cost, {replay_cpu / json_cpu:.2f}x in CPU)"
        )
        print(f"    {stats.summary()}; {out_bytes / 2**20:.1f} MiB written")
    print("per-event cost as runs grow (wall / CPU; runs of one size folded one after another):")
    for size in (10, 100, 1_000, 10_000, 100_000):
        micros, cpu_micros, events, runs = per_event_cost(size)
        print(
            f"  runs of {events // runs:>7,} events ({runs:>6,} runs): "
            f"{micros:6.2f} / {cpu_micros:6.2f} us/event"
        )
    if not args.skip_memory:
        result = subprocess.run(
            [sys.executable, "-m", "outcomes.bench.bench_replay", "--memory-child", "10000", "100"],
            check=True,
            capture_output=True,
            text=True,
        )
        figures = json.loads(result.stdout)
        print(
            f"peak RSS: {figures['peak_rss_mib']} MiB for {figures['events']:,} events "
            f"in {figures['runs']:,} runs"
        )


if __name__ == "__main__":
    main()
