"""The webhook relay against the real broker and a real local HTTP receiver that fails,
times out and succeeds on demand: nothing lost, order per run kept, duplicates only with
the same idempotency key, 4xx dead-lettered with the answer; the signature helper; the
command refuses to start without a secret and never shows it."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

import outcomes.cli.relay
from outcomes.cli.main import main
from outcomes.common.settings import Settings
from outcomes.streams.sdk import webhook
from outcomes.streams.sdk.consumer import _BUILDERS, Backoff, Origin, OutcomesConsumer
from outcomes.streams.sdk.relay import (
    _RETRYABLE_STATUS,
    REJECTED_BY_ENDPOINT,
    RelayError,
    WebhookRelay,
    load_secret,
)
from outcomes.streams.sdk.webhook import (
    IDEMPOTENCY_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    WebhookVerificationError,
    sign,
    verify,
)
from tests.consumer_support import publish, read_all, run_notifications

SECRET = "s3cr3t-for-the-relay-tests-only-" + uuid.uuid4().hex


@dataclass
class Receiver:
    """A local endpoint. `plan[id]` lists what to answer to that id's attempts in turn:
    an HTTP status, or "hang" (answer 200 too late, after the relay's timeout); then 200.
    Every request is recorded, in arrival order, with whether its signature verified."""

    plan: dict[str, list[int | str]] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    hang: float = 1.5
    url: str = ""

    def answer(self, key: str) -> int | str:
        with self.lock:
            steps = self.plan.get(key)
            return steps.pop(0) if steps else 200

    def accepted(self) -> list[dict[str, Any]]:
        with self.lock:
            return [r for r in self.requests if r["status"] == 200 and not r["late"]]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    state = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            headers = dict(self.headers.items())
            try:
                verify(SECRET, body, headers)
                verified = True
            except WebhookVerificationError:
                verified = False
            key = headers.get(IDEMPOTENCY_HEADER, "")
            step = state.answer(key)
            late = step == "hang"
            status = 200 if late else int(step)
            with state.lock:  # recorded as it arrives, in arrival order
                state.requests.append(
                    {
                        "key": key,
                        "body": orjson.loads(body),
                        "verified": verified,
                        "status": status,
                        "late": late,
                        "headers": headers,
                    }
                )
            if late:
                time.sleep(state.hang)
            reply = b"nope: not this one" if 400 <= status < 500 else b"ok"
            try:
                self.send_response(status)
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the relay gave up waiting (a timeout): what the test wants

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hooks/outcomes?token=abc"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def test_relay_delivers_everything_in_order_per_run_through_failures_and_timeouts(
    receiver: Receiver,
    kafka_settings: Settings,
    kafka_config: dict[str, Any],
    kafka_topic: Callable[..., str],
) -> None:
    topic, dead = kafka_topic("notifications", partitions=3), kafka_topic("dead")
    records = run_notifications("relay", runs=5, revisions=4)
    publish(kafka_config, topic, records)
    receiver.plan = {
        "relay-000:2": [503, 502, 500],
        "relay-001:1": ["hang"],
        "relay-002:3": [503, "hang", 504],
        "relay-003:4": [429],
        "relay-004:2": [422],
    }
    relay = WebhookRelay(receiver.url, SECRET, timeout=0.5)
    consumer = OutcomesConsumer(
        kafka_settings,
        group=f"outcomes-reader-relay-{uuid.uuid4().hex[:8]}",
        topics={"notification": topic},
        dead_letter_topic=dead,
        from_beginning=True,
        retries=0,
        backoff=Backoff(base=0.05, cap=0.2),
    )
    with consumer:
        consumer.run(relay.deliver, idle_timeout=4)
    relay.close()

    rejected = "relay-004:2"
    expected = {r.id for r in records} - {rejected}
    accepted = receiver.accepted()
    assert {r["key"] for r in accepted} == expected  # nothing lost
    assert all(r["verified"] for r in receiver.requests)
    assert all(r["key"] == r["body"]["notification_id"] for r in receiver.requests)
    # Duplicates: the late 200s the relay timed out on, each with the same key.
    keys = [r["key"] for r in receiver.requests if r["status"] == 200]
    duplicates = {k for k in keys if keys.count(k) > 1}
    assert duplicates == {"relay-001:1", "relay-002:3"}
    # Order per run: every attempt for revision r arrives before any for revision r + 1
    # (a request the relay timed out on may still be answered later: docs/consumers.md).
    by_run: dict[str, list[int]] = defaultdict(list)
    for request in receiver.requests:
        by_run[request["body"]["run_id"]].append(request["body"]["revision"])
    assert all(seq == sorted(seq) for seq in by_run.values()), by_run
    attempts = [r["key"] for r in receiver.requests]
    assert attempts.count("relay-000:2") == 4 and attempts.count(rejected) == 1
    assert relay.stats.rejected == 1 and relay.stats.delivered == len(expected)
    letters = read_all(kafka_config, dead, 1)
    assert letters[0]["reason"] == REJECTED_BY_ENDPOINT
    assert letters[0]["run_id"] == "relay-004"
    assert "HTTP 422" in letters[0]["message"] and "nope: not this one" in letters[0]["message"]
    assert "token=abc" not in letters[0]["message"]  # the query may hold a credential


def test_relay_command_relays_and_never_shows_the_secret(
    receiver: Receiver,
    kafka_bootstrap: str,
    kafka_config: dict[str, Any],
    kafka_topic: Callable[..., str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Any,
) -> None:
    topic, dead = kafka_topic("notifications"), kafka_topic("dead")
    records = run_notifications("cli-relay", runs=2, revisions=2)
    publish(kafka_config, topic, records)
    receiver.plan = {"cli-relay-001:2": [500]}
    monkeypatch.setattr(outcomes.cli.relay, "TOPICS", {"notification": topic})
    secret_file = tmp_path / "secret"
    secret_file.write_text(SECRET + "\n")
    args = [
        "relay",
        "--url",
        receiver.url,
        "--secret-file",
        str(secret_file),
        "--bootstrap",
        kafka_bootstrap,
        "--group",
        f"outcomes-reader-cli-{uuid.uuid4().hex[:8]}",
        "--from-beginning",
        "--dead-letter-topic",
        dead,
        "--until-idle",
        "3",
        "--max-backoff",
        "0.2",
        "--loglevel",
        "debug",
    ]
    result = CliRunner().invoke(main, args, catch_exceptions=False)

    assert result.exit_code == 0, result.output
    assert {r["key"] for r in receiver.accepted()} == {r.id for r in records}
    assert "4 delivered" in result.output
    shown = result.output + caplog.text
    assert SECRET not in shown and SECRET[:16] not in shown
    assert "token=abc" not in shown


def test_relay_refuses_to_start_without_a_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OUTCOMES_RELAY_SECRET", raising=False)
    monkeypatch.delenv("OUTCOMES_RELAY_SECRET_FILE", raising=False)
    result = CliRunner().invoke(main, ["relay", "--url", "http://127.0.0.1:9/x"])
    assert result.exit_code == 1
    assert "outcomes relay: error: no relay secret: set OUTCOMES_RELAY_SECRET" in result.output
    monkeypatch.setenv("OUTCOMES_RELAY_SECRET", "too-short")
    result = CliRunner().invoke(main, ["relay", "--url", "http://127.0.0.1:9/x"])
    assert result.exit_code == 1 and "at least 16 bytes" in result.output
    assert "too-short" not in result.output


def test_load_secret_prefers_the_file_and_names_no_secret(tmp_path: Any) -> None:
    path = tmp_path / "secret"
    path.write_text("from-the-file-0123456789\n")
    env = {"OUTCOMES_RELAY_SECRET": "from-the-environment"}
    assert load_secret(path, env) == "from-the-file-0123456789"
    assert load_secret(None, env) == "from-the-environment"
    with pytest.raises(RelayError, match="cannot read it"):
        load_secret(tmp_path / "missing", env)
    with pytest.raises(RelayError, match="http:// or https://"):
        WebhookRelay("ftp://example.org/x", SECRET)


def test_verify_accepts_a_signed_body_and_rejects_tampering_replays_and_wrong_secrets() -> None:
    body = b'{"notification_id":"run-1:2"}'
    headers = sign(SECRET, body, timestamp=1_800_000_000)
    assert verify(SECRET, body, headers, now=1_800_000_100) == 1_800_000_000
    lower = {k.lower(): v for k, v in headers.items()}
    assert verify([b"old-secret-000000", SECRET], body, lower, now=1_800_000_000)
    cases: list[tuple[bytes, dict[str, str], float, str]] = [
        (body + b" ", headers, 1_800_000_000, "does not match"),
        (body, headers, 1_800_000_301, "outside"),
        (body, headers, 1_799_999_600, "outside"),
        (body, {**headers, TIMESTAMP_HEADER: "1800000001"}, 1_800_000_000, "does not match"),
        (body, {TIMESTAMP_HEADER: headers[TIMESTAMP_HEADER]}, 1_800_000_000, "missing"),
        (body, {**headers, SIGNATURE_HEADER: "v0=abc"}, 1_800_000_000, "no v1="),
        (body, {**headers, TIMESTAMP_HEADER: "soon"}, 1_800_000_000, "whole seconds"),
    ]
    for data, given, now, reason in cases:
        with pytest.raises(WebhookVerificationError, match=reason):
            verify(SECRET, data, given, now=now)
    with pytest.raises(WebhookVerificationError, match="does not match"):
        verify("another-secret-0000", body, headers, now=1_800_000_000)
    rotated = sign(["new-secret-00000000", SECRET], body, timestamp=1_800_000_000)
    assert verify(SECRET, body, rotated, now=1_800_000_000) == 1_800_000_000


def test_relay_help_names_the_statuses_it_retries() -> None:
    """`outcomes relay --help` says which answers are retried, as the relay decides."""
    shown = " ".join(CliRunner().invoke(main, ["relay", "--help"]).output.split())
    assert all(str(status) in shown for status in _RETRYABLE_STATUS)
    assert "5xx" in shown and "4xx answer is not retried" not in shown


def test_the_webhook_module_runs_copied_alone_outside_the_project(tmp_path: Path) -> None:
    """streams/sdk/webhook.py says a receiver can copy it: it imports only the standard
    library, and a copy verifies what the relay signs in an interpreter that cannot
    import outcomes."""
    source = Path(webhook.__file__)
    imported: set[str] = set()
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            imported.add(node.module.split(".")[0])
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, imported
    shutil.copy(source, tmp_path / "webhook_copy.py")
    body = b'{"notification_id":"run-1:2"}'
    headers = sign(SECRET, body)
    script = (
        "import json, sys\n"
        "import webhook_copy as w\n"
        "try:\n"
        "    import outcomes\n"
        "    sys.exit('outcomes is importable here')\n"
        "except ImportError:\n"
        "    pass\n"
        "secret, body, headers = json.loads(sys.stdin.read())\n"
        "print(w.verify(secret, body.encode(), headers))\n"
        "try:\n"
        "    w.verify(secret, body.encode() + b' ', headers)\n"
        "except w.WebhookVerificationError as exc:\n"
        "    print('refused:', exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-S", "-c", script],  # -S: no site-packages, so no outcomes
        input=orjson.dumps([SECRET, body.decode(), headers]).decode(),
        cwd=tmp_path,
        env={},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        headers[TIMESTAMP_HEADER],
        "refused: signature does not match the body and timestamp",
    ]


def test_relay_crash_after_the_endpoints_answer_sends_it_again_with_the_same_key(
    receiver: Receiver,
    kafka_settings: Settings,
    kafka_config: dict[str, Any],
    kafka_topic: Callable[..., str],
) -> None:
    """At least once: the endpoint accepted revision 3, then the relay died before the
    commit; the group's next relay sends revision 3 again, with the same key."""
    topic, dead = kafka_topic("notifications"), kafka_topic("dead")
    records = run_notifications("again", runs=1, revisions=5)
    publish(kafka_config, topic, records)
    name = f"outcomes-reader-relay-{uuid.uuid4().hex[:8]}"

    def relay_once(crash_after: str | None) -> None:
        relay = WebhookRelay(receiver.url, SECRET, timeout=2)

        def deliver(item: Any) -> None:
            relay.deliver(item)
            if item.id == crash_after:
                raise KeyboardInterrupt  # dies between the 2xx and the commit

        consumer = OutcomesConsumer(
            kafka_settings,
            group=name,
            topics={"notification": topic},
            dead_letter_topic=dead,
            from_beginning=True,
        )
        with consumer:
            consumer.run(deliver, idle_timeout=3)
        relay.close()

    with pytest.raises(KeyboardInterrupt):
        relay_once("again-000:3")
    relay_once(None)

    keys = [r["key"] for r in receiver.accepted()]
    assert keys == [f"again-000:{n}" for n in (1, 2, 3, 3, 4, 5)]
    same = [r for r in receiver.requests if r["key"] == "again-000:3"]
    assert same[0]["body"] == same[1]["body"]  # the same notification, byte for byte


def test_relay_reconnects_at_once_when_the_endpoint_dropped_an_idle_connection() -> None:
    """An endpoint that closes keep-alive connections without saying so costs no retry."""
    received: list[str] = []

    class Dropping(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            verify(SECRET, body, dict(self.headers.items()))
            received.append(self.headers[IDEMPOTENCY_HEADER])
            self.send_response(204)
            self.send_header("Content-Length", "0")
            self.end_headers()
            self.close_connection = True  # closed, though the answer said keep-alive

        def log_message(self, format: str, *args: Any) -> None:
            pass

    closed = threading.Semaphore(0)

    class Closing(ThreadingHTTPServer):
        def shutdown_request(self, request: Any) -> None:
            super().shutdown_request(request)
            closed.release()  # its end of the connection is closed

    server = Closing(("127.0.0.1", 0), Dropping)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    relay = WebhookRelay(f"http://127.0.0.1:{server.server_address[1]}/", SECRET, timeout=2)
    try:
        for n, record in enumerate(run_notifications("idle", runs=1, revisions=3)):
            relay.deliver(_BUILDERS["notification"](record.body, Origin("t", 0, n)))
            # The next request goes over the connection the endpoint has dropped by then.
            assert closed.acquire(timeout=30), "the endpoint never closed the connection"
    finally:
        relay.close()
        server.shutdown()
        server.server_close()
    assert received == ["idle-000:1", "idle-000:2", "idle-000:3"]
    assert relay.stats.failed_attempts == 0 and relay.stats.delivered == 3
