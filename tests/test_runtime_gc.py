"""`freeze_survivors`: what survives a young collection leaves the collector's view, and
cycles that die young are still collected. Run in a child process: it changes the
interpreter's collector for good."""

from __future__ import annotations

import json
import subprocess
import sys

CHILD = """
import gc, json
from outcomes.common.runtime import freeze_survivors
freeze_survivors()
kept = [{"n": i} for i in range(1000)]  # long-lived, like run state
gc.collect(0)
frozen_after_first = gc.get_freeze_count()
cycle = []
cycle.append(cycle)  # dies young
del cycle
collected = gc.collect(0)
print(json.dumps({
    "frozen": frozen_after_first,
    "collected_young_cycle": collected,
    "threshold": gc.get_threshold(),
    "kept_tracked_by_young_gens": sum(len(gc.get_objects(g)) for g in range(3)),
}))
"""


def test_survivors_are_frozen_and_young_cycles_still_collected() -> None:
    out = subprocess.run([sys.executable, "-c", CHILD], check=True, capture_output=True, text=True)
    result = json.loads(out.stdout)
    assert result["frozen"] >= 1000  # the kept dicts, at least
    assert result["collected_young_cycle"] >= 1
    assert result["threshold"][0] == 50_000  # tune_gc's, kept
    assert result["kept_tracked_by_young_gens"] < 100  # everything older is frozen
