"""The claim checker on real agent prose: `../shared/claims-corpus/score.py --set all`
(batches 1-3, six files from four source families) must meet the thresholds below on
both of its summary lines: over all files (`claims: precision P recall R …`) and on the
worst file (`worst file: NAME precision P recall R`), and on each file's own line.

Issue 25's target is precision >= 0.95 and recall >= 0.90 over all files, the worst file
>= 0.90 / >= 0.85. The checker meets it (measured figures in docs/claims.md, "Measured on
real agent prose"), so the thresholds here are the target itself: a rule change that
costs any file its place above the line fails this test.

The corpus is third-party text kept beside the clone, never copied into the project; the
scorer replays one run per text through this project's `outcomes replay`. Under CI=true a
missing corpus fails the test; elsewhere it skips.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCORER = ROOT.parent / "shared" / "claims-corpus" / "score.py"

# (precision, recall) floors, the targets: measured 0.953 / 0.910 over all files,
# worst file 0.900 / 0.854 (batch-3b) when these were set; lowest on any file's own line
# 0.900 precision (batch-3b) and 0.854 recall (batch-3b, batch-3c).
ALL_FILES = (0.95, 0.90)
WORST_FILE = (0.90, 0.85)
EVERY_FILE = (0.90, 0.85)

_ALL = re.compile(r"claims: precision ([\d.]+) recall ([\d.]+) over .*")
_WORST = re.compile(r"worst file: (\S+) precision ([\d.]+) recall ([\d.]+)")
_FILE = re.compile(r"(\S+\.json)\s+\d+\s+([\d.]+)\s+([\d.]+)")


def test_the_checker_meets_the_corpus_targets_on_every_file() -> None:
    if not SCORER.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"the claims corpus is missing: {SCORER}")
        pytest.skip(f"no claims corpus at {SCORER}")
    proc = subprocess.run(
        [sys.executable, str(SCORER), str(ROOT), "--set", "all"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    lines = proc.stdout.strip().splitlines()
    tail = proc.stdout[-3000:] + proc.stderr[-2000:]
    overall = next((m for m in map(_ALL.fullmatch, lines) if m), None)
    worst = next((m for m in map(_WORST.fullmatch, lines) if m), None)
    assert overall is not None and worst is not None, tail
    precision, recall = float(overall.group(1)), float(overall.group(2))
    assert precision >= ALL_FILES[0] and recall >= ALL_FILES[1], tail
    name, worst_p, worst_r = worst.group(1), float(worst.group(2)), float(worst.group(3))
    assert worst_p >= WORST_FILE[0] and worst_r >= WORST_FILE[1], f"worst file {name}\n{tail}"
    files = [m for m in map(_FILE.fullmatch, lines) if m]
    assert len(files) >= 6, tail
    for m in files:
        p, r = float(m.group(2)), float(m.group(3))
        assert p >= EVERY_FILE[0] and r >= EVERY_FILE[1], f"{m.group(1)}: {p} / {r}\n{tail}"
