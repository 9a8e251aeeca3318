"""Running `outcomes` as a user does: a subprocess from the repository root."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def outcomes(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`python -m cli ARGS` in the repository root; its output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "outcomes.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
        check=False,
    )
