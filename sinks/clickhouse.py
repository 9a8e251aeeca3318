"""One code path to ClickHouse: embedded chDB (`chdb:///path`) or a server (`http(s)://`).

Both go through clickhouse-connect; only opening differs. chDB hosts one engine per
process and locks its directory against other processes, so this module caches one
client per process and turns the engine's terse failures into errors that say which
process holds the path.
"""

from __future__ import annotations

import fcntl
import logging
import os
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit, urlunsplit

import clickhouse_connect
from clickhouse_connect.driver.client import Client
from clickhouse_connect.driver.exceptions import Error as DriverError
from clickhouse_connect.driver.external import ExternalData

from outcomes.sinks.exceptions import (
    ClickHouseUnavailable,
    EngineBusy,
    EngineLocked,
    InvalidDsn,
    SchemaNotMigrated,
)

log = logging.getLogger(__name__)

# The driver logs "Unexpected Http Driver Exception" (a warning) before raising the error
# that `_open` turns into ClickHouseUnavailable. Without a handler of its own, Python's
# last-resort handler printed it to stderr above the command's one error line; this
# stops that and nothing else (where logging is configured, e.g. `outcomes sink`, the
# record still propagates to it).
logging.getLogger("clickhouse_connect").addHandler(logging.NullHandler())

DEFAULT_DATABASE = "outcomes"


@dataclass(frozen=True)
class Target:
    """A parsed DSN: where the engine is and which database holds the outcomes tables."""

    dsn: str
    embedded: bool
    database: str
    path: str | None = None  # chDB directory (absolute, resolved)
    server_dsn: str | None = None  # server DSN without the database path

    @property
    def display(self) -> str:
        """The DSN with any password masked, safe to print."""
        parts = urlsplit(self.dsn)
        if parts.password:
            netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
            return urlunsplit(parts._replace(netloc=netloc))
        return self.dsn


def parse_dsn(dsn: str) -> Target:
    """Validate a DSN: `chdb:///abs/path[?database=db]` or `http(s)://host:port[/db]`."""
    parts = urlsplit(dsn)
    if parts.scheme == "chdb":
        if parts.netloc or not parts.path or not parts.path.startswith("/"):
            raise InvalidDsn(f"chDB DSN must be chdb:///absolute/path, got {dsn!r}")
        query = parse_qs(parts.query)
        database = query.get("database", [DEFAULT_DATABASE])[0]
        _check_identifier(database, dsn)
        path = os.path.realpath(parts.path)
        return Target(dsn=dsn, embedded=True, database=database, path=path)
    if parts.scheme in ("http", "https"):
        if not parts.hostname:
            raise InvalidDsn(f"ClickHouse DSN has no host: {dsn!r}")
        database = parts.path.strip("/") or DEFAULT_DATABASE
        _check_identifier(database, dsn)
        server = urlunsplit(parts._replace(path=""))
        return Target(dsn=dsn, embedded=False, database=database, server_dsn=server)
    raise InvalidDsn(f"ClickHouse DSN must start with chdb:// or http(s)://, got {dsn!r}")


def _check_identifier(name: str, dsn: str) -> None:
    if not name.replace("_", "a").isalnum() or name[0].isdigit():
        raise InvalidDsn(f"database name {name!r} in {dsn!r}: use letters, digits, _")


class Connection:
    """A clickhouse-connect client bound to the outcomes database of one target."""

    def __init__(self, target: Target, client: Client, live: bool = False) -> None:
        self.target = target
        self.client = client
        # True when a sink holds the chDB directory and this connection reaches its
        # read-only query endpoint instead (sinks/live.py).
        self.live = live

    @property
    def database(self) -> str:
        return self.target.database

    def table(self, name: str) -> str:
        """The fully qualified, quoted name of a table or view of the outcomes database."""
        return f"`{self.target.database}`.`{name}`"

    def command(self, sql: str, parameters: Mapping[str, Any] | None = None) -> Any:
        """Run a statement; driver errors become ClickHouseUnavailable."""
        try:
            return self.client.command(sql, parameters=dict(parameters or {}))
        except DriverError as exc:
            raise ClickHouseUnavailable(f"ClickHouse refused: {_one_line(exc)}") from exc

    def insert_select(
        self,
        table: str,
        columns: Sequence[str],
        select: str,
        sources: Mapping[str, Source],
        settings: Mapping[str, str | int] | None = None,
    ) -> None:
        """`INSERT INTO table (columns) SELECT …` where the `{name}` placeholders of
        `select` are the tables of `sources[name]`: its data read in its format with
        its structure. The settings go in the statement's own SETTINGS clause.

        The data travels beside the statement, never inside it: ClickHouse's parser
        costs ~30 ms of CPU per MB of a string literal in the query (chDB, measured),
        reading the same bytes as data ~3 ms. On chDB each source is a temporary file
        read by the `file` table function; on a server it is external data (a
        temporary table of the request, sent in the request's body). Settings passed
        to the chDB driver instead cost a SET and a restore each, several ms a call.
        """
        names = ", ".join(f"`{name}`" for name in columns)
        clause = ", ".join(
            f"{key} = {value if isinstance(value, int) else _literal(value)}"
            for key, value in (settings or {}).items()
        )
        sql = f"INSERT INTO {self.table(table)} ({names})"
        sql += f" SETTINGS {clause}\n" if clause else "\n"
        sql += select
        try:
            if self.target.embedded:
                with tempfile.TemporaryDirectory(prefix="outcomes-insert-") as tmp:
                    for name, source in sources.items():
                        path = Path(tmp) / name
                        path.write_bytes(source.data)
                        read = (
                            f"file({_literal(str(path))}, {_literal(source.fmt)}, "
                            f"{_literal(source.structure)})"
                        )
                        sql = sql.replace(f"{{{name}}}", read)
                    self.client.command(sql)
                return
            external = ExternalData()
            for name, source in sources.items():
                external.add_file(
                    file_name=name, data=source.data, fmt=source.fmt, structure=source.structure
                )
                sql = sql.replace(f"{{{name}}}", name)
            self.client.command(sql, external_data=external)
        except DriverError as exc:
            raise ClickHouseUnavailable(f"ClickHouse refused: {_one_line(exc)}") from exc

    def rows(
        self,
        sql: str,
        parameters: Mapping[str, Any] | None = None,
        settings: Mapping[str, Any] | None = None,
    ) -> list[tuple[Any, ...]]:
        """Run a SELECT and return its rows as tuples."""
        try:
            result = self.client.query(
                sql, parameters=dict(parameters or {}), settings=dict(settings or {})
            )
        except DriverError as exc:
            raise ClickHouseUnavailable(f"ClickHouse refused: {_one_line(exc)}") from exc
        return [tuple(r) for r in result.result_rows]

    def insert(
        self,
        table: str,
        rows: Sequence[Sequence[Any]],
        columns: Sequence[str],
        settings: Mapping[str, Any] | None = None,
        column_types: Sequence[str] | None = None,
    ) -> None:
        """Insert rows (one block, so one atomic part per partition on MergeTree).

        Without `column_types` (ClickHouse type names, one per column) the driver first
        asks the server with a `DESCRIBE TABLE`: one more statement per insert.
        """
        try:
            self.client.insert(
                table,
                rows,
                column_names=list(columns),
                database=self.target.database,
                settings=dict(settings or {}),
                column_type_names=list(column_types) if column_types is not None else None,
            )
        except DriverError as exc:
            raise ClickHouseUnavailable(f"insert into {table} failed: {_one_line(exc)}") from exc

    def database_exists(self) -> bool:
        found = self.rows(
            "SELECT count() FROM system.databases WHERE name = {db:String}",
            {"db": self.target.database},
        )
        return bool(found[0][0])

    def use_database(self) -> None:
        """Make the outcomes database the default for unqualified names (analyst SQL)."""
        self.client.database = self.target.database


@dataclass(frozen=True)
class Source:
    """Data for `Connection.insert_select`: bytes in a ClickHouse input format, and the
    columns (a structure, `name Type, …`) to read them as."""

    data: bytes
    fmt: str
    structure: str


def _literal(text: str) -> str:
    """A ClickHouse string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:500]


_lock = threading.Lock()
_clients: dict[tuple[str, str], Connection] = {}


def connect(dsn: str, *, live: bool = False) -> Connection:
    """The process's cached connection for a DSN (one chDB engine per process).

    With `live`, a chDB directory held by a running `outcomes sink` is reached through
    that sink's read-only query endpoint (sinks/live.py) instead of raising
    `EngineLocked`: for read-only callers such as `outcomes query`.
    """
    target = parse_dsn(dsn)
    key = (target.path or target.server_dsn or "", target.database)
    with _lock:
        cached = _clients.get(key)
        if cached is not None:
            return cached
        _check_one_engine(target)
        conn = _open_connection(target, live)
        _clients[key] = conn
        return conn


def require_database(dsn: str, *, live: bool = False) -> Connection:
    """The process's connection for a DSN whose outcomes database already exists.

    For commands that only read or remove what is there (`outcomes query`, `purge`): a
    mistyped chDB path must not silently become a new, empty database that answers 0.
    A chDB path is checked on disk before any engine opens it (opening one creates its
    files); a server is asked. Raises `SchemaNotMigrated` naming the command that
    creates the database. `live`: as for `connect` (read-only callers only).
    """
    target = parse_dsn(dsn)
    create = f"create one with `outcomes clickhouse migrate --clickhouse {target.display}`"
    if target.embedded:
        assert target.path is not None
        if not (Path(target.path) / "metadata" / f"{target.database}.sql").is_file():
            raise SchemaNotMigrated(f"no outcomes database at {target.path} (chDB); {create}")
    conn = connect(dsn, live=live)
    if not conn.database_exists():
        raise SchemaNotMigrated(f"no database {target.database} at {target.display}; {create}")
    return conn


def _check_one_engine(target: Target) -> None:
    if not target.embedded:
        return
    for other in _clients.values():
        if other.target.embedded and other.target.path != target.path:
            raise EngineBusy(
                f"this process already has chDB open at {other.target.path}; "
                f"cannot also open {target.path} (chDB: one engine per process)"
            )


def open_private(dsn: str) -> Connection:
    """A new, uncached connection (own session), e.g. for read-only analyst queries.

    On chDB it shares the process's engine; the caller must close it with `close()`.
    If the process reaches this chDB directory through a sink's query endpoint
    (`connect(dsn, live=True)`), so does the new connection.
    """
    target = parse_dsn(dsn)
    key = (target.path or target.server_dsn or "", target.database)
    with _lock:
        cached = _clients.get(key)
        _check_one_engine(target)
        return _open_connection(target, cached is not None and cached.live)


def close(conn: Connection) -> None:
    """Close a connection from `open_private` (cached ones close with `close_all`)."""
    conn.client.close()


def close_all() -> None:
    """Close every cached client; on chDB this shuts the engine and frees its path."""
    with _lock:
        for conn in _clients.values():
            conn.client.close()
        _clients.clear()


def _open_connection(target: Target, live: bool) -> Connection:
    """A new connection; on a chDB directory another process holds, `EngineLocked`, or
    with `live` a client of the holding sink's query endpoint.

    The lock is probed before chDB is asked to open the directory: chDB would print
    its own `Code: 76. DB::Exception: Cannot lock file …` line to stderr first.
    """
    if target.embedded:
        assert target.path is not None
        holder = _foreign_lock_holder(Path(target.path))
        if holder is not None:
            if live:
                client = _live_client(target)
                if client is not None:
                    return Connection(target, client, live=True)
            raise EngineLocked(
                f"chDB directory {target.path} is in use by another process "
                f"({holder}); stop it or use another path"
                + ("" if not live else "; it serves no live query endpoint (not a sink?)")
            )
    return Connection(target, _open(target))


def _live_client(target: Target) -> Client | None:
    """A clickhouse-connect client of the endpoint of the sink holding `target`'s path."""
    from outcomes.sinks.endpoint import read_endpoint  # lazy: only a locked chDB directory

    assert target.path is not None
    endpoint = read_endpoint(target.path)
    if endpoint is None:
        return None
    try:
        return clickhouse_connect.get_client(
            host=endpoint.host,
            port=endpoint.port,
            username=endpoint.user,
            password=endpoint.password,
            database=target.database,
            compress=False,
        )
    except DriverError as exc:
        raise ClickHouseUnavailable(
            f"chDB directory {target.path} is held by a sink (PID {endpoint.pid}) whose "
            f"query endpoint {endpoint.url} refused: {_one_line(exc)}"
        ) from exc


def _foreign_lock_holder(path: Path) -> str | None:
    """`_lock_holder`, unless the holder is this process (its own engine is open)."""
    holder = _lock_holder(path)
    if holder is None or f"PID: {os.getpid()}" in holder.split(", "):
        return None
    return holder


def _open(target: Target) -> Client:
    if target.embedded:
        assert target.path is not None
        try:
            Path(target.path).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ClickHouseUnavailable(
                f"cannot create chDB directory {target.path}: {exc.strerror or exc}"
            ) from exc
        try:
            return clickhouse_connect.get_client(dsn=f"chdb://{target.path}")
        except DriverError as exc:
            holder = _lock_holder(Path(target.path))
            if holder is not None:
                raise EngineLocked(
                    f"chDB directory {target.path} is in use by another process "
                    f"({holder}); stop it or use another path"
                ) from exc
            raise ClickHouseUnavailable(
                f"cannot open chDB at {target.path}: {_one_line(exc)}"
            ) from exc
    assert target.server_dsn is not None
    try:
        # Query parameters in the body, not the URL: the writer's read-back sends
        # thousands of row ids per query.
        return clickhouse_connect.get_client(dsn=target.server_dsn, form_encode_query_params=True)
    except DriverError as exc:
        raise ClickHouseUnavailable(
            f"cannot reach ClickHouse at {target.display}: {_one_line(exc)}"
        ) from exc


def _lock_holder(path: Path) -> str | None:
    """Who holds chDB's `status` file lock (ClickHouse flocks it while running), or None."""
    status = path / "status"
    if not status.exists():
        return None
    fd = os.open(status, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            info = status.read_text(errors="replace").split("\n")
            return ", ".join(line for line in info if line.startswith(("PID", "Started")))
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
