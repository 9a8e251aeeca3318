"""`bench_replay --claims`: the cost of claim checking is measured against a fold that
judges no narrative, so the "not judged" side must really produce no verdict and the
judged side must produce them (else the ratio it prints means nothing)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from outcomes.bench.bench_replay import claims_unjudged, write_mix
from outcomes.reducers.engine import Engine
from outcomes.reducers.limits import Limits
from outcomes.streams.replay import ReplayStats, jsonl_items, replay_items


def _verdicts(path: Path) -> int:
    limits = Limits()
    records = replay_items(jsonl_items(path, limits), Engine(), limits, ReplayStats())
    return sum(record.topic == "outcomes.claim-verdicts.v1" for record in records)


def test_the_unjudged_side_produces_no_verdict_and_the_judged_side_does(tmp_path: Path) -> None:
    path = tmp_path / "mix.jsonl"
    write_mix(path, 60, 1)
    judged = _verdicts(path)
    with claims_unjudged():
        unjudged = _verdicts(path)
    assert judged > 0
    assert unjudged == 0
    assert _verdicts(path) == judged  # the fold is restored after the block


def test_the_claims_mode_prints_a_ratio_per_mix() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "outcomes.bench.bench_replay", "--claims", "1", "--runs", "40"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert out.count("median ratio") == 2, out
