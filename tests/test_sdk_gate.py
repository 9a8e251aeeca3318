"""The SDK's side of the gate (streams/sdk/gate.py): the client and the generate → check →
repair once → re-check → contain loop, against a local HTTP server that answers the way
the gate's door does (its answers are scripted here: what is tested is the client's own
rules: fail open within the budget, never loop, never call an unchecked answer passed)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson
import pytest

from outcomes.streams.sdk.gate import GateClient, GateRefused, GateUnavailable, gated_answer


class Script:
    """What the fake door answers, one (status, body, delay) per request, and what it got."""

    def __init__(self) -> None:
        self.answers: list[tuple[int, Any, float]] = []
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.auth: list[str | None] = []


@pytest.fixture
def door() -> Iterator[tuple[str, Script]]:
    script = Script()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            script.requests.append(orjson.loads(self.rfile.read(length)))
            script.paths.append(self.path)
            script.auth.append(self.headers.get("Authorization"))
            status, body, delay = script.answers.pop(0)
            time.sleep(delay)
            raw = body if isinstance(body, bytes) else orjson.dumps(body)
            self.send_response(status)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", script
    finally:
        server.shutdown()
        server.server_close()


REPAIR = {"decision": "repair", "instruction": "fix it", "state_block": "<outcome-account>"}


def test_repair_once_then_pass_shows_the_repair_with_its_appendix(door: Any) -> None:
    url, script = door
    script.answers = [(200, REPAIR, 0), (200, {"decision": "pass", "appendix": "- more"}, 0)]
    seen: list[tuple[str, str]] = []

    def repair(instruction: str, block: str) -> str:
        seen.append((instruction, block))
        return "repaired"

    shown = gated_answer(
        GateClient(url, token="t0k"), "run/1", lambda: "first", repair, position=["e1", "e2"]
    )
    assert (shown.text, shown.decision, shown.checked, shown.attempts) == (
        "repaired", "pass", True, 2
    )  # fmt: skip
    assert shown.appendix == "- more"
    assert seen == [("fix it", "<outcome-account>")]
    assert [r["attempt"] for r in script.requests] == [1, 2]
    assert [r["text"] for r in script.requests] == ["first", "repaired"]
    assert script.requests[0]["position"] == ["e1", "e2"]
    assert script.requests[0]["chain_id"] == script.requests[1]["chain_id"]
    assert script.paths[0] == "/v1/runs/run%2F1/check"
    assert script.auth[0] == "Bearer t0k"


def test_a_repair_that_still_contradicts_shows_the_contained_text(door: Any) -> None:
    url, script = door
    script.answers = [(200, REPAIR, 0), (200, {"decision": "contain", "contained": "facts"}, 0)]
    shown = gated_answer(GateClient(url), "r", lambda: "a", lambda i, b: "b")
    assert (shown.text, shown.decision, shown.checked) == ("facts", "contain", True)


def test_a_gate_that_asks_twice_is_not_followed_into_a_loop(door: Any) -> None:
    url, script = door
    script.answers = [(200, REPAIR, 0), (200, REPAIR, 0)]
    shown = gated_answer(GateClient(url), "r", lambda: "a", lambda i, b: "b")
    assert (shown.decision, shown.checked, len(script.requests)) == ("unchecked", False, 2)


def test_stale_fails_open_and_says_unchecked(door: Any) -> None:
    url, script = door
    script.answers = [(200, {"decision": "stale", "position": {"reached": 1, "wanted": 2}}, 0)]
    shown = gated_answer(GateClient(url), "r", lambda: "the answer", lambda i, b: "x")
    assert (shown.text, shown.decision, shown.checked) == ("the answer", "unchecked", False)


def test_a_slow_gate_fails_open_within_the_budget(door: Any) -> None:
    url, script = door
    script.answers = [(200, {"decision": "pass"}, 2.0)]
    began = time.monotonic()
    shown = gated_answer(GateClient(url, budget=0.3), "r", lambda: "a", lambda i, b: "x")
    assert shown.decision == "unchecked" and not shown.checked
    assert time.monotonic() - began < 1.5


def test_no_gate_at_all_fails_open() -> None:
    with socket.socket() as sock:  # a port nobody listens on: bound, never listening
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        shown = gated_answer(GateClient(url, budget=0.5), "r", lambda: "a", lambda i, b: "x")
    assert (shown.decision, shown.checked, shown.attempts) == ("unchecked", False, 0)
    assert shown.why and "no answer from the gate" in shown.why


def test_a_refusal_is_the_callers_error_not_a_reason_to_show_unchecked(door: Any) -> None:
    url, script = door
    script.answers = [(400, {"error": "bad_claim_map: claim 0 is not an object"}, 0)]
    with pytest.raises(GateRefused) as err:
        GateClient(url).check_answer("r", "text", claim_map=[{"x": 1}])
    assert err.value.status == 400 and "claim 0" in err.value.message


@pytest.mark.parametrize(
    "answer", [(500, {"error": "boom"}, 0), (200, b"not json", 0), (200, {"decision": "ok"}, 0)]
)
def test_an_answer_that_is_not_the_gates_is_unavailable(door: Any, answer: Any) -> None:
    url, script = door
    script.answers = [answer]
    with pytest.raises(GateUnavailable):
        GateClient(url).check_answer("r", "text")


def test_a_url_that_is_no_http_url_is_refused_at_once() -> None:
    with pytest.raises(ValueError):
        GateClient("kafka://127.0.0.1:9092")
