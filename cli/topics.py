"""`outcomes topics`: show the topic table, create missing topics (`outcomes.streams.topics`)."""

from __future__ import annotations

import click

from outcomes.cli import options
from outcomes.cli.group import Group
from outcomes.common.settings import Settings
from outcomes.streams.topics import DAY_MS, KiB, MiB, TopicSpec, ensure_topics, topic_table


def _human_ms(ms: int) -> str:
    if ms < 0:
        return "forever"
    return f"{ms / DAY_MS:g} d" if ms % DAY_MS == 0 else f"{ms} ms"


def _human_retention(spec: TopicSpec) -> str:
    if spec.retention_ms < 0:
        return "kept forever"
    verb = "deleted" if spec.cleanup_policy == "delete" else "compacted"
    return f"{verb} after {_human_ms(spec.retention_ms)}"


def _human_bytes(n: int) -> str:
    return f"{n / MiB:g} MiB" if n % MiB == 0 else f"{n / KiB:g} KiB"


@click.group(cls=Group)
def topics() -> None:
    """Declare and create the pipeline's Kafka topics."""


@topics.command("show")
def show_command() -> None:
    """Print the declared topic table (no broker needed)."""
    from rich.console import Console
    from rich.table import Table

    settings = Settings.load()
    table = Table(title="outcomes topics")
    for column in ("topic", "role", "partitions", "cleanup", "retention", "max record", "why"):
        table.add_column(column)
    for spec in topic_table(settings.limits):
        table.add_row(
            spec.name,
            spec.role,
            str(spec.partitions),
            spec.cleanup_policy,
            _human_ms(spec.retention_ms),
            _human_bytes(spec.max_message_bytes),
            spec.why,
        )
    Console().print(table)


@topics.command("ensure")
@options.bootstrap
@click.option(
    "--fix-config",
    is_flag=True,
    help="Set drifted topic configs back to the table (partitions are never changed).",
)
@click.option(
    "--timeout",
    type=float,
    default=30.0,
    show_default=True,
    help="Seconds to wait for the cluster's answers.",
)
def ensure_command(bootstrap: str | None, fix_config: bool, timeout: float) -> None:
    """Create missing topics; report drift from the table (exit 1 while any remains).

    Idempotent: a second run creates nothing and says so.
    """
    settings = Settings.load(bootstrap=bootstrap)
    table = topic_table(settings.limits)
    report = ensure_topics(settings.kafka_config(), table, fix_config=fix_config, timeout=timeout)
    by_name = {spec.name: spec for spec in table}
    for name in report.created:
        spec = by_name[name]
        click.echo(
            f"created {name}: {spec.partitions} partitions, replication "
            f"{spec.replication(report.brokers)}, {_human_retention(spec)}, "
            f"max record {_human_bytes(spec.max_message_bytes)}"
        )
    for d in report.fixed:
        click.echo(f"fixed   {d.topic}: {d.setting} {d.actual} -> {d.declared}")
    for d in report.drift:
        remedy = (
            "run `outcomes topics ensure --fix-config`"
            if d.fixable
            else "cannot be changed in place; recreate the topic"
        )
        click.echo(
            f"DRIFT   {d.topic}: {d.setting} is {d.actual}, table says {d.declared} ({remedy})"
        )
    drifted = len({d.topic for d in report.drift})
    summary = (
        f"{len(table)} topics on {report.brokers} broker(s) at {settings.bootstrap}: "
        f"{len(report.created)} created, {len({d.topic for d in report.fixed})} fixed, "
        f"{len(report.unchanged)} unchanged, {drifted} drifted"
    )
    if not report.changed and not report.drift:
        summary += "; nothing to do"
    click.echo(summary)
    if report.drift:
        raise SystemExit(1)
