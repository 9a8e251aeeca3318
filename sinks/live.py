"""The sink's live query endpoint: read-only SQL on its chDB engine, over ClickHouse's HTTP.

chDB locks its directory to one process, so while `outcomes sink` writes, no other
process can open the database. The sink therefore serves analysts itself: routes behind
the HTTP door (`outcomes.common.door`, Starlette on uvicorn) on 127.0.0.1 (never another
address) that speak the part of ClickHouse's HTTP interface clickhouse-connect and curl
use, and run each statement read-only on a chDB
connection of its own, on the sink's writer thread between writes (docs/clickhouse.md,
"Querying while the sink runs").

What is served:

- `GET /ping` (no credential): `Ok.`
- `GET` or `POST /`: the statement in the `query` URL parameter, the body, or both (the
  parameter first, as ClickHouse does), or a `multipart/form-data` field `query`;
  `param_<name>` values for `{name:Type}` placeholders; `database` (only the outcomes
  database); `default_format`, or a trailing `FORMAT <name>` (Native, RowBinary, TSV,
  CSV, JSON families, Pretty...; default TabSeparated). The answer carries
  `X-ClickHouse-Format`, `-Timezone`, `-Query-Id`, `-Summary`; errors carry
  `X-ClickHouse-Exception-Code` and ClickHouse's `Code: N. DB::Exception: ...` text.
- Credential: user `analyst` and the password, as `X-ClickHouse-User`/`X-ClickHouse-Key`,
  HTTP basic auth or `user`/`password` URL parameters, checked before the body is read
  (the body: 1 MiB within 10 s; a `query_id` is echoed only when it is a plain token).
  The password is `OUTCOMES_ANALYST_PASSWORD` if set, else a random token written with
  the address to `<chdb dir>.live.json` (mode 0600), where `outcomes query` finds both.
- Each request gets a chDB connection of its own, closed after it: its session is set
  up with the analyst limits (`outcomes.sinks.query.LIMITS`, `max_execution_time` 10 s,
  `max_result_bytes` 128 MiB), `final` (1 unless the request says `final=0`) and then
  `readonly = 1`, before the statement arrives; so nothing a failed, cancelled or cut
  short query leaves in a connection can reach another request. The statement is then
  decided by the engine (`outcomes.sinks.guard`: one read statement of the outcomes
  data, parsed by ClickHouse, run as ClickHouse prints it back). Other settings are
  refused; transport parameters clickhouse-connect sends (`query_id`, `session_id`,
  `wait_end_of_query`, ...) are ignored. The one statement not decided so is
  clickhouse-connect's handshake (`SELECT name, value, readonly FROM system.settings
  LIMIT 10000`), answered by a statement of the endpoint's own with the settings it
  imposes. Every error is one line with a 4xx status (403 access, 404 unknown object,
  400 the rest), except 503/504 when the sink is stopping or its writer is stuck.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import re
import secrets
import threading
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from outcomes.common import door
from outcomes.sinks import guard, query

# Where a sink's endpoint is advertised and how a client finds it: a module of its own,
# so outcomes.sinks.clickhouse reaches it without importing the endpoint's server.
from outcomes.sinks.endpoint import (
    ANALYST_USER,
    LOOPBACK,
    PASSWORD_ENV,
    Endpoint,
    endpoint_file,
    read_endpoint,
)
from outcomes.sinks.exceptions import QueryFailed, SinkError

log = logging.getLogger(__name__)

__all__ = [
    "ANALYST_USER",
    "LOOPBACK",
    "PASSWORD_ENV",
    "Endpoint",
    "LiveEndpointError",
    "LiveServer",
    "endpoint_file",
    "read_endpoint",
]

Submit = Callable[[Callable[[], Any]], "Future[Any]"]
"""Runs a call on the thread that owns the engine's writes (the sink's writer thread)."""

QUERY_SECONDS = 10
"""A query's time limit: the longest a write waits behind one."""
MAX_RESULT_BYTES = 128 * 1024 * 1024
MAX_REQUEST_BYTES = 1024 * 1024
"""A request body's limit (a statement, its form fields): larger is 413 before reading."""
BODY_SECONDS = 10.0
"""A request body must arrive within this (slower senders get 408)."""

# Output formats: whatever writes only to the response (no schema files, no templates).
FORMATS = {
    f.lower(): f
    for f in (
        "Native",
        "RowBinary",
        "RowBinaryWithNames",
        "RowBinaryWithNamesAndTypes",
        "TabSeparated",
        "TabSeparatedRaw",
        "TabSeparatedWithNames",
        "TabSeparatedWithNamesAndTypes",
        "TSV",
        "TSVRaw",
        "TSVWithNames",
        "TSVWithNamesAndTypes",
        "CSV",
        "CSVWithNames",
        "CSVWithNamesAndTypes",
        "JSON",
        "JSONCompact",
        "JSONEachRow",
        "JSONCompactEachRow",
        "JSONStrings",
        "JSONLines",
        "NDJSON",
        "Pretty",
        "PrettyCompact",
        "PrettyCompactMonoBlock",
        "PrettyNoEscapes",
        "PrettySpace",
        "Vertical",
        "Markdown",
        "Values",
        "Parquet",
        "Arrow",
        "ArrowStream",
    )
}

# URL parameters clickhouse-connect (or curl users) send that change nothing here.
_IGNORED_PARAMS = frozenset(
    {
        "query_id",
        "session_id",
        "session_timeout",
        "session_check",
        "wait_end_of_query",
        "send_progress_in_http_headers",
        "http_headers_progress_interval_ms",
        "cancel_http_readonly_queries_on_client_close",
        "client_protocol_version",
        "compress",
        "decompress",
        "enable_http_compression",
        "buffer_size",
        "quota_key",
        "user",
        "password",
    }
)

# clickhouse-connect's handshake reads system.settings, which the guard keeps from
# analysts; the endpoint answers it with the settings it imposes instead.
_HANDSHAKE = "select name, value, readonly from system.settings limit 10000"

# `outcomes.sinks.clickhouse.Connection.database_exists`, which `outcomes query` asks first.
_DATABASE_EXISTS = "select count() from system.databases where name = {db:string}"


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


_CODE = re.compile(r"Code: (\d+)")
READONLY_CODE = 164
SYNTAX_CODE = 62
TOO_MANY_ROWS_OR_BYTES = 396
AUTH_CODE = 516
UNKNOWN_DATABASE_CODE = 81


class LiveEndpointError(SinkError):
    """The live query endpoint could not start (address in use, not loopback) or answer.

    Operators: the sink serves queries only on 127.0.0.1; read the message.
    """


class _Refusal(door.Refusal):
    """A statement or request refused with ClickHouse's error code."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(status, message, code=code)


class LiveServer:
    """The endpoint: start() binds 127.0.0.1, advertises itself; stop() undoes both."""

    def __init__(
        self,
        chdb_path: str,
        database: str,
        *,
        submit: Submit | None = None,
        host: str = LOOPBACK,
        port: int = 0,
        password: str | None = None,
        query_seconds: int = QUERY_SECONDS,
    ) -> None:
        if host != LOOPBACK:
            raise LiveEndpointError(
                f"the live query endpoint listens on {LOOPBACK} only, not {host!r}"
            )
        self.chdb_path = chdb_path
        self.database = database
        self.query_seconds = query_seconds
        env_password = os.environ.get(PASSWORD_ENV)
        self.password = password or env_password or secrets.token_urlsafe(32)
        self._write_token = not (password or env_password)
        self._submit = submit
        self._port = port
        self._one_query = threading.Lock()  # one query at a time: a write waits for one only
        self._conn: Any = None
        self._server: door.DoorServer | None = None
        self.limits = door.Limits(max_body_bytes=MAX_REQUEST_BYTES, body_seconds=BODY_SECONDS)
        self.timezone = "UTC"
        self.version = ""

    @property
    def address(self) -> tuple[str, int]:
        assert self._server is not None
        return self._server.address

    def start(self) -> LiveServer:
        import chdb  # lazy: only a sink on chDB serves queries

        # Another connection to the engine this process already hosts (chDB allows any
        # number per path); its session is the endpoint's alone.
        self._conn = chdb.connect(self.chdb_path)
        self._conn.query(f"USE `{self.database}`", "TabSeparated")
        row = self._conn.query("SELECT version(), timezone()", "TabSeparated").bytes()
        self.version, self.timezone = row.decode().strip().split("\t")
        server = door.DoorServer(
            door.app(_component(self)), LOOPBACK, self._port, name="live-query"
        )
        try:
            self._server = server.start()
        except OSError as exc:
            self._conn.close()
            raise LiveEndpointError(
                f"cannot listen on {LOOPBACK}:{self._port}: {exc.strerror or exc}"
            ) from exc
        self._advertise()
        host, port = self.address
        log.info("serving read-only queries on http://%s:%d (user %s)", host, port, ANALYST_USER)
        return self

    def stop(self) -> None:
        """Stop serving, remove the advertisement and close the endpoint's connection."""
        server, self._server = self._server, None
        if server is None:
            return
        path = endpoint_file(self.chdb_path)
        try:
            if json.loads(path.read_text()).get("pid") == os.getpid():
                path.unlink()
        except (OSError, ValueError):
            pass
        server.stop()
        with self._one_query:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> LiveServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _advertise(self) -> None:
        host, port = self.address
        info: dict[str, Any] = {
            "host": host,
            "port": port,
            "user": ANALYST_USER,
            "pid": os.getpid(),
            "database": self.database,
        }
        if self._write_token:
            info["token"] = self.password
        path = endpoint_file(self.chdb_path)
        tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(info, out)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)

    # -- answering -----------------------------------------------------------------------

    def authorized(self, user: str | None, password: str | None) -> bool:
        return (
            user is not None
            and password is not None
            and hmac.compare_digest(user.encode(), ANALYST_USER.encode())
            and hmac.compare_digest(password.encode(), self.password.encode())
        )

    def final(self, params: Mapping[str, str]) -> bool:
        """The request's `final` (1 unless `final=0`); refuses every other setting."""
        final = True
        for key, value in params.items():
            if key in _IGNORED_PARAMS or key.startswith("param_") or key in ("query", "database"):
                continue
            if key == "default_format":
                continue
            if key == "final" and value in ("0", "1"):
                final = value == "1"
            elif key == "readonly" and value == "1":
                continue
            else:
                raise _Refusal(
                    400,
                    READONLY_CODE,
                    f"refused: setting {key} (the live endpoint runs one read-only statement "
                    "with its own settings)",
                )
        database = params.get("database")
        if database and database != self.database:
            raise _Refusal(
                404, UNKNOWN_DATABASE_CODE, f"refused: database {database} (only {self.database})"
            )
        return final

    def answer(
        self, sql: str, default_format: str | None, final: bool, binds: dict[str, str]
    ) -> tuple[bytes, str, dict[str, str]]:
        """Decide and run one statement on the writer thread (between writes), in a
        session of its own: (the bytes, their format, a summary)."""

        def call() -> tuple[bytes, str, dict[str, str]]:
            if self._conn is None:
                raise _Refusal(503, 0, "the sink is stopping")
            conn = self._session(final)
            try:
                return self._decide_and_run(conn, sql, default_format, binds)
            finally:
                conn.close()

        with self._one_query:
            if self._submit is None:
                return call()
            try:
                future = self._submit(call)
            except RuntimeError:  # the writer pool shut down: the sink is stopping
                raise _Refusal(503, 0, "the sink is stopping") from None
            try:
                return future.result(timeout=self.query_seconds * 6 + 60)
            except FutureTimeout:
                raise _Refusal(504, 159, "timed out waiting for the sink's writer") from None

    def _session(self, final: bool) -> Any:
        """A new chDB connection for one request (its own session: whatever a failed or
        cut-short query leaves in a connection dies with it), limited, then read-only."""
        import chdb

        conn = chdb.connect(self.chdb_path)
        try:
            conn.query(f"USE `{self.database}`", "TabSeparated")
            limits = {
                **query.LIMITS,
                "max_execution_time": self.query_seconds,
                "max_result_bytes": MAX_RESULT_BYTES,
            }
            for statement in query.set_statements(query.session_settings(final, limits)):
                conn.query(statement, "TabSeparated")
        except Exception:
            conn.close()
            raise
        return conn

    def _decide_and_run(
        self, conn: Any, sql: str, default_format: str | None, binds: dict[str, str]
    ) -> tuple[bytes, str, dict[str, str]]:
        def ask(text: str) -> str:
            return bytes(conn.query(text, "RawBLOB").bytes() or b"").decode()

        fmt_name = default_format or "TabSeparated"
        said = " ".join(sql.split()).lower().removesuffix(" format native")
        if said == _DATABASE_EXISTS:
            # `outcomes query`'s check that the database exists, answered for this one
            # database only (system.databases is not for analysts: it holds paths).
            own = f"SELECT toUInt64({{db:String}} = {_quote(self.database)}) AS `count()`"
            fmt = "Native" if sql.rstrip().lower().endswith("native") else _format(fmt_name)
            return self._execute(conn, own, fmt, {"db": binds.get("db", "")})
        if said == _HANDSHAKE:
            # Our own statement, in place of the driver's read of system.settings.
            names = "'readonly', 'final', 'max_execution_time', 'max_result_bytes'"
            writable = "toUInt8(name != 'final')"
            handshake = (
                f"SELECT name, value, {writable} AS readonly FROM system.settings "
                f"WHERE name IN ({names})"
            )
            fmt = "Native" if sql.rstrip().lower().endswith("native") else _format(fmt_name)
            return self._execute(conn, handshake, fmt, {})
        try:
            catalogue = query.catalogue_for(self.chdb_path, self.database, ask)
            decided = guard.decide(sql, ask, catalogue, formats=FORMATS, explain=_explain)
        except QueryFailed as exc:
            message = str(exc)
            code = SYNTAX_CODE if message.startswith("syntax error") else READONLY_CODE
            raise _Refusal(400, code, message) from None
        fmt = decided.fmt or _format(fmt_name)
        return self._execute(conn, decided.sql, fmt, binds)

    def _execute(
        self, conn: Any, sql: str, fmt: str, binds: dict[str, str]
    ) -> tuple[bytes, str, dict[str, str]]:
        try:
            result = conn.query(sql, fmt, params=binds)
            data = bytes(result.bytes() or b"")
        except Exception as exc:  # chDB raises its own error type; any is the query's
            text = " ".join(str(exc).split())
            found = _CODE.search(text)
            text = text[found.start() :] if found else text
            code = int(found.group(1)) if found else 0
            raise _Refusal(_status(code), code, text[:2000]) from None
        if len(data) > MAX_RESULT_BYTES:
            # chDB does not apply max_result_bytes to a statement without a table
            # (measured, docs/clickhouse.md); the answer is bounded here whatever it read.
            raise _Refusal(
                400,
                TOO_MANY_ROWS_OR_BYTES,
                f"Limit for result exceeded, max bytes: {MAX_RESULT_BYTES:,} "
                "(TOO_MANY_ROWS_OR_BYTES); add a LIMIT or aggregate",
            )
        return data, fmt, _summary(result)


def _format(name: str) -> str:
    fmt = FORMATS.get(name.lower())
    if fmt is None:
        raise _Refusal(400, READONLY_CODE, f"refused: output format {name} is not served")
    return fmt


def _explain(statement: str, message: str) -> str:
    return query.explain_error(statement, message)


# ClickHouse's HTTP statuses for the errors a read can meet: unknown objects 404,
# access 403, everything else about the statement 400 (never 500: it is the request's).
_NOT_FOUND = frozenset({47, 60, 81, 46})
_FORBIDDEN = frozenset({164, 497, 516})


def _status(code: int) -> int:
    if code in _NOT_FOUND:
        return 404
    if code in _FORBIDDEN:
        return 403
    return 400


def _summary(result: Any) -> dict[str, str]:
    try:
        return {
            "read_rows": str(result.rows_read()),
            "read_bytes": str(result.bytes_read()),
            "elapsed_ns": str(int(result.elapsed() * 1e9)),
        }
    except Exception:
        return {}


# -- the HTTP door ---------------------------------------------------------------------


_BINARY_FORMATS = frozenset({"Native", "Parquet", "Arrow", "ArrowStream"})
_TEXT = "text/plain; charset=UTF-8"


def _refuse(request: Request, refusal: door.Refusal) -> Response:
    """A refusal as ClickHouse's HTTP interface gives one (clickhouse-connect and
    `outcomes query` show its text): `Code: N. DB::Exception: ...` on one line, with
    `X-ClickHouse-Exception-Code`."""
    message = refusal.message
    if not message.startswith("Code: "):
        message = f"Code: {refusal.code}. DB::Exception: {message}"
    headers = {**refusal.headers, "X-ClickHouse-Exception-Code": str(refusal.code)}
    return Response((message + "\n").encode(), refusal.status, headers, media_type=_TEXT)


def _component(live: LiveServer) -> door.Component:
    """The endpoint's routes: `/ping` and `/` (GET or POST)."""

    async def ping(request: Request) -> Response:
        return Response(b"Ok.\n", media_type=_TEXT)

    async def root(request: Request) -> Response:
        params = dict(request.query_params)
        query_id = params.get("query_id") or str(uuid.uuid4())
        if not door.is_token(query_id):
            # Echoed in a response header: an id with CR LF would add headers.
            raise door.Refusal(
                400, "query_id must be 1-128 letters, digits or ._:~+/=-", code=READONLY_CODE
            )
        echo = {"X-ClickHouse-Query-Id": query_id}
        if not request.url.query and not _has_body(request):
            return Response(b"Ok.\n", media_type=_TEXT)  # ClickHouse's answer to a bare GET
        if not live.authorized(*_credential(request, params)):
            raise door.Refusal(
                403,
                f"{ANALYST_USER}: Authentication failed: password is incorrect, or there "
                "is no user with such name",
                echo,
                code=AUTH_CODE,
            )
        try:  # only now, with the credential checked, is the body read
            body = await door.read_body(request, live.limits)
            sql = _query(request, params, body)
            final = live.final(params)
            binds = {k[6:]: v for k, v in params.items() if k.startswith("param_")}
            data, fmt, summary = await run_in_threadpool(
                live.answer, sql, params.get("default_format"), final, binds
            )
        except door.Refusal as exc:
            raise door.Refusal(
                exc.status, exc.message, {**echo, **exc.headers}, code=exc.code
            ) from None
        except _Refusal as exc:
            raise door.Refusal(exc.status, exc.message, echo, code=exc.code) from None
        binary = fmt in _BINARY_FORMATS or "RowBinary" in fmt
        headers = {
            **echo,
            "X-ClickHouse-Format": fmt,
            "X-ClickHouse-Timezone": live.timezone,
            "X-ClickHouse-Summary": json.dumps(summary),
        }
        return Response(
            data, headers=headers, media_type="application/octet-stream" if binary else _TEXT
        )

    methods = ["GET", "POST"]
    routes = [
        Route("/ping", ping, methods=methods),
        Route("/ping/", ping, methods=methods),
        Route("/", root, methods=methods),
    ]
    return door.Component(routes, refuse=_refuse, name="live-query")


def _has_body(request: Request) -> bool:
    length = request.headers.get("content-length", "0").strip()
    return length not in ("", "0") or "transfer-encoding" in request.headers


def _query(request: Request, params: dict[str, str], body: bytes) -> str:
    ctype = request.headers.get("content-type", "")
    if ctype.startswith("multipart/form-data"):
        message = BytesParser(policy=HTTP).parsebytes(
            f"Content-Type: {ctype}\r\n\r\n".encode() + body
        )
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            if isinstance(name, str):
                value = part.get_payload(decode=True)
                if isinstance(value, bytes):
                    params[name] = value.decode("utf-8", errors="replace")
        body = b""
    if request.headers.get("content-encoding", "identity") != "identity":
        raise _Refusal(400, 0, "compressed request bodies are not served")
    try:
        text = body.decode()
    except UnicodeDecodeError:
        raise _Refusal(400, 0, "the query is not UTF-8") from None
    query = params.get("query", "")
    sql = f"{query}\n{text}" if query and text else query or text
    if not sql.strip():
        raise _Refusal(400, 0, "empty query")
    return sql


def _credential(request: Request, params: Mapping[str, str]) -> tuple[str | None, str | None]:
    """The credential of `X-ClickHouse-User`/`-Key`, basic auth or `user`/`password`."""
    user = request.headers.get("x-clickhouse-user")
    if user is not None:
        return user, request.headers.get("x-clickhouse-key")
    authorization = request.headers.get("authorization", "")
    if authorization[:6].lower() == "basic ":
        basic = door.basic_credential(authorization)
        return basic if basic is not None else (None, None)
    return params.get("user"), params.get("password")
