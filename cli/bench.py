"""`outcomes bench`: the end-to-end benchmark (the work is `outcomes.devtools.bench`).

`python -m outcomes.cli.bench --probe-sink BOOTSTRAP DSN GROUP LOG BATCH_SECONDS` is the bench's
own sink process (`outcomes.devtools.bench.probe_sink`), which `run_bench` starts; any other
arguments run `outcomes bench`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import click

from outcomes.cli import options
from outcomes.cli.main import main
from outcomes.devtools.bench import default_results_dir, print_report, probe_sink, run_bench
from outcomes.sinks import defaults as sink_defaults


@click.command()
@click.option("--quick", is_flag=True, help="Small phases (about 1 minute) for a smoke check.")
@options.bootstrap
@options.setting_option(
    "clickhouse", default="a fresh chDB in a temporary directory", from_env=False
)
@click.option("--workers", type=int, default=4, show_default=True, help="Agent threads.")
@click.option(
    "--sink-batch-seconds",
    type=float,
    default=sink_defaults.BATCH_SECONDS,
    show_default=True,
    help="The sink's --batch-seconds (bounds latency from below).",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Results file [default: bench/results/<UTC time>.json].",
)
def bench(
    quick: bool,
    bootstrap: str | None,
    clickhouse: str | None,
    workers: int,
    sink_batch_seconds: float,
    out: Path | None,
) -> None:
    """Measure the pipeline end to end against the real broker and ClickHouse.

    Reports end-to-end events/s against the raw consume+decode ceiling, latency p50/p99
    at half load, per-event cost for runs of 10 to 100,000 events and peak RSS of the
    worker and the sink, and whether each target of docs/benchmarks.md was met.
    """
    results = run_bench(
        quick=quick,
        bootstrap=bootstrap,
        clickhouse=clickhouse,
        workers=workers,
        sink_batch_seconds=sink_batch_seconds,
        echo=lambda m: click.echo(m, err=True),
    )
    if out is None:
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H%M%SZ")  # never overwrites a result
        out = default_results_dir() / f"{stamp}{'-quick' if quick else ''}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print_report(results, click.echo)
    click.echo(f"results written to {out}")


def _main(argv: Sequence[str]) -> None:
    """The probe sink for `--probe-sink ...`; else `outcomes bench` with these arguments."""
    if len(argv) == 6 and argv[0] == "--probe-sink":
        probe_sink(argv[1], argv[2], argv[3], Path(argv[4]), float(argv[5]))
        return
    main(args=["bench", *argv], prog_name="outcomes")


if __name__ == "__main__":
    _main(sys.argv[1:])
