"""`outcomes chaos`: fault scenarios end to end, checked in ClickHouse (the work is
`outcomes.devtools.chaos`; docs/reliability.md)."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from outcomes.devtools.chaos.brokers import CHAOS_PORT
from outcomes.devtools.chaos.scenarios import SCENARIOS, ChaosFailed, Outcome, Plan, run_all


def outcome_table(outcomes: list[Outcome]) -> Table:
    """One row per scenario: what was injected and what the checker found."""
    table = Table(title="outcomes chaos")
    for column in ("scenario", "events", "faults injected", "lost", "duplicated", "differing"):
        table.add_column(column, justify="left" if column == "scenario" else "right")
    table.add_column("longest stall", justify="right")
    table.add_column("verdict")
    for o in outcomes:
        table.add_row(
            o.scenario,
            f"{o.events:,}",
            f"{o.faults:,}",
            str(o.report.lost),
            str(o.report.duplicated),
            str(o.report.differing),
            f"{o.stall:.1f} s",
            "PASS" if o.ok else "[bold red]FAIL[/]",
        )
    return table


@click.command()
@click.argument("scenario", type=click.Choice(["all", *SCENARIOS]), default="all", required=False)
@click.option(
    "--events",
    type=click.IntRange(min=20),
    default=20_000,
    show_default=True,
    help="Input events per scenario (from runs of about ten events).",
)
@click.option(
    "--repeats",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="How many times each scenario injects its fault.",
)
@click.option("--seed", type=int, default=0, help="Seed of the fault moments [default: random].")
@click.option(
    "--port",
    type=click.IntRange(1024, 65435),
    default=CHAOS_PORT,
    show_default=True,
    help="First broker port of the scenarios' own Kafka stacks (controllers at +100).",
)
@click.option(
    "--keep",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Keep each scenario's logs and chDB directory under this directory.",
)
def chaos(
    scenario: str, events: int, repeats: int, seed: int, port: int, keep: Path | None
) -> None:
    """Run fault scenarios through real workers and sinks into chDB, and check ClickHouse.

    Each scenario produces its load, injects its faults (SIGKILLs, rebalances, replays,
    duplicates, poison records, a wiped state dir, a SIGSTOPped worker, broker restarts),
    then compares what ClickHouse holds with the inputs the broker acknowledged. The
    scenarios run on Kafka stacks of their own at --port (never the dev broker), which
    they stop when done. Exits 1 if any check fails.
    """
    names = list(SCENARIOS) if scenario == "all" else [scenario]
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)

    def done(outcome: Outcome) -> None:
        verdict = "PASS" if outcome.ok else "FAIL"
        click.echo(
            f"{outcome.scenario}: {verdict} in {outcome.seconds:.0f} s (seed {outcome.seed})",
            err=True,
        )
        for line in [*outcome.report.lines(), *outcome.report.notes]:
            click.echo(f"  {line}", err=True)

    outcomes = run_all(
        names,
        Plan(events, repeats, seed),
        port=port,
        workdir=keep,
        echo=lambda m: click.echo(m, err=True),
        done=done,
    )
    Console(width=120).print(outcome_table(outcomes))
    failed = [o.scenario for o in outcomes if not o.ok]
    if failed:
        raise ChaosFailed(f"{len(failed)} of {len(outcomes)} scenarios failed: {', '.join(failed)}")
