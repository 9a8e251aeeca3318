"""The relay keeps its own limits against a real local endpoint on 127.0.0.1 that
misbehaves: an answer trickled a byte at a time ends at the attempt's deadline (the
whole request, not each read); a 400 MiB answer body is not read whole; a `Retry-After`
of a billion seconds, or an HTTP date years ahead, counts as `--max-backoff`; and
`outcomes relay --until-idle` exits while backing off from an endpoint that never
recovers, with the notification left uncommitted."""

from __future__ import annotations

import email.utils
import shutil
import signal
import socket
import ssl
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import outcomes.cli.relay
from outcomes.cli.main import main
from outcomes.streams.sdk.consumer import _BUILDERS, Origin, RetryLater
from outcomes.streams.sdk.relay import MAX_RESPONSE_BYTES, RelayError, WebhookRelay, retry_after
from tests.conftest import require
from tests.consumer_support import publish, run_notifications

SECRET = "s3cr3t-for-the-relay-limit-tests-" + uuid.uuid4().hex
Behaviour = Callable[[socket.socket], None]


@dataclass
class Endpoint:
    """A raw TCP endpoint: each connection's request is read, then `behaviour` answers
    (or does not). Counts requests and the bytes it managed to send."""

    behaviour: Behaviour
    url: str = ""
    requests: int = 0
    sent: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def send(self, conn: socket.socket, data: bytes) -> None:
        conn.sendall(data)
        with self.lock:
            self.sent += len(data)


def _read_request(conn: socket.socket) -> bool:
    """Read one request (headers and a Content-Length body); False at end of stream."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return False
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return False
        body += chunk
    return True


@pytest.fixture
def endpoint() -> Iterator[Callable[[Callable[[Endpoint, socket.socket], None]], Endpoint]]:
    listeners: list[socket.socket] = []

    def start(
        behaviour: Callable[[Endpoint, socket.socket], None],
        tls: ssl.SSLContext | None = None,
    ) -> Endpoint:
        listener = socket.create_server(("127.0.0.1", 0))
        listeners.append(listener)
        state = Endpoint(lambda conn: behaviour(state, conn))

        def serve(conn: socket.socket) -> None:
            if tls is not None:
                try:
                    conn = tls.wrap_socket(conn, server_side=True)
                except OSError:
                    conn.close()
                    return
            with conn:
                try:
                    while _read_request(conn):
                        with state.lock:
                            state.requests += 1
                        state.behaviour(conn)
                except OSError:
                    pass  # the relay closed its end: what these tests want

        def accept() -> None:
            while True:
                try:
                    conn, _ = listener.accept()
                except OSError:
                    return
                threading.Thread(target=serve, args=(conn,), daemon=True).start()

        threading.Thread(target=accept, daemon=True).start()
        scheme = "https" if tls is not None else "http"
        state.url = f"{scheme}://127.0.0.1:{listener.getsockname()[1]}/hook"
        return state

    yield start
    for listener in listeners:
        listener.close()


def _too_long(signum: int, frame: Any) -> None:
    raise TimeoutError("outcomes relay did not return within 90 s")


def _item(n: int = 1) -> Any:
    [record] = run_notifications(f"limits-{n}", runs=1, revisions=1)
    return _BUILDERS["notification"](record.body, Origin("t", 0, n))


def _trickle(data: bytes, every: float) -> Callable[[Endpoint, socket.socket], None]:
    def behaviour(state: Endpoint, conn: socket.socket) -> None:
        for byte in data:
            state.send(conn, bytes([byte]))
            time.sleep(every)

    return behaviour


def test_an_answer_trickled_a_byte_at_a_time_ends_at_the_attempts_deadline(
    endpoint: Callable[..., Endpoint],
) -> None:
    """A byte every 0.4 s: no single read waits as long as the 1 s timeout, yet the
    request as a whole must end then (reading the whole status line would take 10 s)."""
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    slow = endpoint(_trickle(answer, 0.4))
    relay = WebhookRelay(slow.url, SECRET, timeout=1.0)
    began = time.monotonic()
    with pytest.raises(RetryLater, match="no complete answer within 1 s"):
        relay.deliver(_item())
    took = time.monotonic() - began
    relay.close()
    assert took < 3.0, f"the attempt took {took:.1f} s against a 1 s deadline"
    assert relay.stats.failed_attempts == 1 and relay.stats.delivered == 0


def test_a_status_given_in_time_decides_though_the_body_is_trickled(
    endpoint: Callable[..., Endpoint],
) -> None:
    """The status and headers arrive at once, then the body a byte every 0.4 s: a 503
    is retried and a 200 delivered, each within the deadline, the connection closed."""

    def answer(status: bytes) -> Callable[[Endpoint, socket.socket], None]:
        def behaviour(state: Endpoint, conn: socket.socket) -> None:
            state.send(conn, b"HTTP/1.1 " + status + b"\r\nContent-Length: 40\r\n\r\n")
            _trickle(b"x" * 40, 0.4)(state, conn)

        return behaviour

    for status, delivered in ((b"503 Busy", False), (b"200 OK", True)):
        slow = endpoint(answer(status))
        relay = WebhookRelay(slow.url, SECRET, timeout=1.0)
        began = time.monotonic()
        if delivered:
            relay.deliver(_item())
        else:
            with pytest.raises(RetryLater, match=r"HTTP 503 .*answer body unread"):
                relay.deliver(_item())
        took = time.monotonic() - began
        assert took < 3.0, f"{status!r}: the attempt took {took:.1f} s"
        assert relay.stats.delivered == int(delivered)
        relay.close()


def test_a_400_mib_answer_body_is_not_read_whole(endpoint: Callable[..., Endpoint]) -> None:
    """A 503 (then a 200) announcing 400 MiB and sending as fast as the relay reads: the
    relay reads the start, shows it, and closes the connection; the endpoint manages to
    send a small part of it (socket buffers), not 400 MiB."""
    block = b"y" * (1 << 20)

    def huge(status: bytes) -> Callable[[Endpoint, socket.socket], None]:
        def behaviour(state: Endpoint, conn: socket.socket) -> None:
            state.send(conn, b"HTTP/1.1 " + status + b"\r\nContent-Length: 419430400\r\n\r\n")
            for _ in range(400):
                state.send(conn, block)

        return behaviour

    busy = endpoint(huge(b"503 Busy"))
    relay = WebhookRelay(busy.url, SECRET, timeout=20.0)
    with pytest.raises(RetryLater) as caught:
        relay.deliver(_item())
    assert "HTTP 503" in caught.value.reason and "yyyy" in caught.value.reason
    fine = endpoint(huge(b"200 OK"))
    relay = WebhookRelay(fine.url, SECRET, timeout=20.0)
    relay.deliver(_item(1))
    relay.deliver(_item(2))  # on a new connection: the first one was not reusable
    relay.close()
    assert fine.requests == 2
    time.sleep(0.5)  # let the endpoints notice the closed connections
    assert busy.sent < 64 * (1 << 20) and fine.sent < 2 * 64 * (1 << 20), (busy.sent, fine.sent)
    assert MAX_RESPONSE_BYTES <= 1 << 20


def test_retry_after_in_seconds_or_as_an_http_date_is_capped_by_max_backoff(
    endpoint: Callable[..., Endpoint],
) -> None:
    now = time.time()
    in_ten_years = email.utils.formatdate(now + 10 * 365 * 86400, usegmt=True)
    for value, expected in (
        ("1000000000", 2.0),
        (in_ten_years, 2.0),
        ("0.5", 0.5),
        (email.utils.formatdate(now - 60, usegmt=True), 0.0),
        ("soon", None),
        ("NaN", None),
        ("inf", 2.0),
    ):

        def behaviour(state: Endpoint, conn: socket.socket, value: str = value) -> None:
            state.send(
                conn,
                f"HTTP/1.1 503 Busy\r\nRetry-After: {value}\r\nContent-Length: 0\r\n\r\n".encode(),
            )

        busy = endpoint(behaviour)
        relay = WebhookRelay(busy.url, SECRET, timeout=2.0, max_backoff=2.0)
        with pytest.raises(RetryLater) as caught:
            relay.deliver(_item())
        relay.close()
        assert caught.value.after == expected, value
    in_a_minute = email.utils.formatdate(now + 60, usegmt=True)
    assert 55 < (retry_after(in_a_minute, now=now) or 0) <= 60
    assert retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now=now) == 0.0
    assert retry_after("Sunday, 06-Nov-94 08:49:37 GMT", now=now) == 0.0  # RFC 850 form
    assert retry_after(" 7 ") == 7.0 and retry_after(None) is None


def test_relay_until_idle_exits_while_backing_off_from_a_billion_second_retry_after(
    endpoint: Callable[..., Endpoint],
    kafka_bootstrap: str,
    kafka_config: dict[str, Any],
    kafka_topic: Callable[..., str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """503 with `Retry-After: 1000000000` on every attempt, `--max-backoff 1 --until-idle
    3`: the relay retries about every second and exits after about 3 s, status 1, saying
    which notification is still undelivered; it was not committed, so a relay of the
    same group sends it again once the endpoint recovers."""

    def busy(state: Endpoint, conn: socket.socket) -> None:
        state.send(
            conn, b"HTTP/1.1 503 Busy\r\nRetry-After: 1000000000\r\nContent-Length: 0\r\n\r\n"
        )

    down = endpoint(busy)
    topic, dead = kafka_topic("notifications"), kafka_topic("dead")
    records = run_notifications(f"idle-{uuid.uuid4().hex[:6]}", runs=1, revisions=1)
    publish(kafka_config, topic, records)
    monkeypatch.setattr(outcomes.cli.relay, "TOPICS", {"notification": topic})
    monkeypatch.setenv("OUTCOMES_RELAY_SECRET", SECRET)
    group = f"outcomes-reader-limits-{uuid.uuid4().hex[:8]}"

    def relay(url: str) -> tuple[Result, float]:
        args = ["relay", "--url", url, "--bootstrap", kafka_bootstrap, "--group", group]
        args += ["--from-beginning", "--dead-letter-topic", dead, "--timeout", "2"]
        args += ["--max-backoff", "1", "--until-idle", "3"]
        began = time.monotonic()
        # On a relay that never returns (as before the fix), the test fails, not hangs.
        previous = signal.signal(signal.SIGALRM, _too_long)
        signal.alarm(90)
        try:
            result = CliRunner().invoke(main, args, catch_exceptions=False)
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)
        return result, time.monotonic() - began

    result, took = relay(down.url)
    assert result.exit_code == 1, result.output
    assert f"notification {records[0].id} still failing after 3 s" in result.output
    assert "HTTP 503" in result.output
    assert 2 <= down.requests <= 6, down.requests
    print(f"relay exited {took:.1f} s after it started, {down.requests} attempts")

    def ok(state: Endpoint, conn: socket.socket) -> None:
        state.send(conn, b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")

    up = endpoint(ok)
    result, _ = relay(up.url)
    assert result.exit_code == 0, result.output
    assert up.requests == 1 and "1 delivered" in result.output


def test_the_relay_refuses_a_timeout_that_is_not_positive() -> None:
    for timeout in (0, -1, float("nan"), float("inf"), 1e12):
        with pytest.raises(RelayError, match="--timeout must be > 0 and at most 86400"):
            WebhookRelay("http://127.0.0.1:9/x", SECRET, timeout=timeout)
    with pytest.raises(RelayError, match="--max-backoff >= 0"):
        WebhookRelay("http://127.0.0.1:9/x", SECRET, max_backoff=-1)


def _self_signed(tmp: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A server context with a fresh self-signed certificate for 127.0.0.1, and a client
    context that trusts only it."""
    require(shutil.which("openssl") is not None, "the openssl command makes the test certificate")
    key, cert = tmp / "key.pem", tmp / "cert.pem"
    command = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
    command += ["-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1"]
    command += ["-addext", "subjectAltName=IP:127.0.0.1"]
    subprocess.run(
        command,
        check=True,
        capture_output=True,
        timeout=60,
    )
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert, key)
    client = ssl.create_default_context(cafile=str(cert))
    return server, client


def test_over_tls_the_connection_is_kept_alive_and_the_deadline_holds(
    endpoint: Callable[..., Endpoint], tmp_path: Path
) -> None:
    server, client = _self_signed(tmp_path)

    def ok(state: Endpoint, conn: socket.socket) -> None:
        state.send(conn, b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")

    up = endpoint(ok, tls=server)
    relay = WebhookRelay(up.url, SECRET, timeout=5.0, ssl_context=client)
    for n in range(3):
        relay.deliver(_item(n))
    relay.close()
    assert up.requests == 3 and relay.stats.delivered == 3

    slow = endpoint(_trickle(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 0.4), tls=server)
    relay = WebhookRelay(slow.url, SECRET, timeout=1.0, ssl_context=client)
    began = time.monotonic()
    with pytest.raises(RetryLater, match="no complete answer within 1 s"):
        relay.deliver(_item())
    relay.close()
    assert time.monotonic() - began < 3.0
