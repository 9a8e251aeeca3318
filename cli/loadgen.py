"""`outcomes loadgen`: publish seeded agent runs (the work is `outcomes.devtools.loadgen`)."""

from __future__ import annotations

from pathlib import Path

import click

from outcomes.cli import options
from outcomes.common.settings import Settings
from outcomes.devtools.loadgen import (
    MALFORMED_TOPIC,
    SIZE_DISTRIBUTIONS,
    LoadSpec,
    SizeDistribution,
    default_prefix,
    publish_load,
    write_jsonl,
)


@click.command()
@options.bootstrap
@click.option("--runs", type=int, default=1000, show_default=True, help="Runs to publish.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the workload.")
@click.option(
    "--workers",
    type=int,
    default=4,
    show_default=True,
    help="Simulated agent workers (threads, one producer each).",
)
@click.option(
    "--rate",
    type=float,
    default=None,
    metavar="EVENTS_PER_S",
    help="Global rate limit in events per second [default: as fast as possible].",
)
@click.option(
    "--padding-mean",
    type=float,
    default=0.0,
    show_default=True,
    help="Mean extra tool attempts per run (2 events each) to grow runs.",
)
@click.option(
    "--size-distribution",
    type=click.Choice(SIZE_DISTRIBUTIONS),
    default="fixed",
    show_default=True,
    help="fixed: every run gets the mean; exponential: long tail.",
)
@click.option(
    "--run-prefix", default=None, help="Prefix of every run id [default: lg-<UTC timestamp>]."
)
@click.option(
    "--malformed",
    type=int,
    default=0,
    show_default=True,
    help=f"Raw non-Avro messages to send to {MALFORMED_TOPIC} (dead letters).",
)
@click.option(
    "--stamp-now", is_flag=True, help="Set occurred_at to the send time (for latency measurements)."
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the published events as JSONL (for `outcomes replay`).",
)
def loadgen(
    bootstrap: str | None,
    runs: int,
    seed: int,
    workers: int,
    rate: float | None,
    padding_mean: float,
    size_distribution: SizeDistribution,
    run_prefix: str | None,
    malformed: int,
    stamp_now: bool,
    out: Path | None,
) -> None:
    """Publish seeded, realistic agent runs to the input topics through the SDK.

    Scenarios cycle through clean completions, stale checks fixed by reruns, late
    receipts, contradicting receipts, denied publications, cancellations with in-flight
    effects and provenance with withheld candidates. Same seed and prefix, same events.
    """
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    settings = Settings.load(bootstrap=bootstrap)
    spec = LoadSpec(
        runs=runs,
        seed=seed,
        prefix=run_prefix or default_prefix(),
        padding_mean=padding_mean,
        size_distribution=size_distribution,
        rate=rate,
        malformed=malformed,
        workers=workers,
        stamp_now=stamp_now,
    )
    console = Console(stderr=True)
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as bar:
        task = bar.add_task(f"publishing {spec.prefix}-*", total=None)
        result = publish_load(
            settings,
            spec,
            keep_events=out is not None,
            progress=lambda done, total: bar.update(task, completed=done, total=total),
        )
    if out is not None and result.published is not None:
        write_jsonl(out, result.published)
    click.echo(result.summary())
    mix = ", ".join(f"{name} {count}" for name, count in sorted(result.by_scenario.items()))
    click.echo(f"run prefix {spec.prefix}; scenarios: {mix}")
    if out is not None:
        click.echo(f"events written to {out}")
