"""Schema migrations on chDB: versioned, idempotent, named honestly (SPEC sections 4, 5)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from outcomes.devtools import samples
from outcomes.sinks import clickhouse, schema
from outcomes.sinks.rows import rows_for
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


# Versions by where they run (11 and 12 belong to other changes and may come and go).
EMBEDDED = [m.version for m in schema.MIGRATIONS if not m.server_only]
SERVER_ONLY = [m.version for m in schema.MIGRATIONS if m.server_only]
ALL_VERSIONS = [m.version for m in schema.MIGRATIONS]


def test_migrate_creates_every_table_and_view(chdb_dsn: str) -> None:
    conn = clickhouse.connect(chdb_dsn)
    report = schema.migrate(conn)
    assert report.applied == EMBEDDED and {1, 2, 3, 5, 7, 9, 10, 13} <= set(EMBEDDED)
    assert report.skipped == SERVER_ONLY and {4, 6, 8, 14} <= set(SERVER_ONLY)
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
    assert again.present == ALL_VERSIONS
    rows = conn.rows(
        f"SELECT version, count(), any(note) FROM {conn.table('schema_migrations')} "
        "GROUP BY version ORDER BY version"
    )
    assert [(v, n) for v, n, _ in rows] == [(v, 1) for v in ALL_VERSIONS]
    notes = {v: note for v, _, note in rows}
    assert all("chDB has no access control" in notes[v] for v in SERVER_ONLY)
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
    assert report.applied == [v for v in EMBEDDED if v > 3]
    assert report.skipped == SERVER_ONLY
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


def _to_version(conn: clickhouse.Connection, version: int) -> None:
    """Make `conn`'s database what an older release left: migrations up to `version`."""
    conn.command(f"CREATE DATABASE IF NOT EXISTS `{conn.database}`")
    conn.command(schema._migrations_table(conn.database))
    for migration in schema.MIGRATIONS:
        if migration.version > version:
            break
        if not migration.server_only:
            for stmt in migration.statements(conn.database):
                conn.command(stmt)
            if migration.then is not None:
                migration.then(conn)
        conn.insert(
            "schema_migrations",
            [[migration.version, migration.name, migration.checksum(conn.database),
              schema._now(), ""]],
            ["version", "name", "checksum", "applied_at", "note"],
        )  # fmt: skip


# Every object analysts read whose rows migration 13 moves or re-derives.
_SHOWN = [*schema.RECORD_VIEWS, *schema._V1_VIEWS, "current_claim_verdicts"]


def _everything(conn: clickhouse.Connection) -> dict[str, list[tuple[object, ...]]]:
    out = {}
    for name in _SHOWN:
        rows = conn.rows(f"SELECT * FROM {conn.table(name)}")
        out[name] = sorted(rows, key=repr)
    return out


def test_migration_13_moves_a_version_10_database_into_the_record_tables(chdb_dsn: str) -> None:
    """A database of the old layout (one table per row type, filled as the old writer
    did) migrates: its old tables become views showing exactly the rows, and every view
    exactly the answers, that the same records give when written into the new layout;
    an interrupted move re-run adds nothing twice."""
    from outcomes.devtools.workload import generate_runs
    from outcomes.reducers.engine import Engine
    from outcomes.reducers.validate import parse_event

    engine = Engine()
    records = samples.sample_records()
    for run in generate_runs(12, seed=5, padding=1):
        for event in run:
            records += engine.apply(parse_event(event))
    new = clickhouse.connect(chdb_dsn + "?database=new_layout")
    schema.migrate(new)
    ClickHouseWriter(chdb_dsn + "?database=new_layout").write(records)
    want = _everything(new)
    assert all(want[name] for name in ("predicate_results", "journal_retrieval_events",
                                       "provenance_findings", "notifications"))  # fmt: skip

    old = clickhouse.connect(chdb_dsn + "?database=old_layout")
    _to_version(old, 10)
    assert _objects(old)["predicate_results"] == "ReplacingMergeTree"
    for table in schema.LEGACY_TABLES:  # the old tables, filled row for row
        # (its columns by name: migration 15 added two to the account_revisions view)
        columns = ", ".join(f"`{name}`" for name in table.column_names)
        rows = new.rows(f"SELECT {columns} FROM {new.table(table.name)}")
        old.insert(table.name, rows, table.column_names)
    # A move interrupted after a part of the revisions landed in the new table.
    for stmt in schema._record_tables_ddl(old.database):
        old.command(stmt)
    half = [row for r in records[::2] for t, row in rows_for(r) if t == "account_revision_rows"]
    ClickHouseWriter.on(old).write_rows({"account_revision_rows": half})

    report = schema.migrate(old)
    assert 13 in report.applied
    objects = _objects(old)
    for name in schema.RECORD_VIEWS:
        assert objects[name] == "View", name
    assert _everything(old) == want
    for table in schema.DATA_TABLES:  # every row stored once physically
        raw = old.rows(f"SELECT count() FROM {old.table(table.name)}")[0][0]
        final = old.rows(f"SELECT count() FROM {old.table(table.name)} FINAL")[0][0]
        assert raw == final, table.name
    schema._move_into_record_tables(old)  # again: nothing is left to move
    assert _everything(old) == want


def test_migration_15_shows_each_revisions_requirement_policy(chdb_dsn: str) -> None:
    """SPEC 3.2: the policy a revision was judged by is a column of `account_revisions`
    and `current_accounts`, read from the stored account (null in a revision stored
    before the field existed)."""
    conn = clickhouse.connect(chdb_dsn)
    _to_version(conn, 14)
    writer = ClickHouseWriter(chdb_dsn)
    before = samples.account("run-p", 1, status="failed", minute=1)
    writer.write([before])
    schema.migrate(writer.conn)
    after = samples.account("run-p", 2, status="complete", minute=2)
    source = "policy:.outcomes/policy.toml sha256:0123456789ab"
    body = {**after.body, "requirement_policy": "observed", "requirement_source": source}
    writer.write([dataclasses.replace(after, body=body)])
    table = writer.conn.table("account_revisions")
    rows = writer.conn.rows(
        f"SELECT revision, requirement_policy, requirement_source FROM {table} ORDER BY revision"
    )
    assert rows == [(1, None, None), (2, "observed", source)]
    current = writer.conn.rows(
        f"SELECT requirement_policy FROM {writer.conn.table('current_accounts')}"
    )
    assert current == [("observed",)]
    # The writer's columns are unchanged: the sink needs no new code for them.
    assert "requirement_policy" not in schema.ACCOUNT_REVISION_ROWS.column_names
