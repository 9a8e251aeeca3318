"""SIGKILL the faust engine twice while it folds in one stage: nothing lost, no id with two
contents.

The faust engine folds a record where it reads it (no run log) when the record is on
its run's run-log partition, which murmur2-keyed producers give every record. Then
nothing durable fixes the order in which a restarted worker reads the input topics'
records again: only the store (the run-events changelog) does, so every published
output must be the fold of stored events (docs/stream.md, "faust in one stage"). The
load is produced with murmur2, the worker killed at random moments (no shutdown, no
commit, no flush) and restarted with the same app id and state dir, then run until
idle. Every final account must equal replay's, the stream must hold exactly the outputs
of folding each run's stored events in their order (nothing lost, nothing else), and
copies of an id must be byte-identical. The moments are drawn from a printed seed.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from outcomes.devtools.harness import (
    FAST_REJOIN,
    Harness,
    KafkaConfig,
    check_against_replay,
    finish,
    produce_events,
    read_run_log,
    replay_expectation,
    sigkill,
    wait_for,
)
from tests.store_fold import check_against_store

pytestmark = pytest.mark.slow
RUNS = 500
PADDING = 1  # ~10.6 events per run
KILLS = 2


def test_sigkill_in_one_stage_loses_nothing_and_conflicts_nowhere(
    kafka_bootstrap: str, kafka_config: KafkaConfig, tmp_path: Path
) -> None:
    seed = random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    with Harness(kafka_config, kafka_bootstrap, tmp_path, "fkill") as harness:
        events = harness.workload(RUNS, PADDING)
        produce_events({**kafka_config, "partitioner": "murmur2_random"}, events, harness.codec)
        worker = harness.worker(web=True, extra=("--engine", "faust"))
        worker.env = FAST_REJOIN
        killed_at: list[int] = []
        for _ in range(KILLS):
            worker.start()
            target = rng.randint(300, 2_000)
            wait_for(
                lambda target=target: worker.progress() >= target,  # type: ignore[misc]
                timeout=180,
                what=f"{target} records handled (seed {seed})",
                interval=0.05,
            )
            time.sleep(rng.uniform(0.0, 0.3))
            killed_at.append(worker.progress())
            sigkill(worker)
        worker.until_idle = 6.0
        worker.start()
        finish([worker], kafka_config, timeout=300)
        counts = worker.counts()
        assert counts is not None, harness.logs()
        forwarded, folded, _ = counts
        assert forwarded + folded > 0, "the kills came after the work was done: nothing tested"

        outputs = harness.outputs()
        verdict = check_against_replay(outputs, replay_expectation(events))
        assert verdict.runs == RUNS
        stored = check_against_store(
            outputs, kafka_config, harness.app_id, harness.prefix, harness.run_log
        )
        assert stored == len({e["event_id"] for e in events})
        assert read_run_log(kafka_config, harness.marks, harness.prefix) == [], (
            "murmur2-keyed records went through the run log"
        )
        print(
            f"faust kill test (seed {seed}): {len(events)} events, killed after {killed_at} "
            f"records; {verdict.ids} ids, {verdict.duplicates} identical duplicate copies, "
            "0 conflicting"
        )
