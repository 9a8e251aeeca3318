"""The HTTP door (outcomes.common.door) under random input: every door outcomes serves
(the worker's metrics, the OTLP receiver, the sink's live query endpoint) gets random
methods, paths, headers and bodies over a raw socket, and each answer must be a
well-formed HTTP response whose error is one line in that door's format, with no header
made from the request; the server keeps serving after each one."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from google.protobuf.message import DecodeError
from google.rpc.status_pb2 import Status
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from outcomes.common import door
from outcomes.importers.otlp_server import Receiver, make_server
from outcomes.sinks import clickhouse, live
from outcomes.streams import worker_batch
from tests.chdb_support import sample_database
from tests.http_support import NoAnswer, Reply, exchange, request_bytes

# Response headers a door may send: names it chooses, never one a request brought.
ALLOWED_HEADERS = {
    "date",
    "content-type",
    "content-length",
    "connection",
    "allow",
    "retry-after",
    "www-authenticate",
    "x-clickhouse-format",
    "x-clickhouse-timezone",
    "x-clickhouse-query-id",
    "x-clickhouse-summary",
    "x-clickhouse-exception-code",
}


@dataclass
class Door:
    address: tuple[str, int]
    paths: list[str]
    health: bytes  # a request this door answers 200
    error_line: Callable[[Reply], str]  # the one line an error answer says (asserts its form)


def _json_error(reply: Reply) -> str:
    document = json.loads(reply.body)
    assert set(document) == {"error"}
    return str(document["error"])


def _one_line(reply: Reply) -> None:
    assert reply.body.endswith(b"\n") and reply.body.count(b"\n") == 1, reply.body[:300]


def metrics_error(reply: Reply) -> str:
    _one_line(reply)
    return _json_error(reply)


def otlp_error(reply: Reply) -> str:
    kind = reply.headers.get("content-type", "")
    if kind == "application/json" and reply.body.startswith(b'{"error"'):
        _one_line(reply)  # the door's own answer to a malformed request
        return _json_error(reply)
    status = Status()
    if kind == "application/json":
        document = json.loads(reply.body)
        assert b"\n" not in reply.body
        status.code, status.message = document.get("code", 0), document["message"]
    else:
        assert kind == "application/x-protobuf", kind
        try:
            status.ParseFromString(reply.body)
        except DecodeError as exc:
            raise AssertionError(f"not a google.rpc.Status: {reply.body[:200]!r}") from exc
    assert status.message and "\n" not in status.message
    return status.message


def live_error(reply: Reply) -> str:
    _one_line(reply)
    if reply.body.startswith(b'{"error"'):
        return _json_error(reply)
    text = reply.body.decode()
    assert re.match(r"Code: \d+\. ", text), text
    assert reply.headers["X-ClickHouse-Exception-Code"].isdigit()
    return text


@pytest.fixture(scope="module")
def metrics_door() -> Iterator[Door]:
    worker = SimpleNamespace(
        counters=SimpleNamespace(
            forwarded=1, folded=1, dead_letters=0, outputs=2, commits=1, restored=0, lag={}
        ),
        merge=SimpleNamespace(buffered=0),
        stats=lambda: {"engine": "batch"},
    )
    asgi = door.app(worker_batch.web_component(worker))  # type: ignore[arg-type]
    with door.DoorServer(asgi, header_seconds=1.0) as server:
        health = request_bytes("GET", "/metrics", [])
        paths = ["/metrics", "/outcomes/stats", "/metrics/", "//metrics"]
        yield Door(server.address, paths, health, metrics_error)


class _Sink:
    def publish(self, event: Any) -> str:
        return str(event["event_id"])

    def flush(self, timeout: float | None = None) -> None:
        return None


@pytest.fixture(scope="module")
def otlp_door() -> Iterator[Door]:
    receiver = Receiver(_Sink(), max_body_bytes=4096, log=lambda line: None)
    with make_server(receiver, "127.0.0.1", 0, header_seconds=1.0, body_seconds=1.0) as server:
        health = request_bytes(
            "POST",
            "/v1/traces",
            [("Content-Type", "application/json"), ("Content-Length", "2")],
            b"{}",
        )
        paths = ["/v1/traces", "/v1/metrics", "/v1/traces/"]
        yield Door(server.address, paths, health, otlp_error)


@pytest.fixture(scope="module")
def live_door(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Door]:
    tmp: Path = tmp_path_factory.mktemp("live")
    with sample_database(tmp) as dsn:
        target = clickhouse.parse_dsn(dsn)
        clickhouse.connect(dsn)
        assert target.path is not None
        server = live.LiveServer(target.path, target.database)
        server.limits = door.Limits(4096, body_seconds=1.0)
        with server:
            health = request_bytes("GET", "/ping", [])
            yield Door(server.address, ["/", "/ping", "/?query=SELECT%201"], health, live_error)


# -- what a hostile or unlucky client sends -----------------------------------------------

_NAMES = [
    "Content-Length",
    "Transfer-Encoding",
    "Content-Type",
    "Content-Encoding",
    "Authorization",
    "X-ClickHouse-User",
    "X-ClickHouse-Key",
    "Expect",
    "Connection",
    "Host",
    "Set-Cookie",
    "X-Forwarded-For",
]
_VALUES = [
    "-1",
    "abc",
    "0",
    "5",
    "99999999999999999999",
    "chunked",
    "gzip",
    "chunked, gzip",
    "identity",
    "application/json",
    "application/x-protobuf",
    "multipart/form-data; boundary=x",
    "Basic YW5hbHlzdDp4",
    "Bearer x",
    "100-continue",
    "close",
    "",
]
_header_text = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0x7E) | st.sampled_from("\t\x00\x7f\xe9"),
    max_size=40,
)
headers = st.lists(
    st.tuples(
        st.sampled_from(_NAMES) | st.from_regex(r"[A-Za-z][A-Za-z0-9-]{0,20}", fullmatch=True),
        st.sampled_from(_VALUES) | _header_text,
    ),
    max_size=6,
)
methods = st.sampled_from(["GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH"]) | (
    st.from_regex(r"[A-Z]{1,10}", fullmatch=True)
)
_path_text = st.text(
    st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters="#"), max_size=60
)
bodies = st.binary(max_size=3000) | st.sampled_from(
    [b"{}", b"[" * 2000, b"SELECT 1", b"\x1f\x8b\x08\x00", b'{"resourceSpans": 3}']
)


def _frame(
    method: str, path: str, pairs: list[tuple[str, str]], body: bytes, honest: bool
) -> bytes:
    """The request bytes: with an honest Content-Length for the body unless the random
    headers bring their own framing (then the body is sent as it is)."""
    names = {name.lower() for name, _ in pairs}
    if honest and not {"content-length", "transfer-encoding"} & names:
        pairs = [*pairs, ("Content-Length", str(len(body)))]
    lines = [f"{method} {path} HTTP/1.1", "Host: fuzz", *(f"{k}: {v}" for k, v in pairs)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8", "surrogateescape") + body


def _check(target: Door, raw: bytes, method: str) -> None:
    try:
        reply = exchange(target.address, raw, timeout=8, method=method.encode())
    except NoAnswer:
        # Only a request whose own framing leaves the server waiting may go without an
        # answer, and then only until the door's time limit closes the connection.
        reply = None
    if reply is not None:
        assert 100 <= reply.status <= 599
        assert set(reply.header_names()) <= ALLOWED_HEADERS, reply.header_names()
        query_id = reply.headers.get("X-ClickHouse-Query-Id")
        assert query_id is None or door.is_token(query_id)
        if reply.status >= 400 and method != "HEAD":
            assert "Traceback" not in target.error_line(reply)
            assert reply.status != 500, reply.body
    # The server keeps serving.
    assert exchange(target.address, target.health, timeout=10).status == 200


def _fuzz(target: Door, data: st.DataObject) -> None:
    method = data.draw(methods, "method")
    path = data.draw(st.sampled_from(target.paths) | _path_text.map(lambda p: "/" + p), "path")
    pairs = data.draw(headers, "headers")
    body = data.draw(bodies, "body")
    honest = data.draw(st.booleans(), "honest Content-Length")
    _check(target, _frame(method, path, pairs, body, honest), method)


FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@FUZZ
@given(data=st.data())
def test_the_metrics_door_answers_anything_in_one_line(metrics_door: Door, data: Any) -> None:
    _fuzz(metrics_door, data)


@FUZZ
@given(data=st.data())
def test_the_otlp_door_answers_anything_in_one_line(otlp_door: Door, data: Any) -> None:
    _fuzz(otlp_door, data)


@FUZZ
@given(data=st.data())
def test_the_live_door_answers_anything_in_one_line(live_door: Door, data: Any) -> None:
    _fuzz(live_door, data)


# -- the door's own rules, on the smallest door ------------------------------------------


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        (b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400),
        (b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: x\r\n\r\n", 400),
        (b"GET /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
        (b"GET /metrics HTTP/1.1\r\nHost: x\r\nX: " + b"a" * 600_000 + b"\r\n\r\n", 431),
        (b"not http at all\r\n\r\n", 400),
        (b"GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n", 404),
        (b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 405),
    ],
    ids=[
        "negative-length",
        "word-length",
        "unknown-coding",
        "huge-header",
        "garbage",
        "404",
        "405",
    ],
)
def test_refusals_are_one_json_line(metrics_door: Door, raw: bytes, status: int) -> None:
    reply = exchange(metrics_door.address, raw)
    assert reply.status == status
    assert metrics_error(reply)
    assert exchange(metrics_door.address, metrics_door.health).status == 200


def test_a_connection_that_sends_nothing_is_closed(metrics_door: Door) -> None:
    with pytest.raises(NoAnswer, match="closed"):
        exchange(metrics_door.address, b"GET /metr", timeout=10)


def test_stats_and_metrics_answer_on_the_door(metrics_door: Door) -> None:
    reply = exchange(metrics_door.address, request_bytes("GET", "/outcomes/stats", []))
    assert reply.status == 200 and reply.headers["Content-Type"] == "application/json"
    assert json.loads(reply.body) == {"engine": "batch"}
    reply = exchange(metrics_door.address, metrics_door.health)
    assert reply.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    assert b"outcomes_worker_folded_total 1.0" in reply.body


def test_components_mount_side_by_side_each_refusing_in_its_own_form(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Two components behind one door (as the gate and the browser will be): each
    route answers, each refusal is rendered by the component whose mount the path is
    under, a bug is one line for the client and a logged traceback."""

    async def hello(request: Request) -> Response:
        return PlainTextResponse("hello\n")

    async def broken(request: Request) -> Response:
        raise RuntimeError("a bug with a secret")

    def plain(request: Request, refusal: door.Refusal) -> Response:
        return PlainTextResponse(f"E{refusal.status} {refusal.message}\n", refusal.status)

    gate = door.Component([Route("/hello", hello), Route("/broken", broken)], mount="/gate")
    root = door.Component([Route("/", hello)], refuse=plain)
    with door.DoorServer(door.app(gate, root)) as server:
        assert exchange(server.address, request_bytes("GET", "/gate/hello", [])).body == b"hello\n"
        assert exchange(server.address, request_bytes("GET", "/", [])).body == b"hello\n"
        # `/gate/hello/` is not redirected (Starlette would build the Location from the
        # request's Host header): 404.
        slash = exchange(server.address, b"GET /gate/hello/ HTTP/1.1\r\nHost: evil.example\r\n\r\n")
        assert slash.status == 404 and "location" not in slash.header_names()
        missing = exchange(server.address, request_bytes("GET", "/gate/nothing", []))
        assert missing.status == 404
        assert metrics_error(missing) == "no such endpoint: GET /gate/nothing"
        elsewhere = exchange(server.address, request_bytes("GET", "/nothing", []))
        assert (elsewhere.status, elsewhere.body) == (404, b"E404 no such endpoint: GET /nothing\n")
        bug = exchange(server.address, request_bytes("GET", "/gate/broken", []))
        assert bug.status == 500 and metrics_error(bug) == "internal error: RuntimeError"
    assert any("a bug with a secret" in str(r.exc_info) for r in caplog.records)
