"""End-to-end benchmark of the pipeline: `outcomes bench` as a script.

Run: `.venv/bin/python bench/bench_e2e.py [--quick] [--out FILE]` (same flags as
`outcomes bench --help`). The phases, definitions and targets are described in
devtools/bench.py and docs/benchmarks.md; results land in bench/results/<date>.json.
The command lives in cli/bench.py, which bench/ does not import: this runs it.
"""

from __future__ import annotations

import subprocess
import sys


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark with command-line flags."""
    args = sys.argv[1:] if argv is None else argv
    raise SystemExit(subprocess.call([sys.executable, "-m", "outcomes.cli", "bench", *args]))


if __name__ == "__main__":
    main()
