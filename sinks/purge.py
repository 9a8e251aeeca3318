"""The only removal path: an authenticated, recorded privacy purge of one run.

The credential comes from `OUTCOMES_PURGE_CREDENTIAL` or a file, never a flag (flags
land in shell history and process lists). `outcomes clickhouse migrate` stores the
credential named by `OUTCOMES_PURGE_CREDENTIAL_SHA256` as scrypt of that SHA-256 with a
random salt (sinks/schema.py, `purge_credential_hashes`); a presented credential must
give the same hash. Rows are removed
with synchronous `ALTER TABLE ... DELETE` mutations, which rewrite the affected parts,
so the data is gone from disk, not merely hidden. `purge_log` gets a `started` row
before and a `completed` row after, each with who, when, why and per-table row counts.
Every attempt, refused ones included, is one row of `purge_attempts`
(outcomes.sinks.purge_attempts), which no analyst reads.
"""

from __future__ import annotations

import getpass
import hashlib
import socket
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from outcomes.common.settings import Settings
from outcomes.sinks import purge_attempts, schema
from outcomes.sinks.clickhouse import Connection
from outcomes.sinks.exceptions import PurgeDenied, PurgeIncomplete, SinkError

CREDENTIAL_ENV = "OUTCOMES_PURGE_CREDENTIAL"  # read by outcomes.common.settings.Settings


class NoSuchRun(SinkError):
    """`outcomes purge --run ID` found no row of that run. Operators: check the run id
    (`outcomes query "SELECT DISTINCT run_id FROM current_accounts"`); purge_log lists
    the runs already purged."""


@dataclass(frozen=True)
class PurgeResult:
    """What a purge removed: rows per table (before the delete) and its log id."""

    purge_id: str
    run_id: str
    row_counts: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.row_counts.values())


def read_credential(credential_file: Path | None, settings: Settings) -> str:
    """The presented credential: the file's first line if given, else the setting
    `purge_credential` (`OUTCOMES_PURGE_CREDENTIAL`)."""
    if credential_file is not None:
        try:
            text = credential_file.read_text().strip()
        except OSError as exc:
            raise PurgeDenied(f"cannot read credential file {credential_file}: {exc}") from exc
        if not text:
            raise PurgeDenied(f"credential file {credential_file} is empty")
        return text.splitlines()[0].strip()
    value = (settings.purge_credential or "").strip()
    if not value:
        raise PurgeDenied(f"no purge credential: set {CREDENTIAL_ENV} or use --credential-file")
    return value


def purge_actor(settings: Settings) -> str:
    """Who is purging: `--actor` or `OUTCOMES_PURGE_ACTOR`, else the OS user at this host."""
    return settings.purge_actor or f"{getpass.getuser()}@{socket.gethostname()}"


def verify_credential(conn: Connection, credential: str) -> None:
    """Raise PurgeDenied unless the credential is the configured one: its SHA-256, put
    through scrypt with the stored salt and parameters, must give the stored hash."""
    stored = schema.current_credential(conn)
    if stored is None:
        raise PurgeDenied(
            "no purge credential is configured: set OUTCOMES_PURGE_CREDENTIAL_SHA256 "
            "and run `outcomes clickhouse migrate`"
        )
    if not stored.matches_sha256(hashlib.sha256(credential.encode()).hexdigest()):
        raise PurgeDenied("purge credential rejected")


def count_run_rows(conn: Connection, run_id: str) -> dict[str, int]:
    """Physical rows of the run in every data table."""
    counts: dict[str, int] = {}
    # The input events too: run.started's task and narrative.submitted's text are the
    # run's words as much as its verdicts are.
    for name in (*(table.name for table in schema.DATA_TABLES), schema.EVENTS_TABLE):
        rows = conn.rows(
            f"SELECT count() FROM {conn.table(name)} WHERE run_id = %(run)s",
            {"run": run_id},
        )
        counts[name] = int(rows[0][0])
    return counts


def purge_run(
    conn: Connection,
    run_id: str,
    credential: str,
    *,
    actor: str,
    reason: str = "",
    require_rows: bool = False,
) -> PurgeResult:
    """Delete every row of `run_id` from the data tables, recording it in purge_log.

    The attempt is recorded in `purge_attempts` whatever happens: `refused` (a wrong
    or unconfigured credential; with `require_rows`, a run without rows, checked after
    the credential so who may not purge learns nothing about which runs exist), `failed`
    (the engine refused a step, rows remained) or `completed`.
    """
    try:
        verify_credential(conn, credential)
        if require_rows and not any(count_run_rows(conn, run_id).values()):
            # Before purging, not from its result: a purge is logged in purge_log, and a
            # run listed there is never written again, so a mistyped id would be barred.
            raise NoSuchRun(
                f"no run {run_id}: no rows of it in any table (never sunk, or already purged)"
            )
        result = _purge(conn, run_id, actor=actor, reason=reason)
    except (PurgeDenied, NoSuchRun) as exc:
        purge_attempts.record(
            conn, run_id, purge_attempts.REFUSED, actor=actor, reason=reason, refusal=str(exc)
        )
        raise
    except SinkError as exc:
        purge_attempts.record(
            conn, run_id, purge_attempts.FAILED, actor=actor, reason=reason, refusal=str(exc)
        )
        raise
    purge_attempts.record(
        conn, run_id, purge_attempts.COMPLETED, actor=actor, reason=reason, purge_id=result.purge_id
    )
    return result


def refuse(conn: Connection, run_id: str, why: PurgeDenied, *, actor: str, reason: str) -> None:
    """Record an attempt refused before it reached `purge_run` (no credential given)."""
    purge_attempts.record(
        conn, run_id, purge_attempts.REFUSED, actor=actor, reason=reason, refusal=str(why)
    )


def _purge(conn: Connection, run_id: str, *, actor: str, reason: str) -> PurgeResult:
    purge_id = str(uuid.uuid4())
    user = str(conn.rows("SELECT currentUser()")[0][0])
    counts = count_run_rows(conn, run_id)
    _log(conn, purge_id, run_id, "started", actor, user, reason, counts)
    for table, count in counts.items():
        if count:
            conn.command(
                f"ALTER TABLE {conn.table(table)} DELETE WHERE run_id = %(run)s "
                "SETTINGS mutations_sync = 2",
                {"run": run_id},
            )
    left = {t: n for t, n in count_run_rows(conn, run_id).items() if n}
    if left:
        raise PurgeIncomplete(f"purge {purge_id} of run {run_id}: rows remain in {left}")
    _log(conn, purge_id, run_id, "completed", actor, user, reason, counts)
    return PurgeResult(purge_id, run_id, counts)


def _log(
    conn: Connection,
    purge_id: str,
    run_id: str,
    phase: str,
    actor: str,
    user: str,
    reason: str,
    counts: dict[str, int],
) -> None:
    conn.insert(
        "purge_log",
        [[purge_id, run_id, phase, datetime.now(UTC), actor, user, reason, counts]],
        [
            "purge_id",
            "run_id",
            "phase",
            "purged_at",
            "purged_by",
            "clickhouse_user",
            "reason",
            "row_counts",
        ],
    )
