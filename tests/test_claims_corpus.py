"""The claim checker on real agent prose: `../shared/claims-corpus/score.py` must report
precision and recall of at least 0.95 and 0.90 (issue: claim checking that works on real
agent prose).

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


def test_the_checker_meets_the_corpus_targets() -> None:
    if not SCORER.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"the claims corpus is missing: {SCORER}")
        pytest.skip(f"no claims corpus at {SCORER}")
    proc = subprocess.run(
        [sys.executable, str(SCORER), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    match = re.fullmatch(r"claims: precision ([\d.]+) recall ([\d.]+) over .*", last)
    assert match, proc.stdout[-2000:] + proc.stderr[-2000:]
    precision, recall = float(match.group(1)), float(match.group(2))
    assert precision >= 0.95 and recall >= 0.90, proc.stdout[-3000:]
