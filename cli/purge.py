"""`outcomes purge --run ID`: remove every row of one run (privacy purge)."""

from __future__ import annotations

from pathlib import Path

import click

from outcomes.cli import options
from outcomes.common.settings import Settings
from outcomes.sinks import clickhouse as ch
from outcomes.sinks import purge as purging
from outcomes.sinks import schema
from outcomes.sinks.exceptions import PurgeDenied


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
    Purged runs are never written again by the sink or replay. Every attempt, refused
    ones included, is recorded in purge_attempts (who, when, which run, why refused).
    """
    settings = Settings.load(clickhouse=clickhouse, purge_actor=purge_actor)
    conn = ch.require_database(settings.clickhouse_dsn)
    schema.ensure_schema(conn)
    actor = purging.purge_actor(settings)
    # Every attempt is recorded in purge_attempts, refused ones included (no analyst
    # reads it); a missing credential is refused here, a wrong one by purge_run.
    try:
        credential = purging.read_credential(credential_file, settings)
    except PurgeDenied as exc:
        purging.refuse(conn, run_id, exc, actor=actor, reason=reason)
        raise
    result = purging.purge_run(
        conn, run_id, credential, actor=actor, reason=reason, require_rows=True
    )
    counts = ", ".join(f"{t}={n}" for t, n in result.row_counts.items() if n) or "no rows"
    click.echo(f"purged run {run_id} ({result.total} rows: {counts}); purge id {result.purge_id}")
