"""The labelled corpus of real agent runs (`../shared/agent-traces`, third-party traces
read where they are, never copied): its `score.py` imports each trace with
`outcomes import`, replays the events and compares the accounts and claim verdicts with
the hand labels (issue 27, "done means"). Under CI=true a missing corpus fails.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "agent-traces"
SUMMARY = re.compile(
    r"^traces: imported (\d+)/(\d+); receipts (\d+)/(\d+) right \((\d+) false\); "
    r"files recall ([\d.]+) precision ([\d.]+); effects (\d+)/(\d+);",
    re.M,
)
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def scored() -> subprocess.CompletedProcess[str]:
    require((CORPUS / "score.py").exists(), f"the trace corpus is not at {CORPUS}")
    return subprocess.run(
        [sys.executable, str(CORPUS / "score.py"), str(ROOT)],
        capture_output=True, text=True, timeout=1800, check=False,
    )  # fmt: skip


def test_every_trace_imports_with_the_evidence_its_labels_hold(
    scored: subprocess.CompletedProcess[str],
) -> None:
    match = SUMMARY.search(scored.stdout)
    assert match, scored.stdout + scored.stderr
    imported, traces, right, total, false, recall, precision, eff_ok, eff_n = match.groups()
    assert imported == traces == "18", scored.stdout
    assert int(right) >= 0.9 * int(total) and int(false) <= 2, scored.stdout
    assert float(recall) >= 0.9 and float(precision) >= 0.9, scored.stdout
    assert int(eff_ok) >= 0.8 * int(eff_n), scored.stdout


def test_the_corpus_score_passes(scored: subprocess.CompletedProcess[str]) -> None:
    """The whole criterion, claims included (the claim checker's verdicts on the final
    messages of these runs)."""
    assert scored.returncode == 0, scored.stdout.splitlines()[-1]
