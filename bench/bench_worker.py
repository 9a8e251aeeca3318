"""`outcomes worker` throughput on the dev broker, beside the raw consume+decode ceiling.

One run measures, against the real broker:
- sustained events/s through the worker (both stages) for a pre-produced generated load:
  from the first run-log record the worker wrote (its first event consumed) to the last
  output record it produced, both by Kafka record timestamps; plus the ingest stage alone
  (first to last run-log record) and the wall time including start-up;
- the raw ceiling: the same input records consumed with confluent-kafka and decoded with
  `Codec().decode_event_fast`, nothing else, in this process;
- the two-stage floor: the same, then each record forwarded to a scratch topic and that
  topic consumed: the Kafka work any worker with a run log must do
  (`outcomes.devtools.bench.two_stage_floor`);
- the worker's peak RSS (VmHWM from /proc/<pid>/status);
- with the faust engine, a bare faust agent over the same records (consume and decode,
  nothing else: bench/faust_bare.py), the faust engine's yardstick; with
  `--faust-baseline REV`, also the faust engine as it was at commit REV, on the same
  records (bench/faust_baseline.py);
- per-event cost as runs grow: loads made of runs of ~10, ~1,000 and ~10,000 events,
  produced live (while the worker runs, each run in order) and as a backlog.

The main load is produced once, keyed by run_id with Kafka's murmur2 partitioner (the
Java clients' default and the worker's own), so a run's records sit on its run-log
partition in every topic, and every engine reads the same records. Each load gets its
own consumer group that starts at the current ends (as the worker tests do,
devtools/harness.py), so earlier traffic is not re-read. Prints figures; asserts
nothing.

    .venv/bin/python -m outcomes.bench.bench_worker [--events 50000] [--size-events 10000]
        [--engines batch,faust] [--faust-baseline REV]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from outcomes.common.codec import Codec
from outcomes.common.settings import Settings
from outcomes.devtools.bench import pure_fold, raw_ceiling, two_stage_floor
from outcomes.devtools.harness import (
    Event,
    KafkaConfig,
    TopicOffsets,
    WorkerProcess,
    commit_offsets,
    delete_app,
    end_offsets,
    finish,
    isolate_group,
    produce_events,
    unique_name,
    wait_for,
)
from outcomes.devtools.workload import SCENARIOS, generate_run, generate_runs, interleave
from outcomes.reducers.catalog import INPUT_TOPICS
from outcomes.streams.topics import read_range


@dataclass(frozen=True)
class WorkerFigures:
    """What one worker run over one load measured."""

    events: int
    runs: int
    seconds: float  # first run-log record -> last output record
    ingest_seconds: float  # first -> last run-log record
    wall_seconds: float  # process start -> exit
    outputs: int
    peak_rss_mib: float
    forwarded: int | None = None  # records the worker sent through its run log

    @property
    def rate(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else float("nan")

    @property
    def micros_per_event(self) -> float:
        return self.seconds / self.events * 1e6


def peak_rss_mib(pid: int) -> float | None:
    """VmHWM of a live process, in MiB (None once it has exited)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def timestamps(
    config: KafkaConfig, start: TopicOffsets, prefix: str | None
) -> tuple[int, list[int]]:
    """(records, their Kafka timestamps in ms) from `start` to the current ends, only
    records keyed under `prefix` when given."""
    ends = end_offsets(config, {t for t, _ in start})
    wanted = prefix.encode() if prefix is not None else b""
    stamps = [
        msg.timestamp()[1]
        for batch in read_range(config, start, ends)
        for msg in batch
        if (msg.key() or b"").startswith(wanted)
    ]
    return len(stamps), stamps


@dataclass
class EngineFileWorker(WorkerProcess):
    """A worker running the faust engine module in `engine_file` (bench/faust_baseline.py)."""

    engine_file: Path = field(default_factory=Path)

    def _command(self) -> list[str]:
        return [sys.executable, "-m", "outcomes.bench.faust_baseline", str(self.engine_file)]


def engine_at(revision: str, tmp: Path) -> Path:
    """`streams/worker_faust.py` as it was at `revision`, written to a file in `tmp`."""
    text = subprocess.run(
        ["git", "show", f"{revision}:streams/worker_faust.py"],
        cwd=Path(__file__).resolve().parent.parent, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    path = tmp / f"worker_faust_{revision.replace('/', '_')}.py"
    path.write_text(text)
    return path


def run_worker(
    config: KafkaConfig,
    bootstrap: str,
    events: Sequence[Event],
    prefix: str,
    tmp: Path,
    engine: str = "batch",
    produced_from: TopicOffsets | None = None,
    live: bool = False,
    workers: int = 1,
    worker_args: Sequence[str] = (),
    engine_file: Path | None = None,
) -> WorkerFigures:
    """Pre-produce `events`, run one worker over them until done, and measure. With
    `produced_from`, the events were produced already, from those input offsets; with
    `live`, they are produced once the worker has joined its group, as agents publish
    while it runs. `workers` processes share the group (started together). With
    `engine_file`, the faust engine module in that file runs instead of the checked-out
    one."""
    app_id = unique_name(f"bench-{engine}")
    marks = isolate_group(config, app_id)
    try:
        if produced_from is not None:
            commit_offsets(config, app_id, produced_from)
        elif not live:
            produce_events(config, events, Codec())
        group = [
            WorkerProcess(
                app_id=app_id,
                state_dir=tmp / f"{app_id}-{n}",
                bootstrap=bootstrap,
                log_path=tmp / f"{app_id}-{n}.log",
                until_idle=3.0,
                extra=("--engine", engine, *worker_args),
            )
            if engine_file is None
            else EngineFileWorker(
                app_id=app_id,
                state_dir=tmp / f"{app_id}-{n}",
                bootstrap=bootstrap,
                log_path=tmp / f"{app_id}-{n}.log",
                until_idle=3.0,
                extra=("--engine", "faust", *worker_args),
                engine_file=engine_file,
            )
            for n in range(workers)
        ]
        peak = [0.0]
        started = time.monotonic()
        for worker in group:
            worker.start()

        def watch() -> None:
            while any(w.alive() for w in group):
                rss = [peak_rss_mib(w.pid) for w in group]
                peak[0] = max([peak[0], *(r for r in rss if r is not None)])
                time.sleep(0.2)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        if live:
            wait_for(
                lambda: all(
                    "partitions assigned" in w.log_path.read_text(errors="replace") for w in group
                ),
                120,
                "the workers to join their group",
            )
            produce_events(config, events, Codec())
        try:
            finish(group, config, timeout=1800)
        finally:
            for worker in group:
                worker.stop()
        wall = time.monotonic() - started
        watcher.join()
        _, log_stamps = timestamps(config, marks.run_log_start(config), prefix)
        outputs, out_stamps = timestamps(config, marks.outputs, prefix)
        runs = len({e["run_id"] for e in events})
        # The faust engine folds a record where it reads it when the record is on its
        # run's run-log partition: then its first output is the first sign of work.
        first = min(log_stamps + out_stamps)
        counts = [w.counts() for w in group]
        return WorkerFigures(
            events=len(events),
            runs=runs,
            seconds=(max(out_stamps) - first) / 1000,
            ingest_seconds=(max(log_stamps) - min(log_stamps)) / 1000 if log_stamps else 0.0,
            wall_seconds=wall,
            outputs=outputs,
            peak_rss_mib=peak[0],
            forwarded=sum(c[0] for c in counts if c is not None)
            if all(c is not None for c in counts)
            else None,
        )
    finally:
        delete_app(config, app_id)


def bare_faust(
    config: KafkaConfig, bootstrap: str, start: TopicOffsets, expected: int, tmp: Path
) -> float:
    """Events/s of a bare faust agent (bench/faust_bare.py) consuming and decoding the
    `expected` records from `start`: first record received to last decoded."""
    app_id = unique_name("bench-bare-faust")
    commit_offsets(config, app_id, start)
    out = tmp / f"{app_id}.json"
    log = (tmp / f"{app_id}.log").open("wb")
    try:
        child = subprocess.run(
            [sys.executable, "-m", "outcomes.bench.faust_bare", bootstrap, app_id,
             str(expected), str(out)],
            stdout=log, stderr=subprocess.STDOUT, timeout=1800, check=False,
        )  # fmt: skip
    finally:
        log.close()
        delete_app(config, app_id)
    if not out.exists():
        raise RuntimeError(f"bare faust agent exited {child.returncode} without figures")
    figures = json.loads(out.read_text())
    if figures["records"] < expected:
        print(f"  (bare faust agent saw {figures['records']:,} of {expected:,} records)")
    return float(figures["records"]) / float(figures["seconds"])


def sized_load(prefix: str, events_per_run: int, total: int) -> list[Event]:
    """Runs of ~`events_per_run` events (every scenario in turn) adding up to ~`total`."""
    names = list(SCENARIOS)
    base = len(generate_run("probe", "clean"))  # events of a clean run without padding
    padding = max(0, (events_per_run - base) // 2)
    runs = max(1, round(total / (base + 2 * padding)))
    return interleave(
        [generate_run(f"{prefix}-{i:06d}", names[i % len(names)], padding) for i in range(runs)]
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=50_000, help="main load size")
    parser.add_argument(
        "--engines", default="batch,faust", help="engines to run on the main load, in order"
    )
    parser.add_argument(
        "--worker-arg",
        action="append",
        default=[],
        help="extra `outcomes worker` argument for every worker (repeatable)",
    )
    parser.add_argument(
        "--faust-baseline",
        metavar="REV",
        help="also run the faust engine of git revision REV on the main load (a comparison "
        "in the same run)",
    )
    parser.add_argument(
        "--scale-out",
        type=int,
        default=2,
        help="also run the first engine's main load with this many workers (0: skip)",
    )
    parser.add_argument(
        "--size-events", type=int, default=10_000, help="load size for each run-size figure"
    )
    parser.add_argument(
        "--sizes", default="10,1000,10000", help="events per run for the per-event cost"
    )
    args = parser.parse_args(argv)
    settings = Settings.load()
    config: KafkaConfig = dict(settings.kafka_config())
    bootstrap = settings.bootstrap
    engines = args.engines.split(",")
    print(f"broker {bootstrap}; {os.cpu_count()} CPUs; load average {os.getloadavg()}")

    with tempfile.TemporaryDirectory(prefix="bench-worker-") as tmp_dir:
        tmp = Path(tmp_dir)
        prefix = unique_name("bench")
        per_run = 12.6  # generate_runs(padding=2): ~12.6 events per run
        events = interleave(list(generate_runs(round(args.events / per_run), 0, 2, prefix)))
        start = end_offsets(config, INPUT_TOPICS)
        # Keyed by run_id with murmur2, as Java clients and the worker's producer key
        # theirs: a run's records are on its run-log partition in every input topic.
        produce_events({**config, "partitioner": "murmur2_random"}, events, Codec())
        results: dict[str, WorkerFigures] = {}
        for engine in engines:
            # The same records each time: a new app id (group) reads them from the marks.
            results[engine] = run_worker(
                config, bootstrap, events, prefix, tmp, engine, start, worker_args=args.worker_arg
            )
        if args.faust_baseline:
            results[f"faust@{args.faust_baseline}"] = run_worker(
                config,
                bootstrap,
                events,
                prefix,
                tmp,
                "faust",
                start,
                worker_args=args.worker_arg,
                engine_file=engine_at(args.faust_baseline, tmp),
            )
        scaled = None
        if args.scale_out > 1:
            scaled = run_worker(
                config,
                bootstrap,
                events,
                prefix,
                tmp,
                engines[0],
                start,
                workers=args.scale_out,
                worker_args=args.worker_arg,
            )
        ends = end_offsets(config, INPUT_TOPICS)
        fausts = [name for name in results if name.startswith("faust")]
        bare = bare_faust(config, bootstrap, start, len(events), tmp) if fausts else None
        raw = raw_ceiling(settings, start, ends, key_prefix=prefix)
        decoded, seconds = int(raw["events"]), raw["seconds"]
        ceiling = decoded / seconds
        floor = two_stage_floor(settings, start, ends, key_prefix=prefix)
        fold = pure_fold(settings, start, ends, key_prefix=prefix)
        any_figures = next(iter(results.values()))
        print(
            f"\nmain load: {any_figures.events:,} events in {any_figures.runs:,} runs, "
            f"{any_figures.outputs:,} output records"
        )
        print(
            f"  raw ceiling:  {ceiling:,.0f} events/s (confluent-kafka consume + "
            f"decode_event_fast of the same {decoded:,} records, {seconds:.1f} s)"
        )
        print(
            f"  two-stage floor: {floor['events_per_s']:,.0f} events/s = "
            f"{floor['events_per_s'] / ceiling:.2f} x ceiling (the same records consumed and "
            f"decoded, forwarded to a scratch run log and consumed again; no "
            f"validation, fold, state or outputs; {floor['seconds']:.1f} s)"
        )
        for engine, figures in results.items():
            ingest = (
                f"ingest stage alone {figures.events / figures.ingest_seconds:,.0f} events/s"
                if figures.ingest_seconds > 0
                else "no run-log stage"
            )
            through = (
                f"; {figures.forwarded:,} records through the run log"
                if figures.forwarded is not None
                else ""
            )
            print(
                f"  {engine:<6} engine: {figures.rate:,.0f} events/s = "
                f"{figures.rate / ceiling:.2f} x ceiling ({figures.seconds:.1f} s first event "
                f"consumed -> last output produced; {ingest}{through}; "
                f"{figures.wall_seconds:.1f} s wall with start-up and idle exit); "
                f"peak RSS {figures.peak_rss_mib:.0f} MiB"
            )
        print(
            f"  pure fold: {fold['cpu_us_per_event']} us of CPU per event "
            f"({fold['events_per_cpu_s']:,} events/s; `outcomes replay`'s work on the same "
            f"events in timestamp order, one core)"
        )
        if bare is not None:
            print(
                f"  bare faust agent: {bare:,.0f} events/s = {bare / ceiling:.2f} x ceiling "
                f"(faust consuming the same records and decoding them, nothing else)"
            )
            for name in fausts:
                ratio = results[name].rate / bare
                verdict = "met" if ratio >= 0.7 else "NOT met"
                print(f"  {name} engine / bare faust agent: {ratio:.3f} (target >= 0.7: {verdict})")
        if "batch" in results and "faust" in results:
            ratio = results["faust"].rate / results["batch"].rate
            print(f"  faust engine / batch engine: {ratio:.3f}")
        if scaled is not None:
            print(
                f"  {engines[0]} engine, {args.scale_out} workers in one group (started "
                f"together): {scaled.rate:,.0f} events/s = {scaled.rate / ceiling:.2f} x "
                f"ceiling ({scaled.seconds:.1f} s); peak RSS per worker "
                f"{scaled.peak_rss_mib:.0f} MiB"
            )

        engine = engines[0]
        print(f"\nper-event cost as runs grow, {engine} engine (~{args.size_events:,} per load):")
        print(f"  {'events/run':>10} {'runs':>6} {'events':>7} {'events/s':>9} {'us/event':>9} "
              f"{'seconds':>8} {'RSS MiB':>8}")  # fmt: skip
        for live in (True, False):
            print("  live: produced while the worker runs, each run's events in order"
                  if live else
                  "  backlog: pre-produced; a run's finalize may be folded before most of "
                  "its events")  # fmt: skip
            for size in (int(s) for s in args.sizes.split(",")):
                sized_prefix = unique_name(f"bench{size}")
                load = sized_load(sized_prefix, size, args.size_events)
                f = run_worker(
                    config, bootstrap, load, sized_prefix, tmp, engine, live=live,
                    worker_args=args.worker_arg,
                )  # fmt: skip
                print(
                    f"  {f.events / f.runs:>10,.0f} {f.runs:>6,} {f.events:>7,} {f.rate:>9,.0f} "
                    f"{f.micros_per_event:>9,.0f} {f.seconds:>8.1f} {f.peak_rss_mib:>8.0f}"
                )
    print(f"\nload average at end {os.getloadavg()}")


if __name__ == "__main__":
    main()
