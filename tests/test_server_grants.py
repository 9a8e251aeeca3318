"""The server roles' grants, as ClickHouse itself reports them (`SHOW GRANTS`).

This machine has no ClickHouse server with access control (Debian's is 18.16, before
RBAC), and chDB refuses `CREATE USER`/`CREATE ROLE`: it has no writable access storage.
What chDB does have is ClickHouse's access control over users declared in a users.xml,
whose `<grants>` are GRANT queries. So the suite:

1. parses every statement of the server-only migrations with ClickHouse's own parser
   (`formatQuery`), which catches a statement a server would reject as malformed;
2. replays those migrations' GRANT/REVOKE statements to find what each login ends up
   holding (its own grants, plus those of the roles granted to it), declares the analyst
   login with exactly that in a users.xml, migrates a database, and asks ClickHouse for
   `SHOW GRANTS`: SELECT on every table and view analysts read, and nothing else — no
   write, no table function source (FILE, URL, REMOTE, S3…), nothing on the purge
   credential, nothing global.

What stays untested here: a server executing CREATE USER/ROLE and the role membership
itself (docs/clickhouse.md says how to check it on a server with `SHOW GRANTS`).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from xml.sax.saxutils import escape

import pytest

from outcomes.sinks import purge_attempts, schema
from tests.chdb_support import sample_database

pytestmark = pytest.mark.clickhouse

DB = "outcomes"

_GRANT = re.compile(r"^GRANT (?P<what>.+?) ON (?P<on>\S+) TO `(?P<to>[^`]+)`$")
_GRANT_ROLE = re.compile(r"^GRANT `(?P<role>[^`]+)` TO `(?P<to>[^`]+)`$")
_REVOKE_ALL = re.compile(r"^REVOKE ALL ON (?P<on>\S+) FROM `(?P<to>[^`]+)`$")


def server_statements() -> list[str]:
    return [s for m in schema.MIGRATIONS if m.server_only for s in m.statements(DB)]


def effective_grants(statements: list[str], login: str) -> list[str]:
    """`GRANT <what> ON <object>` lines a login holds after the statements, in order:
    its own grants and those of the roles granted to it (REVOKE ALL ON an object drops
    the grants on it). Fails on a GRANT/REVOKE shape it does not know."""
    grants: dict[str, list[tuple[str, str]]] = {}
    roles: dict[str, list[str]] = {}
    for stmt in statements:
        if m := _GRANT_ROLE.match(stmt):
            roles.setdefault(m["to"], []).append(m["role"])
        elif m := _GRANT.match(stmt):
            grants.setdefault(m["to"], []).append((m["what"], m["on"]))
        elif m := _REVOKE_ALL.match(stmt):
            on = m["on"]
            kept = [g for g in grants.get(m["to"], []) if on != "*.*" and g[1] != on]
            grants[m["to"]] = kept
        elif stmt.startswith(("GRANT", "REVOKE")):
            raise AssertionError(f"grant statement of an unknown shape: {stmt}")

    def held(who: str) -> list[tuple[str, str]]:
        own = list(grants.get(who, []))
        for role in roles.get(who, []):
            own += held(role)
        return own

    return [f"GRANT {what} ON {on}" for what, on in held(login)]


def users_xml(login: str, grants: list[str]) -> str:
    queries = "".join(f"<query>{escape(g)}</query>" for g in grants)
    return (
        "<clickhouse><profiles><default/></profiles><quotas><default/></quotas><users>"
        "<default><password></password><networks><ip>::1</ip></networks>"
        "<profile>default</profile><quota>default</quota>"
        "<access_management>1</access_management></default>"
        f"<{login}><password></password><networks><ip>::1</ip></networks>"
        f"<profile>default</profile><quota>default</quota><grants>{queries}</grants></{login}>"
        "</users></clickhouse>"
    )


# One chDB engine per process: the checks run in a child with the users.xml config.
_CHILD = textwrap.dedent(
    """
    import json, sys
    import chdb
    path, config, login, statements = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
    conn = chdb.connect(f"file:{path}?config-file={config}")
    cur = conn.cursor()
    def lit(s):
        return "'" + s.replace("\\\\", "\\\\\\\\").replace("'", "\\\\'") + "'"
    parsed, errors = 0, []
    for stmt in statements:
        try:
            cur.execute("SELECT formatQuery(" + lit(stmt) + ")")
            cur.fetchall()
            parsed += 1
        except Exception as exc:
            errors.append(f"{stmt}: {str(exc).splitlines()[0]}")
    cur.execute(f"SHOW GRANTS FOR `{login}`")
    shown = [row[0] for row in cur.fetchall()]
    cur.execute("SELECT name FROM system.tables WHERE database = 'outcomes' ORDER BY name")
    tables = [row[0] for row in cur.fetchall()]
    print(json.dumps({"parsed": parsed, "errors": errors, "shown": shown, "tables": tables}))
    """
)


@pytest.fixture(scope="module")
def reported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    tmp = tmp_path_factory.mktemp("grants")
    login = schema.analyst_user(DB)
    statements = server_statements()
    (tmp / "users.xml").write_text(users_xml(login, effective_grants(statements, login)))
    (tmp / "config.xml").write_text(
        "<clickhouse><user_directories><users_xml>"
        f"<path>{escape(str(tmp / 'users.xml'))}</path>"
        "</users_xml></user_directories></clickhouse>"
    )
    with sample_database(tmp) as dsn:
        path = dsn.removeprefix("chdb://")
    argv = [path, str(tmp / "config.xml"), login, json.dumps(statements)]
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert child.returncode == 0, child.stderr[-2000:]
    result: dict[str, object] = json.loads(child.stdout.strip().splitlines()[-1])
    result["login"] = login
    return result


def test_every_server_statement_parses_in_clickhouse(reported: dict[str, object]) -> None:
    assert reported["errors"] == []
    assert reported["parsed"] == len(server_statements()) > 50


def test_show_grants_of_the_analyst_login_is_select_on_what_analysts_read(
    reported: dict[str, object],
) -> None:
    shown = reported["shown"]
    assert isinstance(shown, list) and shown
    login = reported["login"]
    pattern = re.compile(rf"^GRANT SELECT ON {DB}\.(?P<obj>\w+) TO {login}$")
    objects = set()
    for line in shown:
        m = pattern.match(line)
        assert m, f"the analyst login holds more than SELECT on one object: {line}"
        objects.add(m["obj"])
    tables = reported["tables"]
    assert isinstance(tables, list)
    # The purge attempts (migration 12) are not for analysts either.
    secret = {schema.CREDENTIAL_TABLE, purge_attempts.TABLE}
    # Everything in the database but those two is readable; they are not.
    assert objects == set(tables) - secret
    assert not objects & secret


def test_the_replay_understands_the_statements() -> None:
    """The replay is what the users.xml is built from: it must fail on what it cannot
    read, and keep role grants apart from one login's."""
    with pytest.raises(AssertionError, match="unknown shape"):
        effective_grants(["GRANT SELECT ON db.t TO role WITH GRANT OPTION"], "x")
    stmts = [
        "GRANT SELECT ON `d`.`t` TO `r`",
        "GRANT INSERT ON `d`.`t` TO `u`",
        "REVOKE ALL ON *.* FROM `u`",
        "GRANT `r` TO `u`",
    ]
    assert effective_grants(stmts, "u") == ["GRANT SELECT ON `d`.`t`"]
    assert effective_grants(stmts, "other") == []
