"""How the analyst path decides a statement (outcomes.sinks.guard), on a chDB sample.

ClickHouse parses the text; the tree is checked against allowlists; ClickHouse prints
the statement back and that text, parsed again, is what is checked and run. These
tests show what passes (and as which normalised statement, reading which tables), that
the allowlists come from the migrations and the engine's function catalogue, that the
session's limits cannot be changed by anything sent on it, and what `readonly = 1`
alone would let through on chDB (why the engine's parse decides). The hostile
statements themselves are in tests/test_hostile_statements.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from clickhouse_connect.driver.exceptions import Error as DriverError

from outcomes.sinks import clickhouse, guard, query, schema
from tests.chdb_support import sample_database

pytestmark = pytest.mark.clickhouse


@pytest.fixture
def chdb_dsn(tmp_path: Path) -> Iterator[str]:
    with sample_database(tmp_path) as dsn:
        yield dsn


@pytest.fixture
def session(chdb_dsn: str) -> Iterator[query.AnalystSession]:
    conn = clickhouse.open_private(chdb_dsn)
    conn.use_database()
    try:
        yield query.AnalystSession(conn, final=True)
    finally:
        clickhouse.close(conn)


def decide(session: query.AnalystSession, sql: str, **kwargs: object) -> guard.Statement:
    catalogue = query.catalogue_for(session.key, session.conn.database, session.ask)
    return guard.decide(sql, session.ask, catalogue, **kwargs)  # type: ignore[arg-type]


# (statement, what runs, the tables it reads)
ALLOWED: tuple[tuple[str, str, set[str]], ...] = (
    (
        "select status, count() from current_accounts group by status;",
        "SELECT status, count() FROM current_accounts GROUP BY status",
        {"outcomes.current_accounts"},
    ),
    (
        "WITH n AS (SELECT run_id FROM account_revisions) SELECT * FROM n -- a comment",
        "WITH n AS (SELECT run_id FROM account_revisions) SELECT * FROM n",
        {"outcomes.account_revisions", "(cte).n"},
    ),
    ("(SELECT 1) UNION ALL (SELECT 2)", "SELECT 1 UNION ALL SELECT 2", set()),
    (
        "SELECT 'INTO OUTFILE; file(''x'') SETTINGS' AS text /* just text */",
        "SELECT 'INTO OUTFILE; file(\\'x\\') SETTINGS' AS text",
        set(),
    ),
    ("SELECT \u2018a\u2019 AS \u201cb\u201d", "SELECT 'a' AS b", set()),
    ("SELECT $$it's$$", "SELECT 'it\\'s'", set()),
    (
        "SELECT run_id FROM `current\\x5faccounts` WHERE status IN ('a') ORDER BY 1 LIMIT 1",
        "SELECT run_id FROM current_accounts WHERE status IN ('a') ORDER BY 1 ASC LIMIT 1",
        {"outcomes.current_accounts"},
    ),
    (
        "SELECT countIf(status = 'x'), uniqExactIf(run_id, 1), quantile(0.9)(revision), "
        "row_number() OVER (PARTITION BY run_id ORDER BY revision) FROM account_revisions "
        "GROUP BY run_id, revision",
        "SELECT countIf(status = 'x'), uniqExactIf(run_id, 1), quantile(0.9)(revision), "
        "row_number() OVER (PARTITION BY run_id ORDER BY revision ASC) FROM account_revisions "
        "GROUP BY run_id, revision",
        {"outcomes.account_revisions"},
    ),
    ("SHOW TABLES", "SHOW TABLES", set()),
    ("describe current_accounts", "DESCRIBE TABLE current_accounts", {"outcomes.current_accounts"}),
    (
        "EXPLAIN indexes = 1 SELECT count() FROM outcomes.account_revisions",
        "EXPLAIN indexes = 1 SELECT count() FROM outcomes.account_revisions",
        {"outcomes.account_revisions"},
    ),
    ("SELECT 1 FROM `sys\\x74em`.one", "SELECT 1 FROM system.one", {"system.one"}),
)


@pytest.mark.parametrize(("sql", "runs", "tables"), ALLOWED)
def test_what_passes_runs_as_clickhouse_prints_it(
    session: query.AnalystSession, sql: str, runs: str, tables: set[str]
) -> None:
    decided = decide(session, sql)
    assert " ".join(decided.sql.split()) == runs
    assert decided.tables == tables
    session.run(decided.sql, stream=decided.kind == "select")  # and the engine answers it


def test_a_bare_name_after_in_is_a_table_read(session: query.AnalystSession) -> None:
    decided = decide(session, "SELECT 1 WHERE 'x' IN schema_migrations")
    assert decided.tables == {"outcomes.schema_migrations"}


def test_the_answers_are_the_engines(chdb_dsn: str) -> None:
    assert query.run_query(chdb_dsn, ALLOWED[3][0]).rows == [("INTO OUTFILE; file('x') SETTINGS",)]
    shown = query.run_query(chdb_dsn, "SHOW TABLES").rows
    assert ("current_accounts",) in shown


def test_the_readable_tables_are_the_analyst_roles_grants_never_a_purge_table() -> None:
    db = "outcomes"
    statements = [s for m in schema.MIGRATIONS for s in m.statements(db)]
    readable = guard.analyst_grants(statements, db)
    assert {"current_accounts", "account_revisions", "purge_log"} <= readable
    assert not readable & guard.SECRET_TABLES
    # Even a grant by mistake does not make a purge table readable here.
    granted = [*statements, f"GRANT SELECT ON `{db}`.`purge_credential_hashes` TO `{db}_analyst`"]
    assert "purge_credential_hashes" not in guard.analyst_grants(granted, db)
    revoked = [*statements, f"REVOKE ALL ON `{db}`.`purge_log` FROM `{db}_analyst`"]
    assert "purge_log" not in guard.analyst_grants(revoked, db)


def test_functions_come_from_the_engines_catalogue_by_category(
    session: query.AnalystSession,
) -> None:
    catalogue = query.catalogue_for(session.key, session.conn.database, session.ask)
    for name in ("count", "sumIf", "uniqExactOrNullIf", "lower", "LOWER", "toDate", "arrayMap"):
        assert catalogue.function(name) is not None, name
    for name in ("file", "getServerSetting", "hostName", "sleep", "dictGet", "joinGet"):
        assert catalogue.function(name) is None, name
    for name in ("currentUser", "current_user", "hasColumnInTable", "aiGenerate", "logTrace"):
        assert catalogue.function(name) is None, name


@pytest.mark.parametrize(
    ("sql", "why"),
    [
        ("SELECT 1; SELECT 2", "several statements"),
        ("SELECT 1 INTO OUTFILE 'x'", "INTO OUTFILE"),
        ("SELECT 1 SETTINGS readonly = 0", "SETTINGS"),
        ("SELECT * FROM numbers(3)", "table function"),
        ("SELECT hostName()", "function hostName"),
        ("SELECT * FROM purge_credential_hashes", "'purge_credential_hashes'"),
        ("SELECT * FROM {t:Identifier}", "query parameters"),
        ("SELECT 1 FORMAT CSV", "FORMAT"),
        ("INSERT INTO purge_log (run_id) VALUES ('x')", "INSERT"),
        ("ALTER TABLE purge_log DELETE WHERE 1", "ALTER"),
        ("SELECT " + "(" * 3000 + "1" + ")" * 3000, "1"),
    ],
)
def test_refusals_say_why_in_one_line(session: query.AnalystSession, sql: str, why: str) -> None:
    with pytest.raises(guard.Refused) as refused:
        decide(session, sql)
    message = str(refused.value)
    assert why in message and "\n" not in message


def test_a_format_clause_is_taken_only_where_formats_are_served(
    session: query.AnalystSession,
) -> None:
    decided = decide(session, "SELECT 1 FORMAT JSONEachRow", formats={"jsoneachrow": "JSONEachRow"})
    assert (decided.sql, decided.fmt) == ("SELECT 1", "JSONEachRow")
    with pytest.raises(guard.Refused, match="output format Template"):
        decide(session, "SELECT 1 FORMAT Template", formats={"json": "JSON"})


def test_the_session_cannot_change_its_limits(session: query.AnalystSession) -> None:
    shown = session.run(
        "SELECT getSetting('readonly'), getSetting('max_execution_time'), "
        "getSetting('max_memory_usage'), getSetting('max_result_rows'), getSetting('final')"
    ).rows[0]
    limits = query.LIMITS
    assert shown[:4] == (1, limits["max_execution_time"], limits["max_memory_usage"], 1_000_000)
    for statement in ("SET readonly = 0", "SET max_execution_time = 0", "SET final = 0"):
        with pytest.raises(DriverError, match="readonly"):
            session.conn.client.command(statement)


def test_what_readonly_alone_lets_through_on_chdb(chdb_dsn: str, tmp_path: Path) -> None:
    """The session without the engine's parse deciding: chDB under readonly = 1 still
    writes INTO OUTFILE, runs every statement of a text and reads any table. This is
    why the statement is decided from ClickHouse's tree, and only its print runs."""
    conn = clickhouse.open_private(chdb_dsn)
    conn.use_database()
    try:
        raw = query.AnalystSession(conn, final=True)
        raw.run(f"SELECT 1 INTO OUTFILE '{tmp_path}/out.csv'", stream=False)
        assert (tmp_path / "out.csv").exists()
        assert raw.run("SELECT 1; SELECT 2", stream=False).rows == [(1,), (2,)]
        assert len(raw.run("SELECT hash FROM purge_credential_hashes", stream=False).rows) == 1
    finally:
        clickhouse.close(conn)
    for sql in (
        "SELECT 1 INTO OUTFILE 'x'",
        "SELECT 1; SELECT 2",
        "SELECT hash FROM purge_credential_hashes",
    ):
        with pytest.raises(guard.Refused):
            query.run_query(chdb_dsn, sql)


def test_server_migration_creates_a_select_only_analyst_user() -> None:
    """The server side, as SQL text (no server here: untested against one)."""
    db = "outcomes"
    roles = schema.role_names(db)
    user = schema.analyst_user(db)
    stmts = [s for m in schema.MIGRATIONS if m.server_only for s in m.statements(db)]
    assert f"CREATE USER IF NOT EXISTS `{user}` IDENTIFIED WITH no_password HOST NONE" in stmts
    assert f"GRANT `{roles['analyst']}` TO `{user}`" in stmts
    assert f"ALTER USER `{user}` DEFAULT ROLE `{roles['analyst']}`" in stmts
    assert stmts.index(f"REVOKE ALL ON *.* FROM `{user}`") < stmts.index(
        f"GRANT `{roles['analyst']}` TO `{user}`"
    )
    to_user = [s for s in stmts if s.endswith(f"TO `{user}`")]
    assert to_user == [f"GRANT `{roles['analyst']}` TO `{user}`"]
    analyst = [s for s in stmts if s.endswith(f"TO `{roles['analyst']}`")]
    readable = {*(t.name for t in schema.DATA_TABLES), *schema.VIEWS}
    readable |= {"purge_log", "schema_migrations", schema.EVENTS_TABLE}  # input events (18)
    granted = set()
    for s in analyst:
        assert s.startswith(f"GRANT SELECT ON `{db}`.`"), s
        granted.add(s.split("`")[3])
    assert granted == readable
    assert not any(schema.CREDENTIAL_TABLE in s for s in analyst)
    assert f"GRANT SELECT ON `{db}`.`{schema.CREDENTIAL_TABLE}` TO `{roles['purge']}`" in stmts
    assert not any(
        w in s
        for s in analyst
        for w in ("TEMPORARY", "FILE", "URL", "REMOTE", "S3", "SOURCES", "dictGet", "*.*")
    )
