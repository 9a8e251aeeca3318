"""Hostile analyst statements and the snapshot that shows none of them touched anything.

HOSTILE holds statements an attacker with analyst access would try, by class; each must
end in one error line on every analyst path (`outcomes query`, `--file`, the live
endpoint). `{d}` is a directory holding `secret.txt`, `{port}` a listening socket that
must see no connection. The snapshot taken before and after is: every table's row count
and checksum, the list of databases and tables, the files under the test's directory
(the working directory included), and the listener's connections.
"""

from __future__ import annotations

import os
import socket
import threading
from dataclasses import dataclass
from pathlib import Path

from outcomes.sinks import clickhouse

S = "purge_credential_hashes"

QUOTING: tuple[str, ...] = (
    # curly quotes (written as escapes): ClickHouse reads U+2018…U+2019 as a string
    # and U+201C…U+201D as a name
    f"SELECT \u2018'\u2019; SELECT * FROM {S} -- '",
    "SELECT \u2018'\u2019; INSERT INTO FUNCTION file('{d}/w.csv','CSV','x Int32') VALUES (1) -- '",
    "SELECT \u2018'\u2019; SELECT 1 INTO OUTFILE '{d}/o.txt' APPEND FORMAT TSVRaw; SELECT 1 -- '",
    f"SELECT \u201chash\u201d, \u201csalt\u201d FROM \u201c{S}\u201d",
    f"SELECT \u2018x\u2019 AS a, hash FROM {S}",
    # backslash escapes inside quoted names and strings
    "SELECT algorithm, salt, hash FROM `purge\\x5fcredential\\x5fhashes`",
    "SELECT * FROM `sys\\x74em`.server_settings",
    'SELECT * FROM "purge\\x5fcredential_hashes"',
    "SELECT * FROM `\\x70urge_credential_hashes`",
    "SELECT 'it\\'s'; DROP TABLE purge_log",
    "SELECT 'a\\\\'; DROP TABLE purge_log -- '",
    "SELECT 'a''; DROP TABLE purge_log -- '; SELECT 1",
    # backticks and double-quoted names, qualified
    f"SELECT * FROM `{S}`",
    f'SELECT * FROM "{S}"',
    f"SELECT * FROM outcomes.`{S}`",
    f'SELECT * FROM `outcomes`."{S}"',
    f"SELECT * FROM `outcomes.{S}`",
    f"SELECT * FROM system.one, {S}",
    f"SELECT * FROM current_accounts AS `a``b` JOIN {S} ON 1",
)

STATEMENTS_AND_COMMENTS: tuple[str, ...] = (
    "SELECT 1; DROP TABLE account_revisions",
    "SELECT 1;\nSELECT * FROM purge_credential_hashes",
    "SELECT 1 -- harmless\n; INSERT INTO FUNCTION file('{d}/w2.csv','CSV','x Int32') VALUES (1)",
    "SELECT 1 /* harmless */; TRUNCATE TABLE account_revisions",
    "SELECT 1 /* /* nested */ ; DROP TABLE purge_log */ ; DROP TABLE purge_log",
    "SELECT 1 /* /* */ */; DROP TABLE purge_log",
    "SELECT 1 # ; \n; DROP TABLE purge_log",
    "SELECT 1 #!/bin/sh\n; DROP TABLE purge_log",
    "SELECT $$x$$; DROP TABLE purge_log",
    "SELECT $t$;$t$; DROP TABLE purge_log",
    "SELECT $$ ' $$, 1; ALTER TABLE purge_log DELETE WHERE 1",
    "SELECT 1 --\r\n; DROP TABLE purge_log",
    "SELECT 1 /*/ DROP TABLE purge_log */; DROP TABLE purge_log",
    "SELECT 1 /* unterminated",
    "SELECT 'unterminated",
    "SELECT `unterminated",
    "/* only a comment */",
    "-- only a comment",
    ";",
)

QUERY_PARAMETERS: tuple[str, ...] = (
    "SELECT salt, hash FROM {t:Identifier}",
    "SELECT * FROM outcomes.{t:Identifier}",
    "SELECT * FROM {db:Identifier}.{t:Identifier}",
    "SELECT {c:Identifier} FROM current_accounts",
    "SELECT * FROM current_accounts WHERE run_id IN {t:Identifier}",
)

TABLE_FUNCTIONS: tuple[str, ...] = (
    "SELECT * FROM file('{d}/secret.txt','LineAsString')",
    "sElEcT * fRoM FiLe('{d}/secret.txt', 'LineAsString')",
    "SELECT * FROM `file`('{d}/secret.txt','LineAsString')",
    "SELECT * FROM view(SELECT * FROM file('{d}/secret.txt','LineAsString'))",
    "WITH s AS (SELECT * FROM file('{d}/secret.txt','LineAsString')) SELECT * FROM s",
    "SELECT 'x' UNION ALL SELECT * FROM file('{d}/secret.txt','LineAsString')",
    "SELECT * FROM url('http://127.0.0.1:{port}/x','CSV','a String')",
    "SELECT * FROM s3('http://127.0.0.1:{port}/bucket/x.csv','CSV','a String')",
    "SELECT * FROM remote('127.0.0.1:{port}', system.one)",
    "SELECT * FROM remoteSecure('127.0.0.1:{port}', system.one)",
    "SELECT * FROM cluster('default', system.one)",
    "SELECT * FROM clusterAllReplicas('default', system.one)",
    "SELECT * FROM mysql('127.0.0.1:{port}', 'db', 't', 'u', 'p')",
    "SELECT * FROM postgresql('127.0.0.1:{port}', 'db', 't', 'u', 'p')",
    "SELECT * FROM executable('ls', 'TSV', 'a String')",
    "SELECT * FROM input('a String')",
    "SELECT * FROM format(CSV, 'a\n1')",
    f"SELECT * FROM merge('outcomes', '^{S}$')",
    "SELECT * FROM merge(REGEXP('.*'), '^purge')",
    "SELECT * FROM dictionary('secrets')",
    "SELECT * FROM numbers(1000000000000)",
    "SELECT * FROM generateRandom('a String')",
    "SELECT * FROM deltaLakeLocal('{d}')",
    "SELECT * FROM sqlite('{d}/secret.txt', 't')",
    "SELECT * FROM loop(numbers(1))",
    "INSERT INTO FUNCTION file('{d}/w.csv','CSV','x Int32') VALUES (1)",
    "SELECT * FROM current_accounts WHERE run_id IN (SELECT * FROM file('{d}/secret.txt'))",
    "SELECT * FROM current_accounts(x = 1)",
    "SELECT * FROM generate_series(1, 1000000000000)",
)

OUTFILE: tuple[str, ...] = (
    "SELECT 1 INTO OUTFILE '{d}/out.csv'",
    "SELECT 1 INTO OUTFILE 'relative.txt'",
    "SELECT 'echo pwned' INTO OUTFILE '{d}/profile' APPEND FORMAT TSVRaw",
    "SELECT 1 INTO OUTFILE '{d}/t.csv' TRUNCATE",
    "SELECT 1 INTO OUTFILE '{d}/s.csv' AND STDOUT",
    "SELECT 1 INTO OUTFILE '{d}/c.gz' COMPRESSION 'gzip'",
    "(SELECT 1) UNION ALL (SELECT 2) INTO OUTFILE '{d}/u.csv' FORMAT CSV",
    "EXPLAIN SELECT 1 INTO OUTFILE '{d}/e.txt'",
    "SHOW TABLES INTO OUTFILE '{d}/tables.txt'",
)

SETTINGS: tuple[str, ...] = (
    "SELECT 1 SETTINGS readonly = 0",
    "SELECT * FROM (SELECT 1 SETTINGS max_execution_time = 0)",
    "SELECT count() FROM account_revisions SETTINGS final = 0",
    "SELECT 1 UNION ALL SELECT 2 SETTINGS max_result_rows = 0",
    "WITH 1 AS x SELECT x SETTINGS allow_ddl = 1",
    "EXPLAIN readonly = 0 SELECT 1",
    "SET readonly = 0",
    "SET max_memory_usage = 0",
)

SYSTEM_TABLES: tuple[str, ...] = (
    "SELECT * FROM system.users",
    "SELECT * FROM system.grants",
    'SELECT * FROM "system"."role_grants"',
    "SELECT * FROM system . settings_profiles",
    "SELECT * FROM system.settings",
    "SELECT * FROM system.server_settings",
    "SELECT * FROM system.processes",
    "SELECT query FROM system.query_log",
    "SELECT * FROM system.dictionaries",
    "SELECT * FROM system.tables",
    "SELECT * FROM system.databases",
    "SELECT * FROM system.disks",
    "SELECT * FROM system.named_collections",
    "SELECT * FROM system.numbers",
    "SELECT * FROM INFORMATION_SCHEMA.TABLES",
    "SELECT * FROM information_schema.columns",
    "SHOW GRANTS",
    "SHOW USERS",
    "SHOW SETTINGS LIKE '%'",
    "SHOW PROCESSLIST",
    "SHOW DATABASES",
    "SHOW TABLES FROM system",
    "SHOW ACCESS",
    "DESCRIBE TABLE system.users",
)

PURGE_TABLES: tuple[str, ...] = (
    f"SELECT * FROM {S}",
    f"SELECT hash, salt FROM outcomes.{S}",
    "SELECT * FROM purge_credentials",
    "SELECT * FROM purge_attempts",
    f"SELECT 1 WHERE 'x' IN {S}",
    f"SELECT * FROM current_accounts WHERE run_id GLOBAL IN outcomes.{S}",
    f"SELECT (SELECT any(hash) FROM {S})",
    f"SELECT throwIf(1, (SELECT any(hash) FROM {S}))",
    f"WITH h AS (SELECT * FROM {S}) SELECT * FROM h",
    f"WITH {S} AS (SELECT 1) SELECT * FROM {S}",
    f"SELECT * FROM current_accounts JOIN {S} ON 1",
    f"SELECT 1 UNION ALL SELECT hash FROM {S}",
    f"SELECT * FROM (SELECT * FROM (SELECT * FROM {S}))",
    f"SELECT joinGet('outcomes.{S}', 'hash', 1)",
    f"SELECT hasColumnInTable('outcomes', '{S}', 'hash')",
    f"DESCRIBE {S}",
    f"EXPLAIN SYNTAX SELECT * FROM {S}",
    f"EXPLAIN QUERY TREE SELECT * FROM {S}",
    f"SHOW CREATE TABLE {S}",
    f"EXISTS TABLE {S}",
    f"INSERT INTO {S} SELECT * FROM {S}",
    f"ALTER TABLE {S} UPDATE hash = 'x' WHERE 1",
    "ALTER TABLE purge_log DELETE WHERE 1",
    "INSERT INTO purge_log (run_id) VALUES ('x')",
    f"SELECT 1 WHERE (1, 2) IN {S}",
    "SELECT * FROM current_accounts AS a PASTE JOIN purge_attempts AS b",
)

FUNCTIONS: tuple[str, ...] = (
    "SELECT file('{d}/secret.txt')",
    "SELECT dictGet('secrets', 'value', toUInt64(1))",
    "SELECT getServerSetting('path')",
    "SELECT currentUser(), hostName()",
    "SELECT getMacro('replica')",
    "SELECT filesystemAvailable()",
    "SELECT sleep(3)",
    "SELECT sleepEachRow(1) FROM current_accounts",
    "SELECT logTrace('x')",
    "SELECT generateSerialID('x')",
    "SELECT showCertificate()",
    "SELECT getClientHTTPHeader('Authorization')",
    "SELECT aiGenerate('x')",
    "SELECT addressToLine(1)",
    "SELECT regionToName(1)",
    "SELECT * APPLY(file) FROM current_accounts",
    "SELECT COLUMNS('run_id') APPLY(hostName) FROM current_accounts",
    "SELECT joinGet('t', 'v', 1)",
    "SELECT arrayMap(x -> file(x), ['{d}/secret.txt'])",
)

OTHER_STATEMENTS: tuple[str, ...] = (
    "INSERT INTO account_revisions SELECT * FROM account_revisions",
    "ALTER TABLE account_revisions DELETE WHERE 1",
    "ALTER TABLE account_revisions UPDATE status = 'x' WHERE 1",
    "DELETE FROM account_revisions WHERE 1",
    "TRUNCATE TABLE account_revisions",
    "DROP TABLE purge_log",
    "OPTIMIZE TABLE account_revisions FINAL",
    "KILL QUERY WHERE 1",
    "SYSTEM RELOAD CONFIG",
    "CREATE USER mallory",
    "CREATE TABLE stolen ENGINE = Memory AS SELECT * FROM purge_credential_hashes",
    "CREATE TEMPORARY TABLE t (x String)",
    "GRANT ALL ON *.* TO default",
    "USE system",
    "BACKUP TABLE account_revisions TO File('{d}/backup')",
    "RENAME TABLE purge_log TO old_log",
    "DETACH TABLE purge_log",
    "CHECK TABLE account_revisions",
    "BEGIN TRANSACTION",
    "WATCH current_accounts",
)


def _deep(n: int) -> str:
    return "SELECT " + "(" * n + "1" + ")" * n


# Allowed constructs that would take the engine's time, memory or output without bound:
# each must be stopped by the session's limits (or the size of the text), with one line.
RESOURCES: tuple[str, ...] = (
    "SELECT sum(cityHash64(x, y)) FROM (SELECT arrayJoin(range(100000)) AS x) AS a, "
    "(SELECT arrayJoin(range(100000)) AS y) AS b, account_revisions AS c",
    "SELECT sum(cityHash64(x, y)) FROM (SELECT arrayJoin(range(100000)) AS x, "
    "arrayJoin(range(100001)) AS y)",
    "SELECT groupArray(repeat('x', 1000000)) FROM (SELECT arrayJoin(range(10000)))",
    "SELECT x FROM (SELECT arrayJoin(range(5000000)) AS x) WHERE x >= 0",
    "SELECT repeat('x', 200000000)",
    "SELECT randomString(2000000000)",
    "SELECT 1 AS x ORDER BY x WITH FILL FROM 0 TO 1000000000000",
    "WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r) SELECT count() FROM r",
    "SELECT length(arrayMap(x -> range(10000), range(100000)))",
    "SELECT '" + "x" * 300_000 + "'",
    _deep(3000),
)

# Sent only to the live endpoint: statements with URL parameters of their own.
LIVE_ONLY: tuple[tuple[str, dict[str, str]], ...] = (
    ("SELECT salt, hash FROM {t:Identifier}", {"param_t": S}),
    ("SELECT * FROM outcomes.{t:Identifier}", {"param_t": S}),
    ("SELECT {c:Identifier} FROM current_accounts", {"param_c": "(SELECT 1)"}),
    ("SELECT 1", {"readonly": "0"}),
    ("SELECT 1", {"max_execution_time": "0"}),
    ("SELECT 1", {"database": "system"}),
    ("SELECT 1", {"default_format": "Template"}),
    ("SELECT * FROM users", {"database": "system"}),
    ("SELECT 1 FORMAT Template", {}),
    ("SELECT 1 FORMAT CapnProto", {"format_schema": "{d}/s.capnp:M"}),
)

CLI_ONLY: tuple[str, ...] = (
    "SELECT 1 FORMAT CSV",
    "SELECT count() FROM current_accounts FORMAT JSON",
)

HOSTILE: tuple[str, ...] = (
    *QUOTING,
    *STATEMENTS_AND_COMMENTS,
    *QUERY_PARAMETERS,
    *TABLE_FUNCTIONS,
    *OUTFILE,
    *SETTINGS,
    *SYSTEM_TABLES,
    *PURGE_TABLES,
    *FUNCTIONS,
    *OTHER_STATEMENTS,
    *RESOURCES,
)


class Listener:
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


@dataclass(frozen=True)
class Snapshot:
    """What a hostile statement must leave as it found it."""

    tables: dict[str, tuple[int, str]]
    catalogue: tuple[tuple[str, str], ...]
    files: dict[str, bytes]
    hits: int


def snapshot(dsn: str, root: Path, skip: Path, listener: Listener) -> Snapshot:
    """Every table's row count and checksum (through a privileged connection), every
    database and table name, the files under `root` except the engine's directory
    `skip`, and the listener's connections so far."""
    conn = clickhouse.connect(dsn)
    names = conn.rows(
        "SELECT name FROM system.tables WHERE database = %(db)s AND engine NOT LIKE '%%View'",
        {"db": conn.database},
    )
    tables = {}
    for (name,) in names:
        count, digest = conn.rows(
            f"SELECT count(), toString(groupBitXor(cityHash64(*))) FROM {conn.table(name)}"
        )[0]
        tables[str(name)] = (int(count), str(digest))
    catalogue = tuple(
        (str(d), str(t))
        for d, t in conn.rows(
            "SELECT database, name FROM system.tables WHERE NOT is_temporary ORDER BY 1, 2"
        )
    )
    return Snapshot(tables, catalogue, _files(root, skip), listener.hits)


def _files(root: Path, skip: Path) -> dict[str, bytes]:
    """Every file under `root` with its bytes, never entering `skip` (the engine's own
    directory, whose parts its background merges add and remove while it is walked)."""
    files: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if here / d != skip)
        for name in filenames:
            path = here / name
            if path.is_file():
                files[str(path.relative_to(root))] = path.read_bytes()
    return files


def fill(template: str, d: Path, port: int) -> str:
    return template.replace("{d}", str(d)).replace("{port}", str(port))
