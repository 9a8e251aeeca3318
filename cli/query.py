"""`outcomes query`: one read-only SQL statement against the outcomes database."""

from __future__ import annotations

import sys
from typing import TextIO

import click

from outcomes.cli import options
from outcomes.common.settings import Settings
from outcomes.sinks import clickhouse as ch
from outcomes.sinks.query import render, run_query


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
    dsn = Settings.load(clickhouse=clickhouse).clickhouse_dsn
    # A mistyped path is refused, not created empty; a chDB directory a running sink
    # holds is read through that sink's live query endpoint (docs/clickhouse.md).
    ch.require_database(dsn, live=True)
    result = run_query(dsn, text, final=not no_final)
    render(result, fmt, sys.stdout)
