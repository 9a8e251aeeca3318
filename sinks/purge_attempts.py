"""`purge_attempts`: every purge attempt, refused ones included (migration 12).

`purge_log` records purges that ran (a `started` and a `completed` row). A refused
attempt (no credential, a wrong one, none configured, a run with no rows) removed
nothing, so it never reached `purge_log`, and left no trace anywhere. This table
records each attempt: who (the actor, the OS user and host, the ClickHouse user), when,
which run, its outcome (`refused`, `failed`, `completed`), why it was refused or failed,
the reason given, and the purge id when one ran.

No analyst reads or changes it: the analyst path never names it (outcomes.sinks.guard's
SECRET_TABLES; no analyst grant), and analysts are read-only. On a server the purge
role may only INSERT into it (migration 12's grant), so a purger cannot erase a trace
either. The table is append-only: MergeTree, no deletes, no TTL.
"""

from __future__ import annotations

import getpass
import socket
import uuid
from datetime import UTC, datetime

from outcomes.sinks.clickhouse import Connection
from outcomes.sinks.exceptions import ClickHouseUnavailable

TABLE = "purge_attempts"
REFUSED = "refused"
FAILED = "failed"
COMPLETED = "completed"
COLUMNS = (
    "attempt_id",
    "attempted_at",
    "run_id",
    "outcome",
    "refusal",
    "actor",
    "os_user",
    "host",
    "clickhouse_user",
    "reason",
    "purge_id",
)


def ddl(db: str) -> list[str]:
    """Migration 12's statement."""
    return [
        f"""CREATE TABLE IF NOT EXISTS `{db}`.`{TABLE}` (
    `attempt_id` UUID,
    `attempted_at` DateTime64(6, 'UTC'),
    `run_id` String,
    `outcome` LowCardinality(String),
    `refusal` String,
    `actor` String,
    `os_user` String,
    `host` String,
    `clickhouse_user` String,
    `reason` String,
    `purge_id` Nullable(UUID)
)
ENGINE = MergeTree
ORDER BY (attempted_at, attempt_id)
COMMENT 'Every purge attempt, refused ones included: who, when, which run, why.'"""
    ]


def grant(conn: Connection) -> None:
    """Migration 12's grant, on a server: the purge role may add attempts, nothing else
    (chDB has no access control)."""
    if conn.target.embedded:
        return
    db = conn.database
    conn.command(f"GRANT INSERT ON `{db}`.`{TABLE}` TO `{db}_purge`")


def record(
    conn: Connection,
    run_id: str,
    outcome: str,
    *,
    actor: str,
    reason: str = "",
    refusal: str = "",
    purge_id: str | None = None,
) -> str:
    """Add one attempt; returns its id."""
    attempt_id = str(uuid.uuid4())
    try:
        user = str(conn.rows("SELECT currentUser()")[0][0])
    except ClickHouseUnavailable:  # the attempt is recorded even if the engine will not say who
        user = ""
    conn.insert(
        TABLE,
        [
            [
                attempt_id,
                datetime.now(UTC),
                run_id,
                outcome,
                " ".join(refusal.split())[:2000],
                actor,
                _os_user(),
                socket.gethostname(),
                user,
                reason,
                purge_id,
            ]
        ],
        COLUMNS,
    )
    return attempt_id


def _os_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return ""
