"""CLI commands of the ClickHouse side: `clickhouse`, `query`, `purge` and `sink`."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import TextIO

import click

from cli import options
from cli.group import Group
from common.settings import Settings
from sinks import clickhouse as ch
from sinks import defaults, schema
from sinks import purge as purging
from sinks.consumer import SinkConfig, run_sink
from sinks.exceptions import SinkError
from sinks.query import render, run_query


class NoSuchRun(SinkError):
    """`outcomes purge --run ID` found no row of that run. Operators: check the run id
    (`outcomes query "SELECT DISTINCT run_id FROM current_accounts"`); purge_log lists
    the runs already purged."""


def _dsn(flag: str | None) -> str:
    return Settings.load(clickhouse=flag).clickhouse_dsn


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
    conn = ch.connect(_dsn(clickhouse))
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
    """Show applied schema versions and the row count of every table."""
    conn = ch.connect(_dsn(clickhouse))
    versions = sorted(schema.applied_versions(conn))
    click.echo(f"database {conn.database} at {conn.target.display}")
    click.echo(f"schema versions: {versions or 'none (run outcomes clickhouse migrate)'}")
    if not versions:
        return
    for table in schema.DATA_TABLES:
        count = conn.rows(f"SELECT count() FROM {conn.table(table.name)} FINAL")[0][0]
        click.echo(f"  {table.name:<28} {count:>12,}")


class QueryCommand(click.Command):
    """`outcomes query`: an argument that starts with an SQL comment (`-- name: …`) is
    the statement, not an option, even without a `--` before it."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        sql = [a for a in args if _starts_with_sql_comment(a)]
        if sql and "--" not in args:
            args = [a for a in args if not _starts_with_sql_comment(a)] + ["--", *sql]
        return super().parse_args(ctx, args)


def _starts_with_sql_comment(arg: str) -> bool:
    # No option is named by "--" and a blank: "-- name: x\nSELECT …" is SQL.
    return len(arg) > 2 and arg.startswith("--") and arg[2].isspace()


@click.command(cls=QueryCommand)
@click.argument("sql", required=False)
@click.option(
    "--file",
    "-f",
    "sql_file",
    type=click.File("r", encoding="utf-8"),
    help="Read the statement from this file ('-' reads standard input).",
)
@options.clickhouse
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "csv"]),
    default="table",
    show_default=True,
    help="table (rich), json (array of objects) or csv (with header).",
)
@click.option(
    "--no-final",
    is_flag=True,
    help="Read physical rows (without FINAL): shows not-yet-merged duplicates, if any.",
)
def query(
    sql: str | None, sql_file: TextIO | None, clickhouse: str | None, fmt: str, no_final: bool
) -> None:
    """Run one read-only SQL statement against the outcomes database.

    The statement is the SQL argument, or the file given with --file ('-' for standard
    input). Unqualified table names resolve in the outcomes database; see
    docs/analyst-queries.md for ready-to-run queries. Examples:

    \b
        outcomes query "SELECT status, count() FROM current_accounts GROUP BY status"
        outcomes query --file query.sql --format csv
        outcomes query -- "$(cat query.sql)"

    A syntax error names the position, line and column in your statement.
    """
    if sql is None and sql_file is None:
        raise click.MissingParameter(
            "Or give the statement with --file FILE ('-' for standard input).",
            ctx=click.get_current_context(),
            param_hint="'SQL'",
            param_type="argument",
        )
    if sql is not None and sql_file is not None:
        raise click.UsageError("give the statement either as an argument or with --file, not both")
    text = sql if sql is not None else sql_file.read() if sql_file is not None else ""
    dsn = _dsn(clickhouse)
    # A mistyped path is refused, not created empty; a chDB directory a running sink
    # holds is read through that sink's live query endpoint (docs/clickhouse.md).
    ch.require_database(dsn, live=True)
    result = run_query(dsn, text, final=not no_final)
    render(result, fmt, sys.stdout)


@click.command()
@click.option("--run", "run_id", required=True, help="The run whose rows are removed.")
@options.clickhouse
@click.option(
    "--credential-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="File holding the purge credential (else $OUTCOMES_PURGE_CREDENTIAL).",
)
@click.option("--reason", default="", help="Why (recorded in purge_log), e.g. a ticket id.")
@options.purge_actor
def purge(
    run_id: str,
    clickhouse: str | None,
    credential_file: Path | None,
    reason: str,
    purge_actor: str | None,
) -> None:
    """Remove every row of one run (privacy purge); recorded in purge_log.

    The credential is never a flag value: it comes from $OUTCOMES_PURGE_CREDENTIAL or
    --credential-file and must match the SHA-256 configured by `clickhouse migrate`.
    Purged runs are never written again by the sink or replay.
    """
    settings = Settings.load(clickhouse=clickhouse, purge_actor=purge_actor)
    credential = purging.read_credential(credential_file, settings)
    conn = ch.require_database(settings.clickhouse_dsn)
    schema.ensure_schema(conn)
    # The credential first: who may not purge learns nothing about which runs exist.
    purging.verify_credential(conn, credential)
    # Before purging, not from its result: a purge is logged in purge_log, and a run
    # listed there is never written again, so a mistyped id would be barred for good.
    if not any(purging.count_run_rows(conn, run_id).values()):
        raise NoSuchRun(
            f"no run {run_id}: no rows of it in any table (never sunk, or already purged)"
        )
    result = purging.purge_run(
        conn, run_id, credential, actor=purging.purge_actor(settings), reason=reason
    )
    counts = ", ".join(f"{t}={n}" for t, n in result.row_counts.items() if n) or "no rows"
    click.echo(f"purged run {run_id} ({result.total} rows: {counts}); purge id {result.purge_id}")


@click.command()
@options.bootstrap
@options.clickhouse
@click.option(
    "--until-idle",
    type=float,
    default=None,
    metavar="SECONDS",
    help="Exit cleanly after this many seconds without input (default: run until SIGTERM).",
)
@click.option("--group-id", default="outcomes-sink", show_default=True, help="Consumer group.")
@click.option(
    "--topic",
    "topics",
    multiple=True,
    metavar="TOPIC",
    help="Consume only these topics (repeatable; default: the five output topics).",
)
@click.option(
    "--batch-rows",
    default=defaults.BATCH_RECORDS,
    show_default=True,
    help="Flush once this many records are buffered (all partitions).",
)
@click.option(
    "--batch-seconds",
    default=defaults.BATCH_SECONDS,
    show_default=True,
    help="Flush once the oldest buffered record is this old.",
)
@click.option(
    "--query-port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="On chDB: serve read-only queries on 127.0.0.1 at this port (0: any free port).",
)
@click.option(
    "--no-query-endpoint", is_flag=True, help="On chDB: serve no read-only query endpoint."
)
def sink(
    bootstrap: str | None,
    clickhouse: str | None,
    until_idle: float | None,
    group_id: str,
    topics: tuple[str, ...],
    batch_rows: int,
    batch_seconds: float,
    query_port: int,
    no_query_endpoint: bool,
) -> None:
    """Consume the five output topics into ClickHouse, exactly once.

    Offsets are committed only after ClickHouse acknowledged the rows; undecodable
    records land in dead_letters. SIGTERM/SIGINT finish the current batch and exit.
    Exits with one error line (code 1) if no Kafka broker answers within 5 s at start.
    On chDB it serves read-only queries on 127.0.0.1 while it runs, which `outcomes
    query` uses (user analyst; the address and token are in <chdb dir>.live.json).
    """
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    settings = Settings.load(bootstrap=bootstrap, clickhouse=clickhouse)
    config = SinkConfig(
        group_id=group_id,
        topics=topics or SinkConfig.topics,
        batch_records=batch_rows,
        batch_seconds=batch_seconds,
        until_idle=until_idle,
        query_port=None if no_query_endpoint else query_port,
    )
    stats = run_sink(settings, config)
    click.echo(stats.summary(), err=True)
