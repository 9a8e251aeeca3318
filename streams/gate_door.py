"""The gate behind the worker's HTTP door: `POST /v1/runs/{run_id}/check` (SPEC 8).

Any worker of an app answers a check. The one that owns the run's run-log partition
queues it on its `GateDesk` (streams/gate.py), where the poll loop judges it once the
fold has reached the caller's position; any other forwards it once to the owner its
group's description names (streams/gate_members.py) and relays the answer. A check that
cannot reach an owner in time is `503` with one line, which a caller with a budget takes
as "unchecked" (SPEC 8, failing open).

The door's rules hold: the bearer token is checked before the body is read, the body is
bounded in size and time, errors are one JSON line, nothing from the request is echoed
in a header. The token is `OUTCOMES_GATE_TOKEN` when set, else a random one the worker
writes to `<state_dir>/worker/<app_id>/gate-token` (mode 0600), where local callers (the
CLI, the Claude Code hook) read it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hmac
import http.client
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from outcomes.common import door
from outcomes.common.door import Component, Limits, Refusal
from outcomes.reducers.gate import MAX_TEXT_CHARS, GateInputError
from outcomes.streams.gate import (
    MAX_POSITION_EVENTS,
    CheckRequest,
    GateBusy,
    GateDesk,
    GateFailure,
    answer_json,
)

# A check's body: the text (up to 60,000 characters, 4 bytes each at worst), a claim map
# and a position of up to 10,000 ids.
BODY_LIMITS = Limits(max_body_bytes=2 * 1024 * 1024, body_seconds=10.0)
MAX_WAIT_SECONDS = 30.0
DEFAULT_WAIT_SECONDS = 2.0
FORWARDED = "x-outcomes-forwarded"  # set on a forwarded check: it is never forwarded again
MAX_RUN_ID_CHARS = 256


def token_path(state_dir: Path, app_id: str) -> Path:
    return state_dir / "worker" / app_id / "gate-token"


def gate_token(state_dir: Path, app_id: str) -> str:
    """The token checks must present: `OUTCOMES_GATE_TOKEN`, else the worker's own,
    made once and kept in its state folder."""
    configured = os.environ.get("OUTCOMES_GATE_TOKEN")
    if configured:
        return configured
    path = token_path(state_dir, app_id)
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(token + "\n")
    return token


def read_token(state_dir: Path, app_id: str) -> str | None:
    """The token a local caller presents: `OUTCOMES_GATE_TOKEN`, else the worker's file."""
    configured = os.environ.get("OUTCOMES_GATE_TOKEN")
    if configured:
        return configured
    try:
        return token_path(state_dir, app_id).read_text().strip() or None
    except OSError:
        return None


@dataclass
class GateHost:
    """What the door needs of its worker: its desk, whether it owns a run, and the door
    of the worker that does (None when no member of the group holds the partition)."""

    desk: GateDesk
    token: str
    owns: Callable[[str], bool]
    owner_url: Callable[[str], str | None]
    forget_owners: Callable[[], None]


def _bearer(request: Request) -> str | None:
    value = request.headers.get("authorization", "")
    return value[7:].strip() if value[:7].lower() == "bearer " else None


def _parse(run_id: str, body: bytes) -> tuple[CheckRequest, float]:
    try:
        raw = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise Refusal(400, f"the body is not JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise Refusal(400, "the body must be a JSON object")
    text = raw.get("text")
    if not isinstance(text, str) or not text.strip():
        raise Refusal(400, "text must be a non-empty string")
    if len(text) > MAX_TEXT_CHARS:
        raise Refusal(413, f"text over {MAX_TEXT_CHARS} characters")
    position = raw.get("position", [])
    if not isinstance(position, list) or not all(isinstance(p, str) for p in position):
        raise Refusal(400, "position must be a list of event ids")
    if len(position) > MAX_POSITION_EVENTS:
        raise Refusal(413, f"position over {MAX_POSITION_EVENTS} event ids")
    attempt = raw.get("attempt", 1)
    if type(attempt) is not int or not 1 <= attempt <= 100:
        raise Refusal(400, "attempt must be a whole number from 1")
    chain_id = raw.get("chain_id")
    if chain_id is not None and (not isinstance(chain_id, str) or not 0 < len(chain_id) <= 128):
        raise Refusal(400, "chain_id must be a string of 1 to 128 characters")
    wait = raw.get("wait_seconds", DEFAULT_WAIT_SECONDS)
    if not isinstance(wait, int | float) or isinstance(wait, bool) or not wait >= 0:
        raise Refusal(400, "wait_seconds must be a non-negative number")
    wait = min(float(wait), MAX_WAIT_SECONDS)
    request = CheckRequest(
        run_id=run_id,
        text=text,
        claim_map=raw.get("claim_map"),
        position=tuple(position),
        attempt=attempt,
        chain_id=chain_id,
        deadline=float("inf"),  # set when it is queued, on the desk's clock
    )
    return request, wait


def _forward(url: str, run_id: str, body: bytes, token: str, seconds: float) -> tuple[int, bytes]:
    """The check sent once to the owner's door; its status and body."""
    parts = urlsplit(url)
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = cls(parts.hostname or "127.0.0.1", parts.port, timeout=seconds)
    try:
        conn.request(
            "POST",
            f"/v1/runs/{quote(run_id, safe='')}/check",
            body=body,
            headers={
                "Content-Type": "application/json",
                "Authorization": f"Bearer {token}",
                FORWARDED: "1",
            },
        )
        response = conn.getresponse()
        return response.status, response.read(BODY_LIMITS.max_body_bytes)
    finally:
        conn.close()


def gate_component(host: GateHost, now: Callable[[], float] = time.monotonic) -> Component:
    """The gate's route, to mount behind the worker's door (`now`: the desk's clock)."""

    async def check(request: Request) -> Response:
        supplied = _bearer(request)
        if supplied is None:
            raise Refusal(401, "a bearer token is required", {"WWW-Authenticate": "Bearer"})
        if not hmac.compare_digest(supplied.encode(), host.token.encode()):
            raise Refusal(403, "the token is not the gate's")
        run_id = request.path_params["run_id"]
        if not run_id or len(run_id) > MAX_RUN_ID_CHARS:
            raise Refusal(400, f"a run id has 1 to {MAX_RUN_ID_CHARS} characters")
        body = await door.read_body(request, BODY_LIMITS)
        parsed, wait = _parse(run_id, body)
        if not host.owns(run_id):
            if request.headers.get(FORWARDED):
                raise Refusal(503, "this worker does not own the run (its partition is moving)")
            return await _relay(run_id, body, wait)
        queued = dataclasses.replace(parsed, deadline=now() + wait)
        try:
            pending = host.desk.submit(queued)
        except GateBusy as exc:
            raise Refusal(429, str(exc), {"Retry-After": "1"}) from None
        outcome = await asyncio.to_thread(pending.wait, wait + 1.0)
        if outcome is None:
            raise Refusal(503, "the worker's loop did not answer the check in time")
        if isinstance(outcome, GateFailure):
            raise Refusal(500, f"the check could not be made: {outcome}")
        if isinstance(outcome, GateInputError):
            status = {"unknown_entry": 422, "no_run": 404}.get(outcome.code, 400)
            raise Refusal(status, str(outcome))
        answer = orjson.dumps(answer_json(outcome, run_id)) + b"\n"
        return Response(answer, 200, media_type="application/json")

    async def _relay(run_id: str, body: bytes, wait: float) -> Response:
        url = host.owner_url(run_id)
        if url is None:
            raise Refusal(503, "no worker of the group holds this run's partition yet")
        try:
            status, answer = await asyncio.to_thread(
                _forward, url, run_id, body, host.token, wait + 2.0
            )
        except OSError as exc:
            host.forget_owners()
            raise Refusal(503, f"the run's owner did not answer: {exc}") from None
        if status == 503:
            host.forget_owners()
        return Response(answer, status, media_type="application/json")

    return Component([Route("/v1/runs/{run_id}/check", check, methods=["POST"])], name="gate")
