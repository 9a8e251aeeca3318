"""Schema migrations on chDB: versioned, idempotent, named honestly (SPEC sections 4, 5)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from outcomes.devtools import samples
from outcomes.sinks import clickhouse, schema
from outcomes.sinks.writer import ClickHouseWriter

pytestmark = pytest.mark.clickhouse


@pytest.fixture
def chdb_dsn(tmp_path: Path) -> Iterator[str]:
    """A fresh chDB directory for this test; the engine is closed afterwards.

    chDB runs one engine per process, but closing every client frees it, so each test
    can open its own path (sinks/clickhouse.py, docs/clickhouse.md).
    """
    clickhouse.close_all()
    yield f"chdb://{tmp_path}/chdb"
    clickhouse.close_all()


def _objects(conn: clickhouse.Connection) -> dict[str, str]:
    rows = conn.rows(
        "SELECT name, engine FROM system.tables WHERE database = %(db)s", {"db": conn.database}
    )
    return {str(name): str(engine) for name, engine in rows}


def test_migrate_creates_every_table_and_view(chdb_dsn: str) -> None:
    conn = clickhouse.connect(chdb_dsn)
    report = schema.migrate(conn)
    assert report.applied == [1, 2, 3, 5, 7, 9, 10]
    assert report.skipped == [4, 6, 8]  # roles: chDB has no access control
    objects = _objects(conn)
    for table in schema.DATA_TABLES:
        assert objects[table.name] == "ReplacingMergeTree"
    for view in schema.VIEWS:
        assert objects[view] == "View"
    assert objects["purge_log"] == "MergeTree"
    assert objects["schema_migrations"] == "MergeTree"


def test_migrate_is_idempotent_and_versioned(chdb_dsn: str) -> None:
    conn = clickhouse.connect(chdb_dsn)
    schema.migrate(conn)
    again = schema.migrate(conn)
    assert again.applied == [] and again.skipped == []
    assert again.present == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    rows = conn.rows(
        f"SELECT version, count(), any(note) FROM {conn.table('schema_migrations')} "
        "GROUP BY version ORDER BY version"
    )
    assert [(v, n) for v, n, _ in rows] == [(v, 1) for v in range(1, 11)]
    assert "chDB has no access control" in rows[3][2]
    assert "chDB has no access control" in rows[5][2]
    # Every statement of every migration is safe to run again (one interrupted half-way
    # is re-run from its start).
    for migration in schema.MIGRATIONS:
        if not migration.server_only:
            for stmt in migration.statements(conn.database):
                conn.command(stmt)
    assert _columns(conn, "claim_verdicts") == list(schema.CLAIM_VERDICTS.column_names)


def _columns(conn: clickhouse.Connection, table: str) -> list[str]:
    rows = conn.rows(
        "SELECT name FROM system.columns WHERE database = %(db)s AND table = %(t)s "
        "ORDER BY position",
        {"db": conn.database, "t": table},
    )
    return [str(r[0]) for r in rows]


def test_a_database_of_schema_4_gains_settlements_and_keeps_its_verdicts(chdb_dsn: str) -> None:
    """Migration 5 on a database that already holds verdicts (ids `<run>:<narrative>:<n>`,
    no settlement columns): the columns join, the old rows stay, each is its own claim
    in the current view, and settled verdicts can be written beside them."""
    conn = clickhouse.connect(chdb_dsn)
    conn.command(f"CREATE DATABASE IF NOT EXISTS `{conn.database}`")
    conn.command(schema._migrations_table(conn.database))
    for migration in schema.MIGRATIONS[:3]:  # what a database of version 3 (+4) holds
        for stmt in migration.statements(conn.database):
            conn.command(stmt)
        conn.insert(
            "schema_migrations",
            [
                [
                    migration.version,
                    migration.name,
                    migration.checksum(conn.database),
                    schema._now(),
                    "",
                ]
            ],
            ["version", "name", "checksum", "applied_at", "note"],
        )
    old = schema.CLAIM_VERDICTS_V1.column_names
    conn.insert(
        "claim_verdicts",
        [
            ["run-z", "n", 0, "run-z:n:0", "e", 1, "completion", "contradicted", None, 0, 4,
             "Done", "status_unresolved"],
            ["run-z", "n", 1, "run-z:n:1", "e", 1, "verification", "omitted", "check:unit",
             None, None, None, "check_stale"],
        ],
        list(old),
    )  # fmt: skip
    report = schema.migrate(conn)
    assert report.applied == [5, 7, 9, 10] and report.skipped == [4, 6, 8]
    assert _columns(conn, "claim_verdicts") == list(schema.CLAIM_VERDICTS.column_names)
    current = conn.rows(
        f"SELECT claim_id, settlement, verdict FROM {conn.table('current_claim_verdicts')} "
        "ORDER BY claim_id"
    )
    assert current == [("run-z:n:0", 1, "contradicted"), ("run-z:n:1", 1, "omitted")]

    from outcomes.devtools.samples import verdict
    from outcomes.sinks.writer import ClickHouseWriter

    first = verdict("run-y", "n", "0", "completion", "contradicted", "status_blocked", None)
    later = verdict("run-y", "n", "0", "completion", "supported", "status_complete", None,
                    revision=2, settlement=2)  # fmt: skip
    ClickHouseWriter(chdb_dsn).write([first, later])
    current = conn.rows(
        f"SELECT claim_id, settlement, verdict FROM {conn.table('current_claim_verdicts')} "
        "WHERE run_id = 'run-y'"
    )
    assert current == [("run-y:n:0", 2, "supported")]


def test_ensure_schema_migrates_embedded_engine(chdb_dsn: str) -> None:
    conn = clickhouse.connect(chdb_dsn)
    assert schema.applied_versions(conn) == set()
    schema.ensure_schema(conn)
    assert {1, 2, 3} <= schema.applied_versions(conn)


def test_dsn_database_selects_another_database(chdb_dsn: str) -> None:
    conn = clickhouse.connect(chdb_dsn + "?database=analytics_b")
    schema.migrate(conn)
    assert "account_revisions" in _objects(conn)
    assert conn.database == "analytics_b"


def test_names_do_not_claim_attention_use_or_influence(chdb_dsn: str) -> None:
    conn = clickhouse.connect(chdb_dsn)
    schema.migrate(conn)
    banned = re.compile(r"attent|influenc|(^|_)used?($|_)|consumed|relied", re.IGNORECASE)
    rows = conn.rows(
        "SELECT table, name FROM system.columns WHERE database = %(db)s", {"db": conn.database}
    )
    names = {t for t, _ in rows} | {c for _, c in rows}
    offending = sorted(n for n in names if banned.search(n))
    assert offending == []


def test_role_migration_grants_least_privilege() -> None:
    stmts = [s for m in schema.MIGRATIONS if m.server_only for s in m.statements("outcomes")]
    roles = schema.role_names("outcomes")
    analyst = [s for s in stmts if s.endswith(f"TO `{roles['analyst']}`")]
    sink = [s for s in stmts if s.endswith(f"TO `{roles['sink']}`")]
    purge = [s for s in stmts if s.endswith(f"TO `{roles['purge']}`")]
    assert analyst and all(s.startswith("GRANT SELECT ON") for s in analyst)
    assert not any("purge_credentials" in s for s in analyst + sink)
    assert not any("DELETE" in s or "ALTER" in s for s in analyst + sink)
    assert all("INSERT" in s or "SELECT(" in s or "SELECT ON" in s for s in sink)
    assert any("ALTER DELETE ON `outcomes`.`account_revisions`" in s for s in purge)


def test_invalid_dsn_is_a_clear_error() -> None:
    from outcomes.sinks.exceptions import InvalidDsn

    for bad in ("mysql://x", "chdb://relative/path", "http://", "chdb:///p?database=1x"):
        with pytest.raises(InvalidDsn):
            clickhouse.parse_dsn(bad)


def test_current_claim_verdicts_show_the_supported_formulation(chdb_dsn: str) -> None:
    """Migration 10: the view carries migration 9's column, for the current settlement."""
    plain = samples.verdict(
        "run-s", "n1", "c1", "verification", "contradicted", "check_failed", (0, 9, "tests pass")
    )
    supported = "the unit check has not passed on the final candidate snap-2"
    first = dataclasses.replace(plain, body={**plain.body, "supported": supported})
    second = samples.verdict(
        "run-s", "n1", "c1", "verification", "supported", "check_passed", None, settlement=2
    )
    writer = ClickHouseWriter(chdb_dsn)
    schema.migrate(writer.conn)
    query = f"SELECT verdict, supported FROM {writer.conn.table('current_claim_verdicts')}"
    writer.write([first])
    assert writer.conn.rows(query) == [("contradicted", supported)]
    writer.write([second])
    assert writer.conn.rows(query) == [("supported", None)]
