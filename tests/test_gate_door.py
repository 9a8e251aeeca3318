"""The gate behind the HTTP door (streams/gate_door.py): token before body, bounded input,
one-line errors, and a check sent to a worker that does not own the run forwarded once
to the one that does. Two real door servers on 127.0.0.1; each host's desk is served by
a thread standing in for its worker's poll loop, over states folded by the reducers."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from outcomes.streams.gate_door import gate_token, read_token
from outcomes.streams.sdk.gate import GateClient, GateRefused, gated_answer
from tests.gate_support import GateWorker

SAMPLE = Path(__file__).resolve().parents[1] / "samples" / "five_file_run.jsonl"
RUN = "run-five-files"
TOKEN = "s3cret-token"


def _prefix_events() -> list[dict[str, Any]]:
    events = [orjson.loads(x) for x in SAMPLE.read_bytes().splitlines() if x.strip()]
    last = next(i for i, e in enumerate(events) if e["type"] == "finalize.requested")
    return events[: last + 1]


@pytest.fixture
def pair() -> Iterator[tuple[GateWorker, GateWorker, list[str | None]]]:
    owner_url: list[str | None] = [None]
    owner = GateWorker(TOKEN, owns=True, owner=owner_url)
    other = GateWorker(TOKEN, owns=False, owner=owner_url)
    owner_url[0] = owner.url
    owner.replay.apply(*_prefix_events())
    try:
        yield owner, other, owner_url
    finally:
        owner.close()
        other.close()


def _raw(url: str, request: bytes) -> bytes:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request)  # each request says Connection: close, or is refused unread
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_either_worker_answers_and_the_answer_is_the_owners(pair: Any) -> None:
    owner, other, _ = pair
    positions = [e["event_id"] for e in _prefix_events()]
    for worker in (owner, other):
        checked = GateClient(worker.url, token=TOKEN).check_answer(
            RUN, "All tests pass and the draft was sent.", position=positions
        )
        assert checked.decision == "repair"
        assert {c["text"] for c in checked.contradicted} == {
            "All tests pass",
            "the draft was sent",
        }


def test_a_check_waits_for_an_event_published_just_before_it(pair: Any) -> None:
    owner, other, _ = pair
    rerun = next(
        orjson.loads(x) for x in SAMPLE.read_bytes().splitlines() if b'"run-five-files-14"' in x
    )
    timer = threading.Timer(0.3, lambda: owner.replay.apply(rerun))
    timer.start()
    checked = GateClient(other.url, token=TOKEN).check_answer(
        RUN, "All tests pass.", position=["run-five-files-14"], budget=5.0
    )
    timer.join()
    assert checked.decision == "pass"


def test_a_position_the_fold_never_reaches_is_stale(pair: Any) -> None:
    owner, _, _ = pair
    checked = GateClient(owner.url, token=TOKEN).check_answer(
        RUN, "All tests pass.", position=["not-published"], budget=1.0
    )
    assert checked.decision == "stale"
    assert checked.body["position"] == {"reached": 0, "wanted": 1}


def test_the_sdk_loop_repairs_once_through_a_forwarding_worker(pair: Any) -> None:
    _, other, _ = pair
    shown = gated_answer(
        GateClient(other.url, token=TOKEN),
        RUN,
        lambda: "All tests pass and the draft was sent.",
        lambda instruction, block: "Sorry: the draft was sent.",
    )
    assert (shown.decision, shown.attempts, shown.checked) == ("contain", 2, True)
    assert "Status: unresolved." in shown.text


def test_no_token_is_refused_before_the_body_is_read(pair: Any) -> None:
    owner, _, _ = pair
    answer = _raw(
        owner.url,
        b"POST /v1/runs/r/check HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n{",
    )
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 401")
    assert b"connection: close" in head.lower()
    assert orjson.loads(body) == {"error": "a bearer token is required"}


def test_a_wrong_token_is_403() -> None:
    worker = GateWorker(TOKEN)
    try:
        with pytest.raises(GateRefused) as err:
            GateClient(worker.url, token="guess").check_answer(RUN, "Done.")
        assert err.value.status == 403
    finally:
        worker.close()


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        (b"not json", 400, "not JSON"),
        (b"[1]", 400, "JSON object"),
        (b'{"text": ""}', 400, "text must be"),
        (b'{"text": "Done.", "position": "e1"}', 400, "position"),
        (b'{"text": "Done.", "attempt": 0}', 400, "attempt"),
        (b'{"text": "Done.", "wait_seconds": -1}', 400, "wait_seconds"),
        (
            b'{"text": "Done.", "claim_map": [{"start": 0, "end": 4, "kind": "effect",'
            b' "entries": ["effect:another-runs-draft"]}]}',
            422,
            "unknown_entry",
        ),
        (b'{"text": "Done.", "claim_map": {"x": 1}}', 400, "bad_claim_map"),
        (orjson.dumps({"text": "x" * 60_001}), 413, "text over"),
    ],
)
def test_bad_input_is_one_clear_error(pair: Any, body: bytes, status: int, says: str) -> None:
    owner, _, _ = pair
    request = (
        b"POST /v1/runs/run-five-files/check HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        b"Authorization: Bearer " + TOKEN.encode() + b"\r\n"
        b"Content-Type: application/json\r\nContent-Length: " + str(len(body)).encode() + b"\r\n"
        b"\r\n" + body
    )
    head, _, answer = _raw(owner.url, request).partition(b"\r\n\r\n")
    assert head.startswith(f"HTTP/1.1 {status}".encode()), head
    (line,) = answer.strip().splitlines()
    assert says in orjson.loads(line)["error"]


def test_a_run_nobody_folded_is_404_and_not_judged(pair: Any) -> None:
    owner, _, _ = pair
    with pytest.raises(GateRefused) as err:
        GateClient(owner.url, token=TOKEN).check_answer("no-such-run", "All tests pass.")
    assert err.value.status == 404 and "no_run" in err.value.message


def test_an_owner_that_cannot_be_reached_is_503_and_forgotten(pair: Any) -> None:
    _, other, owner_url = pair
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        owner_url[0] = f"http://127.0.0.1:{sock.getsockname()[1]}"
        with pytest.raises(Exception, match="503"):
            GateClient(other.url, token=TOKEN).check_answer(RUN, "Done.")
    assert other.forgot == 1


def test_a_forwarded_check_is_never_forwarded_again(pair: Any) -> None:
    _, other, _ = pair
    body = b'{"text": "Done."}'
    request = (
        b"POST /v1/runs/r/check HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer "
        + TOKEN.encode()
        + b"\r\nX-Outcomes-Forwarded: 1\r\nContent-Length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
        + body
    )
    head, _, _ = _raw(other.url, request).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503")


def test_the_token_is_made_once_and_read_by_local_callers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OUTCOMES_GATE_TOKEN", raising=False)
    assert read_token(tmp_path, "app") is None
    made = gate_token(tmp_path, "app")
    assert gate_token(tmp_path, "app") == made == read_token(tmp_path, "app")
    assert (tmp_path / "worker" / "app" / "gate-token").stat().st_mode & 0o777 == 0o600
    monkeypatch.setenv("OUTCOMES_GATE_TOKEN", "from-env")
    assert gate_token(tmp_path, "app") == read_token(tmp_path, "app") == "from-env"
