"""SIGKILL the worker three times mid-load: nothing is lost, no id has two contents.

21k events are pre-produced; the worker is killed with SIGKILL (no shutdown, no commit,
no producer flush) at three random moments while it processes them, each time restarted
with the same app id and state dir, and finally run until idle. Every run's final account
must equal replay's, the stream must hold every output id the fold of its run log gives
(nothing lost), and every copy of an id must be byte-identical (duplicates are expected
after a crash; conflicting ones are a bug). The moments are drawn from a printed seed.

A killed member stays in the consumer group until its session times out (faust's default
`broker_session_timeout` is 60 s); the workers here run with faust's documented
`BROKER_SESSION_TIMEOUT` environment setting at 8 s so each restart takes seconds.
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
    finish,
    sigkill,
    wait_for,
)

pytestmark = pytest.mark.slow
RUNS = 2_000
PADDING = 1  # ~10.6 events per run: 21,142 events
KILLS = 3


def test_sigkill_three_times_loses_nothing(
    kafka_bootstrap: str, kafka_config: KafkaConfig, tmp_path: Path
) -> None:
    seed = random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    with Harness(kafka_config, kafka_bootstrap, tmp_path, "kill") as harness:
        events = harness.workload(RUNS, PADDING)
        assert len(events) >= 20_000
        harness.produce(events)
        worker = harness.worker(web=True)
        worker.env = FAST_REJOIN
        killed_at: list[int] = []
        for _ in range(KILLS):
            worker.start()
            # Both stages together handle ~2 x 21k records; each process is killed after
            # a random share of them, at a random instant (not on a progress boundary).
            target = rng.randint(1_500, 6_000)
            wait_for(
                lambda target=target: worker.progress() >= target,  # type: ignore[misc]
                timeout=120,
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

        verdict = harness.verify(events)
        assert verdict.runs == RUNS
        print(
            f"kill test (seed {seed}): {len(events)} events, killed after {killed_at} "
            f"records, last run handled {forwarded}+{folded}; {verdict.ids} ids, "
            f"{verdict.duplicates} identical duplicate copies, 0 conflicting"
        )
