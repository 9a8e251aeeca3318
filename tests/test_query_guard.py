"""The analyst path is read-only: hostile statements through `outcomes query` on chDB.

Every statement of HOSTILE is refused with exit code 1 and one line, and afterwards the
files it aims at, the tables and a listening socket are untouched. ClickHouse's own
`readonly = 1` is shown to refuse what it covers with the guard bypassed; what it does
not cover (INTO OUTFILE, several statements) is why sinks/guard.py exists.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from outcomes.cli.main import main
from outcomes.sinks import clickhouse, guard, query, schema
from outcomes.sinks.exceptions import QueryFailed
from tests.chdb_support import sample_database

pytestmark = pytest.mark.clickhouse

# {d}: the directory the statements aim at (it holds secret.txt); {port}: a listening
# socket on 127.0.0.1 that must see no connection.
HOSTILE: tuple[str, ...] = (
    # writes to files
    "INSERT INTO FUNCTION file('{d}/w.csv','CSV','x Int32') VALUES (1)",
    "SELECT 1 INTO OUTFILE '{d}/out.csv'",
    "(SELECT number FROM numbers(3)) INTO OUTFILE '{d}/out2.csv' FORMAT CSV",
    "BACKUP TABLE account_revisions TO File('{d}/backup')",
    # reads of local files
    "SELECT * FROM file('{d}/secret.txt','LineAsString')",
    "SELECT file('{d}/secret.txt')",
    "sElEcT * fRoM FiLe('{d}/secret.txt', 'LineAsString')",
    "SELECT\t*\nFROM\n  file\n  (\n'{d}/secret.txt'\n,'LineAsString')",
    "SELECT * FROM `file`('{d}/secret.txt','LineAsString')",
    "SELECT * FROM \"file\"('{d}/secret.txt','LineAsString')",
    "SELECT * FROM view(SELECT * FROM file('{d}/secret.txt','LineAsString'))",
    "WITH s AS (SELECT * FROM file('{d}/secret.txt','LineAsString')) SELECT * FROM s",
    "SELECT 'x' UNION ALL SELECT * FROM file('{d}/secret.txt','LineAsString')",
    "SELECT * FROM deltaLakeLocal('{d}')",
    "SELECT * FROM sqlite('{d}/secret.txt', 't')",
    "DESCRIBE file('{d}/secret.txt','LineAsString')",
    # other servers, URLs, processes
    "SELECT * FROM url('http://127.0.0.1:{port}/x','CSV','a String')",
    "SELECT * FROM URL('http://127.0.0.1:{port}/x','CSV','a String')",
    "SELECT * FROM s3('http://127.0.0.1:{port}/bucket/x.csv','CSV','a String')",
    "SELECT * FROM remote('127.0.0.1:{port}', system.one)",
    "SELECT * FROM remoteSecure('127.0.0.1:{port}', system.one)",
    "SELECT * FROM cluster('default', system.one)",
    "SELECT * FROM clusterAllReplicas('default', system.one)",
    "SELECT * FROM mysql('127.0.0.1:{port}', 'db', 't', 'u', 'p')",
    "SELECT * FROM postgresql('127.0.0.1:{port}', 'db', 't', 'u', 'p')",
    "SELECT * FROM hdfs('hdfs://127.0.0.1:{port}/x', 'CSV', 'a String')",
    "SELECT * FROM jdbc('jdbc:mysql://127.0.0.1:{port}/db', 't')",
    "SELECT * FROM odbc('DSN=x', 'db', 't')",
    "SELECT * FROM executable('ls', 'TSV', 'a String')",
    "SELECT * FROM input('a String')",
    "SELECT * FROM format(CSV, 'a\n1')",
    # dictionaries, other databases by pattern
    "SELECT dictGet('secrets', 'value', toUInt64(1))",
    "SELECT * FROM dictionary('secrets')",
    "SELECT joinGet('t', 'v', 1)",
    "SELECT * FROM merge('system', '^users$')",
    # secrets
    "SELECT * FROM purge_credential_hashes",
    "SELECT hash, salt FROM outcomes.purge_credential_hashes",
    "SELECT * FROM `purge_credential_hashes`",
    "SELECT * FROM purge_credentials",
    "SELECT * FROM system.users",
    "SELECT * FROM system.grants",
    'SELECT * FROM "system"."role_grants"',
    "SELECT * FROM system . settings_profiles",
    "SELECT * FROM system.named_collections",
    "SELECT * FROM system.processes",
    "SELECT query FROM system.query_log",
    "SELECT * FROM system.dictionaries",
    "SHOW GRANTS",
    # settings that lift the restriction
    "SELECT 1 SETTINGS readonly=0",
    "SELECT * FROM file('{d}/secret.txt','LineAsString') SETTINGS readonly = 0",
    "SET readonly = 0",
    "SELECT count() FROM account_revisions SETTINGS final = 0",
    # several statements, hidden by comments and quotes
    "SELECT 1; DROP TABLE account_revisions",
    "SELECT 1 -- harmless\n; INSERT INTO FUNCTION file('{d}/w2.csv','CSV','x Int32') VALUES (1)",
    "SELECT 1 /* harmless */; TRUNCATE TABLE account_revisions",
    "SELECT 1 /* /* nested */ ; DROP TABLE purge_log */",
    "SELECT 'a'''; DROP TABLE purge_log",
    "SELECT 1 # ; DROP TABLE purge_log",
    "SELECT $$x$$; DROP TABLE purge_log",
    "SELECT 1 /* unterminated",
    "SELECT 'unterminated",
    # other statements
    "EXPLAIN SELECT * FROM file('{d}/secret.txt','LineAsString')",
    "EXPLAIN SYNTAX SELECT 1",
    "INSERT INTO account_revisions SELECT * FROM account_revisions",
    "ALTER TABLE account_revisions DELETE WHERE 1",
    "ALTER TABLE account_revisions UPDATE status = 'x' WHERE 1",
    "TRUNCATE TABLE account_revisions",
    "DROP TABLE purge_log",
    "OPTIMIZE TABLE account_revisions FINAL",
    "KILL QUERY WHERE 1",
    "SYSTEM RELOAD CONFIG",
    "CREATE USER mallory",
    "GRANT ALL ON *.* TO default",
    "USE system",
    "SELECT 1 FORMAT CSV",
)

# Legitimate statements the guard lets through (and the engine answers).
ALLOWED: tuple[str, ...] = (
    "SELECT count() FROM current_accounts",
    "select status, count() from current_accounts group by status;",
    "WITH n AS (SELECT 1 AS x) SELECT x FROM n -- a comment",
    "(SELECT 1) UNION ALL (SELECT 2)",
    "SELECT 'INTO OUTFILE; file(''x'') SETTINGS' AS text /* just text */",
    "SELECT name FROM system.tables WHERE database = currentDatabase() ORDER BY name",
    "SELECT URLHash('x') AS h, concat('a', 'b') AS c",
)


class _Listener:
    """A TCP socket on 127.0.0.1 that counts the connections it accepts."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.hits = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.hits += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[_Listener]:
    lis = _Listener()
    yield lis
    lis.close()


@pytest.fixture
def chdb_dsn(tmp_path: Path) -> Iterator[str]:
    """A fresh chDB directory holding the sample, with a purge credential configured."""
    with sample_database(tmp_path) as dsn:
        yield dsn


@pytest.fixture
def target(tmp_path: Path) -> Path:
    d = tmp_path / "target"
    d.mkdir()
    (d / "secret.txt").write_text("do not read me\n")
    return d


def _files(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def _tables(dsn: str) -> dict[str, tuple[int, str]]:
    """Every table of the outcomes database: row count and a checksum of its rows."""
    conn = clickhouse.connect(dsn)
    names = conn.rows(
        "SELECT name FROM system.tables WHERE database = %(db)s AND engine LIKE '%%MergeTree'",
        {"db": conn.database},
    )
    out = {}
    for (name,) in names:
        count, digest = conn.rows(
            f"SELECT count(), toString(groupBitXor(cityHash64(*))) FROM {conn.table(name)}"
        )[0]
        out[str(name)] = (int(count), str(digest))
    return out


def test_the_hostile_table_is_large_enough() -> None:
    assert len(HOSTILE) >= 25 and len(set(HOSTILE)) == len(HOSTILE)


def test_every_hostile_statement_is_refused_and_changes_nothing(
    chdb_dsn: str, target: Path, listener: _Listener
) -> None:
    files, tables = _files(target), _tables(chdb_dsn)
    runner = CliRunner()
    for template in HOSTILE:
        sql = template.replace("{d}", str(target)).replace("{port}", str(listener.port))
        out = runner.invoke(main, ["query", sql, "--clickhouse", chdb_dsn])
        assert out.exit_code == 1, (sql, out.output)
        lines = out.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("outcomes query: error: "), (sql, lines)
        assert "do not read me" not in out.output
    assert _files(target) == files
    assert _tables(chdb_dsn) == tables
    assert listener.hits == 0


def test_the_guard_itself_refuses_every_hostile_statement() -> None:
    for template in HOSTILE:
        with pytest.raises(guard.Refused, match=r"^refused: "):
            guard.check(template.replace("{d}", "/tmp/x").replace("{port}", "9"))


def test_legitimate_selects_pass_the_guard_and_run(chdb_dsn: str) -> None:
    for sql in ALLOWED:
        assert guard.check(sql).rstrip().endswith(";") is False
        query.run_query(chdb_dsn, sql)  # raises on refusal
    result = query.run_query(chdb_dsn, ALLOWED[4])
    assert result.rows == [("INTO OUTFILE; file('x') SETTINGS",)]
    tables = query.run_query(chdb_dsn, ALLOWED[5])
    assert ("purge_credential_hashes",) in tables.rows  # its name, never its rows


# ClickHouse's readonly = 1 on its own (the guard bypassed): refused by the engine.
ENGINE_REFUSES: tuple[str, ...] = (
    "INSERT INTO FUNCTION file('{d}/w.csv','CSV','x Int32') VALUES (1)",
    "SELECT * FROM file('{d}/secret.txt','LineAsString')",
    "SELECT 'x' UNION ALL SELECT * FROM file('{d}/secret.txt','LineAsString')",
    "SELECT * FROM view(SELECT * FROM file('{d}/secret.txt','LineAsString'))",
    "SELECT * FROM url('http://127.0.0.1:{port}/x','CSV','a String')",
    "SELECT * FROM remote('127.0.0.1:{port}', system.one)",
    "SELECT * FROM executable('ls', 'TSV', 'a String')",
    "SELECT * FROM format(CSV, 'a\n1')",
    "SELECT 1 SETTINGS readonly = 0",
    "SELECT count() FROM account_revisions SETTINGS final = 0",
    "SET readonly = 0",
    "INSERT INTO account_revisions SELECT * FROM account_revisions",
    "ALTER TABLE account_revisions DELETE WHERE 1",
    "TRUNCATE TABLE account_revisions",
    "OPTIMIZE TABLE account_revisions FINAL",
    "SELECT * FROM system.users",
)


def test_clickhouse_readonly_refuses_table_functions_writes_and_settings(
    chdb_dsn: str, target: Path, listener: _Listener
) -> None:
    files, tables = _files(target), _tables(chdb_dsn)
    for template in ENGINE_REFUSES:
        sql = template.replace("{d}", str(target)).replace("{port}", str(listener.port))
        with pytest.raises(QueryFailed) as refused:
            query._execute(chdb_dsn, sql, final=True)
        assert "READONLY" in str(refused.value) or "ACCESS_DENIED" in str(refused.value), sql
    assert _files(target) == files
    assert _tables(chdb_dsn) == tables
    assert listener.hits == 0


def test_what_readonly_does_not_cover_is_why_the_guard_exists(chdb_dsn: str, target: Path) -> None:
    """chDB under readonly = 1 still writes INTO OUTFILE and runs a second statement,
    and any table of the database is readable: the guard refuses these."""
    query._execute(chdb_dsn, f"SELECT 1 INTO OUTFILE '{target}/out.csv'", final=True)
    assert (target / "out.csv").exists()
    both = query._execute(chdb_dsn, "SELECT 1; SELECT 2", final=True)
    assert both.rows == [(1,), (2,)]
    creds = query._execute(chdb_dsn, "SELECT hash FROM purge_credential_hashes", final=True)
    assert len(creds.rows) == 1
    for sql in (
        "SELECT 1 INTO OUTFILE 'x'",
        "SELECT 1; SELECT 2",
        "SELECT hash FROM purge_credential_hashes",
    ):
        with pytest.raises(guard.Refused):
            guard.check(sql)


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
    readable |= {"purge_log", "schema_migrations"}
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
