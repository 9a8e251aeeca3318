"""The HTTP door: one ASGI stack (Starlette on uvicorn) for every server outcomes runs.

The sink's live query endpoint, the OTLP receiver and the worker's metrics each mount
their routes here as a `Component`; the pre-display gate and the run browser will mount
theirs the same way. What the door keeps for all of them:

- Credentials before bodies: a component decides on the headers and the URL, then
  `read_body` reads; an answer given before the body was read closes the connection
  (`Connection: close`), so an unread body is never drained, let alone stored.
- Body limits while streaming: `Content-Length` over the limit is 413 at once, a
  malformed one 400 (h11 refuses it before the app sees it); a chunked body is counted as
  it arrives and cut at the limit (413).
- Time limits: the request line and headers within `header_seconds` of the connection
  (or of the previous answer), else the connection is closed; the body within
  `body_seconds`, else 408.
- Errors are one line and never a traceback: a component renders its refusals the way
  its clients read them (`json_refusal`, `{"error": "..."}`, unless the protocol says
  otherwise); a bug is logged here with its traceback and answered 500 in one line.
- Response headers are never built from request data: a component validates what it
  echoes (`is_token`) or refuses the request.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import re
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus

import h11
import orjson
import uvicorn
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Router
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)

__all__ = [
    "Component",
    "DoorServer",
    "Limits",
    "Refusal",
    "app",
    "basic_credential",
    "is_token",
    "json_refusal",
    "one_line",
    "read_body",
]

HEADER_SECONDS = 10.0
"""A connection's request line and headers must arrive within this (slow senders cut)."""
MAX_HEADER_BYTES = 64 * 1024
"""The request line and headers together (h11 refuses more with 400)."""
_MESSAGE_CHARS = 1000


class Refusal(Exception):
    """A request refused: its HTTP status, one line saying why, extra response headers
    (fixed names and values of the component's own, never request data) and a protocol
    code a component's renderer may use."""

    def __init__(
        self,
        status: int,
        message: str,
        headers: Mapping[str, str] | None = None,
        *,
        code: int = 0,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = one_line(message)
        self.headers = dict(headers or {})
        self.code = code


Renderer = Callable[[Request, Refusal], Response]
"""How a component answers a refusal (its clients' error format)."""


@dataclass(frozen=True)
class Limits:
    """What one request may cost: body bytes and seconds to send it."""

    max_body_bytes: int = 1024 * 1024
    body_seconds: float = 30.0


def one_line(message: str) -> str:
    """`message` on one line, bounded (whatever an engine or library said)."""
    text = " ".join(message.split())
    return text if len(text) <= _MESSAGE_CHARS else text[: _MESSAGE_CHARS - 1] + "…"


def json_refusal(request: Request | None, refusal: Refusal) -> Response:
    """`{"error": "..."}` and a newline, with the refusal's status and headers."""
    body = orjson.dumps({"error": refusal.message}) + b"\n"
    return Response(body, refusal.status, refusal.headers, media_type="application/json")


_TOKEN = re.compile(r"[A-Za-z0-9._:~+/=-]{1,128}")


def is_token(value: str) -> bool:
    """Whether `value` may be echoed in a response header: 1-128 characters of letters,
    digits and `._:~+/=-` (ids, UUIDs), so never a CR, an LF or a separator."""
    return _TOKEN.fullmatch(value) is not None


def basic_credential(authorization: str | None) -> tuple[str, str] | None:
    """(user, password) of an `Authorization: Basic ...` header, or None."""
    if not authorization or authorization[:6].lower() != "basic ":
        return None
    try:
        user, sep, password = (
            base64.b64decode(authorization[6:], validate=True).decode().partition(":")
        )
    except (ValueError, UnicodeDecodeError):
        return None
    return (user, password) if sep else None


async def read_body(request: Request, limits: Limits) -> bytes:
    """The request's body, read only now (after the caller checked its credentials):
    413 over `limits.max_body_bytes` (at once from `Content-Length`, else when the count
    passes it), 408 past `limits.body_seconds`, 400 when the client hangs up mid-body."""
    lengths = request.headers.getlist("content-length")
    chunked = "chunked" in request.headers.get("transfer-encoding", "").lower()
    if lengths and not chunked:
        if len(set(lengths)) != 1 or not lengths[0].strip().isdigit():
            raise Refusal(400, "Content-Length must be one non-negative integer")
        if int(lengths[0]) > limits.max_body_bytes:
            raise Refusal(413, f"request body over {limits.max_body_bytes} bytes")
    received = bytearray()
    try:
        async with asyncio.timeout(limits.body_seconds):
            async for chunk in request.stream():
                received += chunk
                if len(received) > limits.max_body_bytes:
                    raise Refusal(413, f"request body over {limits.max_body_bytes} bytes")
    except TimeoutError:
        raise Refusal(408, f"request body not received within {limits.body_seconds:g} s") from None
    except ClientDisconnect:
        raise Refusal(400, "the client closed the connection before the body ended") from None
    return bytes(received)


@dataclass(frozen=True)
class Component:
    """One service behind the door: its routes, where they are mounted (`""`: at the
    root) and how its refusals are rendered."""

    routes: Sequence[BaseRoute]
    mount: str = ""
    refuse: Renderer = json_refusal
    name: str = "http"


def app(*components: Component) -> ASGIApp:
    """An ASGI app serving `components`: routing, one-line refusals, 500 for bugs (logged
    with their traceback), and `Connection: close` on any answer given before its request
    body was read."""
    routes: list[BaseRoute] = []
    for component in components:
        if component.mount:
            routes.append(Mount(component.mount, routes=list(component.routes)))
        else:
            routes.extend(component.routes)
    by_mount = sorted(components, key=lambda c: len(c.mount), reverse=True)

    def renderer(request: Request) -> Renderer:
        path = request.url.path
        for component in by_mount:
            if (
                not component.mount
                or path == component.mount
                or path.startswith(component.mount.rstrip("/") + "/")
            ):
                return component.refuse
        return json_refusal

    async def refused(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, Refusal)
        return renderer(request)(request, exc)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        headers = {"Allow": exc.headers["Allow"]} if exc.headers and "Allow" in exc.headers else {}
        message = {404: f"no such endpoint: {request.method} {request.url.path}"}.get(
            exc.status_code, exc.detail
        )
        return renderer(request)(request, Refusal(exc.status_code, message, headers))

    async def bug(request: Request, exc: Exception) -> Response:
        log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
        return renderer(request)(request, Refusal(500, f"internal error: {type(exc).__name__}"))

    starlette = Starlette(
        routes=routes,
        exception_handlers={Refusal: refused, HTTPException: http_error, Exception: bug},
    )
    # Starlette answers `/path/` for a route `/path` with a redirect whose Location is
    # built from the request's Host header: a header from request data. A path is
    # served as it is named, or 404.
    routers = [starlette.router]
    while routers:
        router = routers.pop()
        router.redirect_slashes = False
        routers.extend(
            route.app
            for route in router.routes
            if isinstance(route, Mount) and isinstance(route.app, Router)
        )
    return _CloseUnread(starlette)


class _CloseUnread:
    """ASGI middleware: an answer sent before the request body was read to its end says
    `Connection: close`, so the server closes the connection instead of draining the
    rest (an unauthenticated sender's gigabytes are never read)."""

    def __init__(self, inner: ASGIApp) -> None:
        self.inner = inner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        headers = dict(scope["headers"])
        done = headers.get(b"content-length", b"0") in (b"0", b"") and (
            b"transfer-encoding" not in headers
        )
        state = {"done": done}

        async def receive_tracked() -> Message:
            message = await receive()
            if message["type"] != "http.request" or not message.get("more_body", False):
                state["done"] = True
            return message

        async def send_closing(message: Message) -> None:
            if message["type"] == "http.response.start" and not state["done"]:
                message = {
                    **message,
                    "headers": [
                        *[
                            (k, v)
                            for k, v in message.get("headers", [])
                            if k.lower() != b"connection"
                        ],
                        (b"connection", b"close"),
                    ],
                }
            await send(message)

        await self.inner(scope, receive_tracked, send_closing)


class _Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline on the request line and headers (uvicorn
    keeps none: a client sending one header byte a minute would hold a connection for
    ever) and its own refusals of malformed requests as one JSON line."""

    header_seconds = HEADER_SECONDS
    _deadline: asyncio.TimerHandle | None = None
    _waiting_for: object = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        super().connection_lost(exc)

    def _arm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._waiting_for = self.cycle
        self._deadline = self.loop.call_later(self.header_seconds, self._expire)

    def _expire(self) -> None:
        # Close only a connection still between requests: no request arrived since
        # the deadline was armed (an answer in progress is the app's to bound).
        idle = self.cycle is None or self.cycle.response_complete
        if idle and self.cycle is self._waiting_for and not self.transport.is_closing():
            log.debug("closing a connection whose request did not arrive in time")
            self.transport.close()

    def send_400_response(self, msg: str) -> None:
        # Called by uvicorn inside its `except h11.RemoteProtocolError`: h11's reason
        # (and its status hint: 431 headers too large, 501 a transfer coding it lacks)
        # say what was wrong.
        exc = sys.exc_info()[1]
        status = getattr(exc, "error_status_hint", 400) if exc is not None else 400
        reason = f": {one_line(str(exc))}" if exc is not None and str(exc) else ""
        body = orjson.dumps({"error": f"malformed HTTP request{reason}"}) + b"\n"
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        try:
            for event in (
                h11.Response(status_code=status, headers=headers, reason=_phrase(status)),
                h11.Data(data=body),
                h11.EndOfMessage(),
            ):
                self.transport.write(self.conn.send(event) or b"")
        except h11.LocalProtocolError:
            pass  # an answer had already begun: closing is all that is left
        self.transport.close()


def _phrase(status: int) -> bytes:
    try:
        return HTTPStatus(status).phrase.encode()
    except ValueError:
        return b""


class _Quiet(logging.Filter):
    """uvicorn warns of each malformed request; the door has answered it in one line,
    so that is debug, not a warning an operator must read per probe."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.getMessage() == "Invalid HTTP request received.":
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return log.isEnabledFor(logging.DEBUG)
        return True


_UVICORN_LOG = logging.getLogger("uvicorn.error")
if not any(isinstance(f, _Quiet) for f in _UVICORN_LOG.filters):
    _UVICORN_LOG.addFilter(_Quiet())


@dataclass
class DoorServer:
    """A uvicorn server for an ASGI app, bound in `start()` (so an address in use fails
    there, in the caller's thread) and run on a thread of its own until `stop()`."""

    asgi: ASGIApp
    host: str = "127.0.0.1"
    port: int = 0
    name: str = "http"
    header_seconds: float = HEADER_SECONDS
    graceful_seconds: float = 10.0
    _server: uvicorn.Server | None = field(default=None, init=False)
    _thread: threading.Thread | None = field(default=None, init=False)
    _socket: socket.socket | None = field(default=None, init=False)

    @property
    def address(self) -> tuple[str, int]:
        assert self._socket is not None, "the server is not started"
        host, port = self._socket.getsockname()[:2]
        return str(host), int(port)

    def start(self) -> DoorServer:
        """Bind, start serving on a thread, and return once connections are accepted;
        OSError when the address cannot be bound."""
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self.port))
            sock.listen(128)
        except OSError:
            sock.close()
            raise
        sock.setblocking(False)
        self._socket = sock
        protocol = type("_DoorProtocol", (_Protocol,), {"header_seconds": self.header_seconds})
        config = uvicorn.Config(
            self.asgi,
            http=protocol,
            lifespan="off",
            log_config=None,
            access_log=False,
            server_header=False,
            timeout_keep_alive=5,
            timeout_graceful_shutdown=max(1, int(self.graceful_seconds)),
            h11_max_incomplete_event_size=MAX_HEADER_BYTES,
        )
        server = uvicorn.Server(config)
        self._server = server
        thread = threading.Thread(
            target=lambda: asyncio.run(server.serve(sockets=[sock])), name=self.name, daemon=True
        )
        self._thread = thread
        thread.start()
        while not server.started:
            if not thread.is_alive():
                sock.close()
                raise OSError(f"the {self.name} server did not start (see the log)")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Stop accepting, let requests in progress finish (up to `graceful_seconds`),
        then return."""
        server, self._server = self._server, None
        if server is None:
            return
        server.should_exit = True
        if self._thread is not None:
            self._thread.join(self.graceful_seconds + 5)
        if self._socket is not None:
            self._socket.close()

    def wait(self, stop: Callable[[], bool] | None = None, poll: float = 0.2) -> None:
        """Block until the server thread ends or `stop()` returns true."""
        while self._thread is not None and self._thread.is_alive():
            if stop is not None and stop():
                return
            self._thread.join(poll)

    def __enter__(self) -> DoorServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
