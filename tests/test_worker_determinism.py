"""`outcomes worker` on a generated fleet: every run's final account equals replay's.

2,000 runs (every workload scenario, ~29k events interleaved as concurrent agents would
publish them) go through one worker subprocess until it is idle; 400 runs for the faust
engine, which is about ten times slower and kept as the reference. The run log's arrival
order differs from the file order, so revision sequences may differ from replay's; the
final account of every run, the journal rows and the absence of conflicting copies may
not. The stream must also be exactly the fold of its own run log, output for output.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.worker_support import (
    Harness,
    KafkaConfig,
    finish,
)

pytestmark = pytest.mark.slow
PADDING = 3  # extra tool attempts per run: ~14.6 events per run on average


@pytest.mark.parametrize(("engine", "runs"), [("batch", 2_000), ("faust", 400)])
def test_final_accounts_equal_replay(
    kafka_bootstrap: str, kafka_config: KafkaConfig, tmp_path: Path, engine: str, runs: int
) -> None:
    with Harness(kafka_config, kafka_bootstrap, tmp_path, "det") as harness:
        events = harness.workload(runs, PADDING)
        assert len(events) >= runs * 14
        harness.produce(events)
        worker = harness.worker(until_idle=5.0, extra=("--engine", engine))
        worker.start()
        finish([worker], kafka_config, timeout=300)

        verdict = harness.verify(events)
        assert verdict.runs == runs
        print(f"determinism ({engine}): {len(events)} events, {verdict}")
