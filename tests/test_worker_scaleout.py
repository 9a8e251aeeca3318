"""Two workers in one consumer group split the partitions and agree with replay.

The load is produced at a steady pace for about 25 s while this happens (a pre-produced
load is done before a second worker has joined: the batch engine folds ~10k events/s).
Worker A starts alone; once it is well into the load, worker B (same app id, its own
state dir and web port) joins, so the group rebalances mid-load and the two split the
partitions. Later A is stopped with SIGTERM (a graceful leave): B takes over A's
partitions, restoring their stores from the changelogs, and finishes. Runs span the
whole load, so B folds events of runs A began. The final accounts must equal replay's
and the stream must be the exact fold of its run log.
"""

from __future__ import annotations

import re
import signal
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from outcomes.devtools.harness import (
    FAST_REJOIN,
    Event,
    Harness,
    KafkaConfig,
    WorkerProcess,
    finish,
    wait_for,
)

pytestmark = pytest.mark.slow
RUNS = 2_000
PADDING = 2  # ~12.6 events per run: ~25k events
CHUNKS = 100
PACE = 0.25  # seconds between chunks: the load takes ~25 s to produce


def paced(harness: Harness, events: Sequence[Event]) -> threading.Thread:
    """Produce `events` in `CHUNKS` slices, `PACE` seconds apart, from a thread."""
    size = -(-len(events) // CHUNKS)

    def produce() -> None:
        for start in range(0, len(events), size):
            harness.produce(events[start : start + size])
            time.sleep(PACE)

    thread = threading.Thread(target=produce, name="paced-load", daemon=True)
    thread.start()
    return thread


def assignments(worker: WorkerProcess) -> list[int]:
    """The partition counts of every assignment the worker logged, in order."""
    text = worker.log_path.read_text(errors="replace")
    return [int(n) for n in re.findall(r"partitions assigned: (\d+)", text)]


def test_two_workers_split_partitions_and_survive_a_rebalance(
    kafka_bootstrap: str, kafka_config: KafkaConfig, tmp_path: Path
) -> None:
    with Harness(kafka_config, kafka_bootstrap, tmp_path, "scale") as harness:
        events = harness.workload(RUNS, PADDING)
        load = paced(harness, events)
        a = harness.worker("a", web=True)
        b = harness.worker("b", web=True, until_idle=6.0)
        a.env = b.env = FAST_REJOIN
        a.start()
        wait_for(lambda: a.progress() >= 3_000, 120, "worker A to get going")
        a_alone = a.progress()
        b.start()  # joins the group: a rebalance while A is mid-load
        wait_for(lambda: b.progress() >= 1_500, 120, "worker B to take a share")
        split = assignments(a)[-1], assignments(b)[-1]
        assert all(n > 0 for n in split), f"partitions not split: {split}\n{harness.logs()}"
        assert split[0] < assignments(a)[0], f"A kept all its partitions: {assignments(a)}"
        a_progress = a.progress()
        assert a_progress > a_alone, "A did nothing after the rebalance"

        a.signal(signal.SIGTERM)  # graceful leave mid-load: B takes everything over
        assert a.wait(timeout=60) == 0, harness.logs()
        b_before = b.progress()
        assert load.is_alive(), "the load ended before A left: no takeover mid-load"
        load.join(120)
        finish([b], kafka_config, timeout=300)
        counts = b.counts()
        assert counts is not None, harness.logs()
        forwarded, folded, _ = counts
        assert forwarded + folded > b_before, "B had nothing left after A left: no takeover"
        assert assignments(b)[-1] > split[1], "B never took over A's partitions"

        verdict = harness.verify(events)
        assert verdict.runs == RUNS
        print(
            f"scale-out: {len(events)} events, split {split}, A handled {a_alone} alone, "
            f"{a_progress} in all, B {forwarded}+{folded}; {verdict}"
        )
