"""`outcomes clickhouse migrate|status`: the ClickHouse schema of the outcomes database."""

from __future__ import annotations

import click

from outcomes.cli import options
from outcomes.cli.group import Group
from outcomes.common.settings import Settings
from outcomes.sinks import clickhouse as ch
from outcomes.sinks import schema


@click.group(cls=Group)
def clickhouse() -> None:
    """Manage the ClickHouse schema (tables, views, roles) of the outcomes database."""


@clickhouse.command()
@options.clickhouse
def migrate(clickhouse: str | None) -> None:
    """Apply every missing schema version (idempotent; safe to re-run).

    Creates the database, data tables, views, purge log and, on a ClickHouse server,
    the roles <db>_analyst, <db>_sink and <db>_purge (chDB has no access control).
    If OUTCOMES_PURGE_CREDENTIAL_SHA256 is set, it becomes the purge credential.
    """
    conn = ch.connect(Settings.load(clickhouse=clickhouse).clickhouse_dsn)
    report = schema.migrate(conn)
    target = conn.target.display
    for version in report.applied:
        click.echo(f"applied version {version} to {conn.database} at {target}")
    for version in report.skipped:
        click.echo(f"version {version} skipped on chDB (no access control); recorded")
    if not report.applied and not report.skipped:
        click.echo(f"{conn.database} at {target} is up to date (version {schema.LATEST_VERSION})")
    if report.credential_configured:
        click.echo("purge credential configured from OUTCOMES_PURGE_CREDENTIAL_SHA256")


@clickhouse.command()
@options.clickhouse
def status(clickhouse: str | None) -> None:
    """Show applied schema versions, the row count of every table, and the records of
    each kind behind the views that keep the older table names (since version 13)."""
    conn = ch.connect(Settings.load(clickhouse=clickhouse).clickhouse_dsn)
    versions = sorted(schema.applied_versions(conn))
    click.echo(f"database {conn.database} at {conn.target.display}")
    click.echo(f"schema versions: {versions or 'none (run outcomes clickhouse migrate)'}")
    if not versions:
        return
    for table in schema.DATA_TABLES:
        count = conn.rows(f"SELECT count() FROM {conn.table(table.name)} FINAL")[0][0]
        click.echo(f"  {table.name:<28} {count:>12,}")
    present = {row[0] for row in conn.rows(f"SHOW TABLES FROM {conn.database}")}
    views = [name for name in schema.RECORD_VIEWS if name in present]
    if views:
        click.echo("records by kind (views over the tables above):")
    for name in views:
        # A view ignores FINAL; the setting reaches the tables inside it.
        count = conn.rows(f"SELECT count() FROM {conn.table(name)}", settings={"final": 1})[0][0]
        click.echo(f"  {name:<28} {count:>12,}")
