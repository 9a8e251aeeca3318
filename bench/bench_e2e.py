"""End-to-end benchmark of the pipeline: `outcomes bench` as a script.

Run: `.venv/bin/python bench/bench_e2e.py [--quick] [--out FILE]` (same flags as
`outcomes bench --help`). The phases, definitions and targets are described in
devtools/bench.py and docs/benchmarks.md; results land in bench/results/<date>.json.
"""

from __future__ import annotations

import sys

from devtools.bench import bench


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark with command-line flags."""
    bench.main(args=sys.argv[1:] if argv is None else argv, prog_name="bench_e2e")


if __name__ == "__main__":
    main()
