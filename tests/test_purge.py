"""Privacy purge: authenticated, complete, recorded, and never undone by a replay."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from outcomes.cli.main import main
from outcomes.cli.purge import purge as purge_cmd
from outcomes.common.settings import Settings
from outcomes.devtools import samples
from outcomes.sinks import clickhouse, purge, purge_attempts, schema
from outcomes.sinks.events import EventStore, row_of
from outcomes.sinks.exceptions import PurgeDenied
from outcomes.sinks.writer import ClickHouseWriter
from tests.chdb_support import PURGE_SECRET, sample_database

pytestmark = pytest.mark.clickhouse
SECRET = PURGE_SECRET


@pytest.fixture
def chdb_dsn(tmp_path: Path) -> Iterator[str]:
    """A fresh chDB directory holding the sample, with a purge credential configured."""
    with sample_database(tmp_path) as dsn:
        yield dsn


def _rows_of(conn: clickhouse.Connection, run_id: str) -> int:
    return sum(purge.count_run_rows(conn, run_id).values())


def test_purge_removes_only_that_run_and_logs_it(chdb_dsn: str) -> None:
    conn = clickhouse.connect(chdb_dsn)
    before_b = purge.count_run_rows(conn, "run-b")
    others = {r: _rows_of(conn, r) for r in ("run-a", "run-c", "run-d")}
    result = purge.purge_run(conn, "run-b", SECRET, actor="dpo@example", reason="ticket 42")
    assert result.row_counts == before_b and result.total > 0
    assert _rows_of(conn, "run-b") == 0
    assert {r: _rows_of(conn, r) for r in others} == others
    log = conn.rows(
        f"SELECT phase, purged_by, reason, row_counts FROM {conn.table('purge_log')} "
        "WHERE run_id = 'run-b' ORDER BY purged_at"
    )
    assert [r[0] for r in log] == ["started", "completed"]
    assert log[1][1:] == ("dpo@example", "ticket 42", before_b)


def test_purged_run_is_not_resurrected_by_a_replay(chdb_dsn: str) -> None:
    conn = clickhouse.connect(chdb_dsn)
    purge.purge_run(conn, "run-d", SECRET, actor="t")
    report = ClickHouseWriter(chdb_dsn).write(samples.sample_records())
    assert report.rows_inserted == 0
    assert sum(report.purged.values()) > 0
    assert _rows_of(conn, "run-d") == 0


def test_wrong_or_missing_credential_is_refused(chdb_dsn: str) -> None:
    conn = clickhouse.connect(chdb_dsn)
    with pytest.raises(PurgeDenied, match="rejected"):
        purge.purge_run(conn, "run-a", SECRET + "x", actor="t")
    assert _rows_of(conn, "run-a") > 0
    with pytest.raises(PurgeDenied, match="OUTCOMES_PURGE_CREDENTIAL"):
        purge.read_credential(None, Settings.load(env={}))


def test_unconfigured_credential_refuses_every_purge(tmp_path: Path) -> None:
    clickhouse.close_all()
    try:
        conn = clickhouse.connect(f"chdb://{tmp_path}/fresh")
        schema.migrate(conn, credential_sha256=None)
        with pytest.raises(PurgeDenied, match="no purge credential is configured"):
            purge.purge_run(conn, "run-a", "anything", actor="t")
    finally:
        clickhouse.close_all()


def test_cli_takes_the_credential_from_env_or_file_never_a_flag(
    chdb_dsn: str, tmp_path: Path
) -> None:
    runner = CliRunner()
    flag = runner.invoke(
        purge_cmd, ["--run", "run-a", "--clickhouse", chdb_dsn, "--credential", SECRET]
    )
    assert flag.exit_code == 2 and "No such option" in flag.output
    missing = runner.invoke(
        main,
        ["purge", "--run", "run-a", "--clickhouse", chdb_dsn],
        env={"OUTCOMES_PURGE_CREDENTIAL": ""},
    )
    assert missing.exit_code == 1
    assert missing.output.startswith("outcomes purge: error: no purge credential")
    by_env = runner.invoke(
        purge_cmd,
        ["--run", "run-a", "--clickhouse", chdb_dsn, "--reason", "r"],
        env={"OUTCOMES_PURGE_CREDENTIAL": SECRET, "OUTCOMES_PURGE_ACTOR": "alice"},
    )
    assert by_env.exit_code == 0, by_env.output
    assert "purged run run-a" in by_env.output
    secret_file = tmp_path / "purge.key"
    secret_file.write_text(SECRET + "\n")
    by_file = runner.invoke(
        purge_cmd,
        ["--run", "run-c", "--clickhouse", chdb_dsn, "--credential-file", str(secret_file)],
        env={"OUTCOMES_PURGE_CREDENTIAL": ""},
    )
    assert by_file.exit_code == 0, by_file.output
    conn = clickhouse.connect(chdb_dsn)
    assert _rows_of(conn, "run-a") == _rows_of(conn, "run-c") == 0
    actors = conn.rows(
        f"SELECT DISTINCT purged_by FROM {conn.table('purge_log')} WHERE run_id = 'run-a'"
    )
    assert actors == [("alice",)]


def test_purge_settings_come_from_the_environment_and_are_never_shown() -> None:
    digest = hashlib.sha256(SECRET.encode()).hexdigest()
    settings = Settings.load(
        env={
            "OUTCOMES_PURGE_CREDENTIAL": SECRET,
            "OUTCOMES_PURGE_CREDENTIAL_SHA256": digest,
            "OUTCOMES_PURGE_ACTOR": "dpo@example",
        }
    )
    assert purge.read_credential(None, settings) == SECRET
    assert purge.purge_actor(settings) == "dpo@example"
    assert settings.purge_credential_sha256 == digest
    shown = f"{settings.describe()} {settings!r}"
    assert SECRET not in shown and digest not in shown
    assert Settings.load(env={}, purge_actor="cli").purge_actor == "cli"


def _dump(conn: clickhouse.Connection) -> str:
    """Every row of every table of the database, as text (what a dump would hold)."""
    names = conn.rows(
        "SELECT name FROM system.tables WHERE database = %(db)s AND engine LIKE '%%MergeTree'",
        {"db": conn.database},
    )
    return "\n".join(repr(conn.rows(f"SELECT * FROM {conn.table(str(name))}")) for (name,) in names)


def test_the_credential_is_stored_salted_and_slow(chdb_dsn: str) -> None:
    conn = clickhouse.connect(chdb_dsn)
    digest = hashlib.sha256(SECRET.encode()).hexdigest()
    rows = conn.rows(
        f"SELECT algorithm, n, r, p, dklen, length(salt), hash "
        f"FROM {conn.table(schema.CREDENTIAL_TABLE)}"
    )
    assert len(rows) == 1
    algorithm, n, r, p, dklen, salt_hex_len, stored = rows[0]
    assert (algorithm, n, r, p, dklen) == ("scrypt", 2**15, 8, 1, 32)
    assert salt_hex_len == 32 and stored != digest
    dump = _dump(conn)
    assert SECRET not in dump and digest not in dump
    assert schema.applied_versions(conn) >= {7}
    tables = {r[0] for r in conn.rows("SELECT name FROM system.tables")}
    assert "purge_credentials" not in tables  # the unsalted table is gone


def test_reconfiguring_the_same_credential_is_a_no_op_and_a_new_one_replaces_it(
    chdb_dsn: str,
) -> None:
    conn = clickhouse.connect(chdb_dsn)
    digest = hashlib.sha256(SECRET.encode()).hexdigest()
    assert schema.configure_purge_credential(conn, digest) is False
    other = "another secret"
    assert schema.configure_purge_credential(conn, hashlib.sha256(other.encode()).hexdigest())
    with pytest.raises(PurgeDenied, match="rejected"):
        purge.verify_credential(conn, SECRET)
    purge.verify_credential(conn, other)


def test_an_old_sha256_credential_is_migrated_and_keeps_working(tmp_path: Path) -> None:
    """A database of schema 6 holds the bare SHA-256 in purge_credentials; migration 7
    stores it as scrypt and drops that table, and the same credential still purges."""
    clickhouse.close_all()
    try:
        conn = clickhouse.connect(f"chdb://{tmp_path}/old")
        conn.command(f"CREATE DATABASE IF NOT EXISTS `{conn.database}`")
        conn.command(schema._migrations_table(conn.database))
        for migration in schema.MIGRATIONS[:6]:
            if not migration.server_only:
                for stmt in migration.statements(conn.database):
                    conn.command(stmt)
            conn.insert(
                "schema_migrations",
                [[migration.version, migration.name, "", schema._now(), ""]],
                ["version", "name", "checksum", "applied_at", "note"],
            )
        digest = hashlib.sha256(SECRET.encode()).hexdigest()
        conn.insert(
            "purge_credentials", [[digest, schema._now()]], ["credential_sha256", "configured_at"]
        )
        report = schema.migrate(conn, credential_sha256=None)
        assert {7, 9, 10, 12} <= set(report.applied) and 8 in report.skipped
        ClickHouseWriter(conn.target.dsn).write(samples.sample_records())
        assert digest not in _dump(conn)
        tables = {r[0] for r in conn.rows("SELECT name FROM system.tables")}
        assert "purge_credentials" not in tables
        result = purge.purge_run(conn, "run-a", SECRET, actor="t")
        assert result.total > 0
        with pytest.raises(PurgeDenied, match="rejected"):
            purge.verify_credential(conn, digest)  # the hash itself is no credential
    finally:
        clickhouse.close_all()


def test_the_analyst_path_cannot_read_the_credential_or_the_attempts(chdb_dsn: str) -> None:
    runner = CliRunner()
    for sql in (
        f"SELECT * FROM {schema.CREDENTIAL_TABLE}",
        f"SELECT * FROM outcomes.`{schema.CREDENTIAL_TABLE}`",
        "SELECT salt, hash FROM `purge\\x5fcredential\\x5fhashes`",
        'SELECT * FROM "purge_credential_hashes" AS p',
        "SELECT 1 WHERE 'x' IN purge_credential_hashes",
        "SELECT * FROM purge_attempts",
        "SELECT * FROM `outcomes`.`purge\\x5fattempts`",
    ):
        out = runner.invoke(main, ["query", sql, "--clickhouse", chdb_dsn])
        assert out.exit_code == 1, out.output
        assert "is not one analysts read" in out.output, out.output
        assert len(out.output.strip().splitlines()) == 1


def _attempts(conn: clickhouse.Connection) -> list[dict[str, object]]:
    names = purge_attempts.COLUMNS
    rows = conn.rows(
        f"SELECT {', '.join(names)} FROM {conn.table(purge_attempts.TABLE)} ORDER BY attempted_at"
    )
    return [dict(zip(names, row, strict=True)) for row in rows]


def test_every_attempt_is_recorded_refused_ones_included(chdb_dsn: str, tmp_path: Path) -> None:
    runner = CliRunner()
    tries = [
        ({"OUTCOMES_PURGE_CREDENTIAL": ""}, "run-a", "no purge credential"),
        ({"OUTCOMES_PURGE_CREDENTIAL": "guess"}, "run-a", "purge credential rejected"),
        ({"OUTCOMES_PURGE_CREDENTIAL": SECRET}, "run-zz", "no run run-zz"),
        ({"OUTCOMES_PURGE_CREDENTIAL": SECRET}, "run-b", ""),
    ]
    for env, run, refusal in tries:
        out = runner.invoke(
            main,
            ["purge", "--run", run, "--clickhouse", chdb_dsn, "--reason", "ticket 7"],
            env={**env, "OUTCOMES_PURGE_ACTOR": "mallory"},
        )
        assert out.exit_code == (1 if refusal else 0), out.output
    conn = clickhouse.connect(chdb_dsn)
    assert _rows_of(conn, "run-a") > 0
    seen = _attempts(conn)
    assert [(a["run_id"], a["outcome"]) for a in seen] == [
        ("run-a", "refused"),
        ("run-a", "refused"),
        ("run-zz", "refused"),
        ("run-b", "completed"),
    ]
    for attempt, (_, _, refusal) in zip(seen, tries, strict=True):
        assert refusal in str(attempt["refusal"])
        assert attempt["actor"] == "mallory" and attempt["reason"] == "ticket 7"
        assert attempt["os_user"] and attempt["host"] and attempt["clickhouse_user"]
        assert SECRET not in str(attempt) and "guess" not in str(attempt)
    logged = conn.rows(
        f"SELECT DISTINCT toString(purge_id) FROM {conn.table('purge_log')} WHERE run_id = 'run-b'"
    )
    assert [(str(seen[-1]["purge_id"]),)] == logged
    assert all(a["purge_id"] is None for a in seen[:-1])


def test_a_refused_library_call_is_recorded_too(chdb_dsn: str) -> None:
    conn = clickhouse.connect(chdb_dsn)
    with pytest.raises(PurgeDenied):
        purge.purge_run(conn, "run-c", "wrong", actor="script")
    (attempt,) = _attempts(conn)
    assert (attempt["run_id"], attempt["outcome"], attempt["actor"]) == (
        "run-c",
        "refused",
        "script",
    )


def test_the_attempts_table_is_migration_12_and_not_granted_to_analysts() -> None:
    (migration,) = [m for m in schema.MIGRATIONS if m.version == 12]
    assert migration.statements("outcomes") == purge_attempts.ddl("outcomes")
    statements = [s for m in schema.MIGRATIONS for s in m.statements("outcomes")]
    assert not any("purge_attempts" in s and "outcomes_analyst" in s for s in statements)


def test_a_purge_removes_the_runs_input_events_too(chdb_dsn: str) -> None:
    """The events table holds a run's words (its task, its narrative): purged with it."""
    conn = clickhouse.connect(chdb_dsn)
    store = EventStore(conn)
    events = [
        {
            "event_id": f"{run}-s",
            "run_id": run,
            "type": "run.started",
            "source": "t",
            "occurred_at": "2026-12-07T10:00:00.000000Z",
            "agent": "coder",
            "requested_by": "user:ana",
            "model": None,
            "task": "Fix the parser",
        }
        for run in ("run-b", "run-c")
    ]
    assert store.write([row_of(e, 0, i) for i, e in enumerate(events)]) == (2, 0)
    assert purge.count_run_rows(conn, "run-b")["events"] == 1
    purge.purge_run(conn, "run-b", SECRET, actor="dpo@example")
    assert purge.count_run_rows(conn, "run-b")["events"] == 0
    assert purge.count_run_rows(conn, "run-c")["events"] == 1
    assert store.write([row_of(events[0], 0, 0)]) == (0, 1)  # never written again
