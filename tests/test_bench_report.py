"""Pieces of `outcomes bench` that need no broker: its percentile, its verdicts on the
targets, its latency split and per-thread CPU, and what it leaves behind in its work dir."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

from outcomes.devtools.bench import (
    latency_parts,
    percentile,
    stage_costs,
    targets,
    thread_cpu_seconds,
    thread_shares,
    tidy_work_dir,
)


def test_the_work_dir_keeps_logs_and_loses_data(tmp_path: Path) -> None:
    for name in ("worker.log", "sink.log", "acks.jsonl"):
        (tmp_path / name).write_text("x\n")
    (tmp_path / "chdb" / "store").mkdir(parents=True)
    (tmp_path / "chdb" / "store" / "part.bin").write_bytes(b"\0" * 1024)
    (tmp_path / "worker" / "rocks").mkdir(parents=True)
    tidy_work_dir(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["acks.jsonl", "sink.log", "worker.log"]


def test_percentile_is_by_nearest_rank() -> None:
    values = [float(v) for v in range(100, 0, -1)]
    assert percentile(values, 0.5) == 50.0
    assert percentile(values, 0.99) == 99.0  # rank 99 of 100, not the maximum
    assert percentile(values, 0.999) == 100.0
    assert percentile([3.0], 0.99) == 3.0


def results(
    e2e: float, ceiling: float, p99: float, worker: float, sink: float, fold: float
) -> dict[str, Any]:
    return {
        "throughput": {"events_per_s": e2e, "cpu_us_per_event": {"worker": worker, "sink": sink}},
        "raw_ceiling": {"events_per_s": ceiling},
        "latency": {"latency_s": {"p99": p99}},
        "pure_fold": {"cpu_us_per_event": fold},
    }


def test_targets_are_judged_on_the_measured_values() -> None:
    missed = targets(results(5_318, 169_773, 1.555, 60.6, 76.9, 22.0))
    assert [v["met"] for v in missed.values()] == [False, False, False, False]
    assert missed["e2e>=0.15x_raw_ceiling"]["value"] == 0.0313
    assert missed["worker_cpu_per_event<=2x_pure_fold"]["value"] == 2.75
    assert missed["sink_cpu_per_event<=0.5x_pure_fold"]["value"] == 3.5
    met = targets(results(30_000, 150_000, 0.9, 44.0, 11.0, 22.0))
    assert [v["met"] for v in met.values()] == [True, True, True, True]


def test_stage_costs_are_per_event_per_revision_and_against_the_fold() -> None:
    doc = results(5_000, 150_000, 0.9, 60.0, 80.0, 20.0)
    doc["throughput"] |= {
        "events": 10_000,
        "revisions": 1_000,
        "cpu_seconds_by_thread": {"sink": {"python": 0.5, "ThreadPool": 0.3, "idle": 0.001}},
    }
    stages = stage_costs(doc, "throughput")
    assert stages["sink python"] == {
        "us_per_event": 50.0,
        "us_per_revision": 500.0,
        "x_pure_fold": 2.5,
    }
    assert "sink idle" not in stages  # 0.1 us per event: left out
    assert stages["worker (all threads)"]["x_pure_fold"] == 3.0
    assert stages["sink (all threads)"]["us_per_revision"] == 800.0


def test_latency_is_split_where_the_revision_was_produced() -> None:
    # (run_id, revision) -> (INSERT returned at, cutoff in microseconds)
    acks = {
        ("r1", 1): (10.5, 10_000_000),  # 0.5 s in all: 0.1 worker, 0.4 sink
        ("r1", 2): (12.0, 11_000_000),  # 1.0 s: 0.75 worker, 0.25 sink
        ("r2", 1): (20.0, 19_000_000),  # never read from the topic: left out
    }
    produced = {("r1", 1): 10.1, ("r1", 2): 11.75, ("r3", 1): 5.0}
    parts = latency_parts(acks, produced)
    assert parts["worker"]["samples"] == parts["sink"]["samples"] == 2
    assert parts["worker"]["p50"] == 0.1 and parts["worker"]["max"] == 0.75
    assert parts["sink"]["p50"] == 0.25 and parts["sink"]["max"] == 0.4
    assert latency_parts(acks, {}) == {}


def test_thread_shares_are_per_name_and_survive_an_ended_thread() -> None:
    before = {"python": 10.0, "ThreadPool": 4.0, "MergeMutate": 1.0, "idle": 2.0}
    # over 20 s: python +5 s, ThreadPool +2 s; a MergeMutate thread ended and a new one
    # used 0.6 s (the name's total fell); "idle" used nothing.
    after = {"python": 15.0, "ThreadPool": 6.0, "MergeMutate": 0.6, "idle": 2.0}
    shares = thread_shares(before, after, 20.0)
    assert shares == {"python": 0.25, "ThreadPool": 0.1, "MergeMutate": 0.03}
    assert list(shares) == ["python", "ThreadPool", "MergeMutate"]


def test_thread_cpu_of_this_process_counts_its_threads() -> None:
    name = Path("/proc/self/comm").read_text().strip()  # new threads inherit it
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            sum(range(1000))

    spinner = threading.Thread(target=spin)
    spinner.start()
    try:
        before = thread_cpu_seconds(os.getpid())
        # Busy until the process has used 0.3 s of CPU (not 0.5 s of wall time: on a
        # shared machine at load 10 that gave it 0.1 s), within 60 s.
        start, deadline = time.process_time(), time.monotonic() + 60
        while time.process_time() - start < 0.3 and time.monotonic() < deadline:
            pass
        after = thread_cpu_seconds(os.getpid())
    finally:
        stop.set()
        spinner.join()
    assert after[name] - before[name] >= 0.2  # the two busy threads' 0.3 s, in ticks
