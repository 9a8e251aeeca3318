"""SIGTERM: the worker exits 0; a restart resumes at the committed offsets.

The worker is stopped with SIGTERM halfway through a pre-produced load and must exit 0.
A restart (same app id and state dir) must then handle exactly the records after the
offsets its group committed: at least all of the test's own, at most all that are there
(other sessions may produce to the shared input topics), never committed ones again; the
finished stream must agree with replay. Separately, as `outcomes worker --help` promises,
what the stopped worker had handled before the signal must be committed.
"""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from outcomes.devtools.harness import (
    Event,
    Harness,
    Json,
    KafkaConfig,
    TopicOffsets,
    finish,
    group_offsets,
    read_from,
    wait_for,
)

pytestmark = pytest.mark.slow
RUNS = 3_000  # the batch engine folds ~15k events/s: enough load to stop it mid-way
PADDING = 2  # ~37k events


def after(config: KafkaConfig, start: TopicOffsets, prefix: str) -> tuple[int, int]:
    """(records of runs under `prefix`, all records) after `start`, up to the end now."""
    keys = [key for *_, key, _ in read_from(config, start, lambda t, k: True)]
    return sum((k or b"").startswith(prefix.encode()) for k in keys), len(keys)


@dataclass(frozen=True)
class Stopped:
    """A worker stopped with SIGTERM mid-load, and what its group had committed then."""

    stats: Json  # its stats page just before the signal
    seconds: float  # from the signal to its exit
    committed: TopicOffsets  # inputs and run log, never below where the group started
    moved: dict[str, int]  # offsets committed since the group started, inputs / run log


def stop_mid_load(harness: Harness, config: KafkaConfig, events: list[Event]) -> Stopped:
    """Produce `events`, start a worker, SIGTERM it half-way (both stages together handle
    2 records per event) and check it exits 0."""
    harness.produce(events)
    worker = harness.worker(web=True)
    worker.start()
    wait_for(lambda: worker.progress() >= len(events), 120, "the worker to be mid-load")
    stats = worker.stats()
    assert stats is not None
    stopping = time.monotonic()
    worker.signal(signal.SIGTERM)
    assert worker.wait(timeout=60) == 0, harness.logs()
    seconds = time.monotonic() - stopping

    run_log = harness.run_log
    start = {**harness.marks.committed, **harness.marks.run_log_start(config)}
    topics = sorted({topic for topic, _ in start})
    committed = {  # -1001 where nothing was committed: still at the start
        tp: max(o, start[tp]) for tp, o in group_offsets(config, harness.app_id, topics).items()
    }
    moved = {
        kind: sum(o - start[tp] for tp, o in committed.items() if (tp[0] == run_log) == rl)
        for kind, rl in (("inputs", False), ("run_log", True))
    }
    return Stopped(stats, seconds, committed, moved)


def test_sigterm_exits_zero_and_restart_skips_committed_input(
    kafka_bootstrap: str, kafka_config: KafkaConfig, tmp_path: Path
) -> None:
    with Harness(kafka_config, kafka_bootstrap, tmp_path, "term") as harness:
        events = harness.workload(RUNS, PADDING)
        stopped = stop_mid_load(harness, kafka_config, events)
        stats, run_log = stopped.stats, harness.run_log
        # It started where `isolate_group` put its group, not at the topics' beginning...
        input_marks = {tp: o for tp, o in harness.marks.committed.items() if tp[0] != run_log}
        handled = stats["forwarded"] + stats["dead_letters"]
        assert handled <= after(kafka_config, input_marks, harness.prefix)[1]
        # ...and it was stopped mid-load: the restart has work left.
        moved = stopped.moved
        assert moved["inputs"] < len(events) or moved["run_log"] < len(events), moved

        inputs_at_stop = {tp: o for tp, o in stopped.committed.items() if tp[0] != run_log}
        run_log_at_stop = {tp: o for tp, o in stopped.committed.items() if tp[0] == run_log}
        worker = harness.workers[0]
        worker.until_idle = 5.0
        worker.start()
        finish([worker], kafka_config, timeout=180)
        counts = worker.counts()
        assert counts is not None, harness.logs()
        forwarded, folded, dead = counts
        # The restart handled exactly what was not committed: all of ours, and nothing
        # committed (at most what is there after the committed offsets, others' included).
        mine_in, all_in = after(kafka_config, inputs_at_stop, harness.prefix)
        mine_rl, all_rl = after(kafka_config, run_log_at_stop, harness.prefix)
        assert mine_in <= forwarded + dead <= all_in, (forwarded, dead, mine_in, all_in)
        assert mine_rl <= folded <= all_rl, (folded, mine_rl, all_rl)

        verdict = harness.verify(events)
        assert verdict.runs == RUNS
        print(
            f"sigterm: stopped in {stopped.seconds:.1f}s after {stats['forwarded']} forwarded, "
            f"{stats['folded']} folded; committed {moved}; restart handled {forwarded} "
            f"forwarded ({mine_in} of ours, {all_in} uncommitted), {folded} folded "
            f"({mine_rl} of ours, {all_rl} uncommitted); {verdict}"
        )


def test_sigterm_commits_what_it_handled(
    kafka_bootstrap: str, kafka_config: KafkaConfig, tmp_path: Path
) -> None:
    """`outcomes worker --help`: "Stops gracefully on SIGTERM (commits what it has
    processed)". What its stats page counted before the signal must be committed."""
    with Harness(kafka_config, kafka_bootstrap, tmp_path, "termc") as harness:
        stopped = stop_mid_load(harness, kafka_config, harness.workload(RUNS, PADDING))
        stats, moved = stopped.stats, stopped.moved
        print(f"sigterm commit: handled {stats}, committed {moved}")
        assert moved["inputs"] >= stats["forwarded"] + stats["dead_letters"], (moved, stats)
        assert moved["run_log"] >= stats["folded"], (moved, stats)
