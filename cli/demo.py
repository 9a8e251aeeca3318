"""`outcomes demo`: the whole pipeline on one machine (the work is `outcomes.devtools.demo`)."""

from __future__ import annotations

from pathlib import Path

import click

from outcomes.cli import options
from outcomes.common.settings import Settings
from outcomes.devtools.demo import browser_command, dev_stack_note, render_summary, run_demo


@click.command()
@click.option("--runs", type=int, default=300, show_default=True, help="Agent runs to simulate.")
@click.option(
    "--workers",
    type=int,
    default=4,
    show_default=True,
    help="Simulated agent workers (threads publishing through the SDK).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Workload seed.")
@click.option(
    "--malformed",
    type=int,
    default=3,
    show_default=True,
    help="Malformed raw messages to send (they must become dead letters).",
)
@options.bootstrap
@options.clickhouse
@options.state_dir
@click.option(
    "--idle",
    type=float,
    default=3.0,
    show_default=True,
    help="Seconds without input after which the worker and the sink stop.",
)
@click.option(
    "--keep-internals",
    is_flag=True,
    help="Keep the demo worker's table files and changelog topics.",
)
def demo(
    runs: int,
    workers: int,
    seed: int,
    malformed: int,
    bootstrap: str | None,
    clickhouse: str | None,
    state_dir: Path | None,
    idle: float,
    keep_internals: bool,
) -> None:
    """Run the whole pipeline locally and show what ClickHouse says about the runs.

    Starts the dev Kafka if none answers (downloading Kafka once), ensures topics and
    tables, publishes seeded runs from simulated agent workers plus malformed input,
    runs `outcomes worker` and `outcomes sink` until idle, then prints the status mix,
    the verdicts on what the agents said (supported, contradicted, omitted), supersessions,
    contradictions, provenance findings, dead letters and one account. The dev Kafka
    stack keeps running afterwards; the last line is the `outcomes ui` command that opens
    the demo's runs in the browser.
    """
    from rich.console import Console

    console = Console()
    result = run_demo(
        runs=runs,
        workers=workers,
        seed=seed,
        malformed=malformed,
        bootstrap=bootstrap,
        clickhouse=clickhouse,
        state_dir=state_dir,
        idle_seconds=idle,
        keep_internals=keep_internals,
        console=console,
    )
    render_summary(console, result)
    steps = ", ".join(f"{k} {v:.1f} s" for k, v in result.timings.items())
    console.print(f"[dim]{steps}[/dim]")
    settings = Settings.load(bootstrap=bootstrap, clickhouse=clickhouse, state_dir=state_dir)
    note = dev_stack_note(settings, state_dir)
    if note is not None:
        console.print(note)
    ui = browser_command(result.dsn, settings.bootstrap, default=Settings.load())
    console.print("Browse the runs, what their agents said and every revision (docs/browser.md):")
    console.print(f"  [bold]{ui}[/bold]", soft_wrap=True)
