"""Ask the pre-display gate before showing an answer (SPEC 8), from an agent runtime.

`GateClient.check_answer` sends one check to a worker's door and returns its `Checked`
answer: `pass`, `repair` (with the instruction and the state block), `contain` (with
the text to show instead) or `stale` (the fold had not reached the caller's position in
time: no verdict). `gated_answer` runs the whole loop around two callables the runtime
supplies, generate and repair: generate → check → repair once → re-check → contain, and
fails open: a gate that does not answer within the budget (no worker, no broker, stale)
leaves the answer shown unchecked, and says so (`Shown.checked` is False), never passed.

Standard library HTTP only (the SDK installs without the pipeline's packages). No model
client is bundled: the callables are the runtime's own.
"""

from __future__ import annotations

import http.client
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote, urlsplit

import orjson

from outcomes.streams.sdk.uuid7 import uuid7

Decision = Literal["pass", "repair", "contain", "stale"]
DEFAULT_BUDGET = 3.0  # seconds a whole check may take, as a Claude Code Stop hook allows
MAX_ANSWER_BYTES = 4 * 1024 * 1024  # a check's answer is read up to this


class GateUnavailable(Exception):
    """No answer from the gate within the budget (connection refused, timed out, a
    5xx, an answer that is not the gate's): the caller fails open."""


class GateRefused(Exception):
    """The gate refused the request (4xx): a bad claim map, no such run, no credential.
    `status` is the HTTP status, `message` the gate's one line."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


@dataclass(frozen=True, slots=True)
class Checked:
    """A check's answer, as the gate sent it (`body`), with its common fields."""

    decision: Decision
    body: Mapping[str, Any]

    @property
    def instruction(self) -> str | None:
        return self.body.get("instruction")

    @property
    def appendix(self) -> str | None:
        return self.body.get("appendix")

    @property
    def contained(self) -> str | None:
        return self.body.get("contained")

    @property
    def state_block(self) -> str | None:
        return self.body.get("state_block")

    @property
    def contradicted(self) -> list[Mapping[str, Any]]:
        return [c for c in self.body.get("claims") or () if c.get("verdict") == "contradicted"]


class GateClient:
    """One worker door's gate endpoint (`http://host:port`), with an optional bearer token."""

    def __init__(self, url: str, token: str | None = None, budget: float = DEFAULT_BUDGET) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"gate URL must be http(s)://host[:port], not {url!r}")
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.prefix = parts.path.rstrip("/")
        self.token = token
        self.budget = budget

    def check_answer(
        self,
        run_id: str,
        text: str,
        *,
        claim_map: Sequence[Mapping[str, Any]] | None = None,
        position: Sequence[str] = (),
        attempt: int = 1,
        chain_id: str | None = None,
        budget: float | None = None,
    ) -> Checked:
        """One check. The gate waits for the fold to reach `position` (the ids of the
        events this caller published to the run) for at most the budget, less a margin
        for the answer to come back."""
        seconds = self.budget if budget is None else budget
        body = {
            "text": text,
            "claim_map": list(claim_map) if claim_map is not None else None,
            "position": list(position),
            "attempt": attempt,
            "chain_id": chain_id,
            "wait_seconds": max(0.0, seconds * 0.8),
        }
        path = f"{self.prefix}/v1/runs/{quote(run_id, safe='')}/check"
        status, answer = self._post(path, orjson.dumps(body), seconds)
        if 400 <= status < 500:
            raise GateRefused(status, str(answer.get("error", "refused")))
        decision = answer.get("decision")
        if status != 200 or decision not in ("pass", "repair", "contain", "stale"):
            raise GateUnavailable(f"the gate answered {status} {str(answer)[:200]}")
        return Checked(decision, answer)

    def _post(self, path: str, payload: bytes, seconds: float) -> tuple[int, dict[str, Any]]:
        deadline = time.monotonic() + seconds
        cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
        conn = cls(self.host, self.port, timeout=seconds)
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        try:
            conn.request("POST", path, body=payload, headers=headers)
            conn.sock.settimeout(max(0.01, deadline - time.monotonic()))
            response = conn.getresponse()
            raw = response.read(MAX_ANSWER_BYTES + 1)
        except (OSError, http.client.HTTPException) as exc:
            where = f"{self.host}:{self.port}"
            raise GateUnavailable(f"no answer from the gate at {where}: {exc}") from exc
        finally:
            conn.close()
        if time.monotonic() > deadline:
            raise GateUnavailable(f"the gate answered after the {seconds:.1f} s budget")
        if len(raw) > MAX_ANSWER_BYTES:
            raise GateUnavailable("the gate's answer is larger than an answer can be")
        try:
            answer = orjson.loads(raw) if raw else {}
        except orjson.JSONDecodeError:
            raise GateUnavailable(f"the gate answered {response.status} with no JSON") from None
        if not isinstance(answer, dict):
            raise GateUnavailable(f"the gate answered {response.status} with no JSON object")
        return response.status, answer


@dataclass(frozen=True, slots=True)
class Shown:
    """What the runtime shows, and how it got there.

    `decision` is the last check's (`pass`, `contain`) or `unchecked` when the gate gave
    no usable answer in time (`why` says what happened); `attempts` counts the checks
    made; `appendix` is what the account adds to a passed answer (show it with it)."""

    text: str
    decision: Literal["pass", "contain", "unchecked"]
    attempts: int
    checked: bool
    appendix: str | None = None
    why: str | None = None


def gated_answer(
    client: GateClient,
    run_id: str,
    generate: Callable[[], str],
    repair: Callable[[str, str], str],
    *,
    position: Callable[[], Sequence[str]] | Sequence[str] = (),
    chain_id: str | None = None,
) -> Shown:
    """generate → check → repair once → re-check → contain (SPEC 8).

    `repair(instruction, state_block)` returns the repaired answer; `position` is the
    caller's position (or a callable giving it at each check, so a repair's own events
    count). A `GateRefused` (the request itself is wrong) propagates: that is a bug of
    the caller's, not a reason to show anything unchecked."""

    def where() -> Sequence[str]:
        return position() if callable(position) else position

    chain = chain_id or str(uuid7())
    text = generate()
    attempt = 1
    while True:
        try:
            checked = client.check_answer(
                run_id, text, position=where(), attempt=attempt, chain_id=chain
            )
        except GateUnavailable as exc:
            return Shown(text, "unchecked", attempt - 1, False, why=str(exc))
        if checked.decision == "stale":
            return Shown(text, "unchecked", attempt, False, why="the account was not current")
        if checked.decision == "pass":
            return Shown(text, "pass", attempt, True, appendix=checked.appendix)
        if checked.decision == "contain":
            return Shown(checked.contained or "", "contain", attempt, True)
        if attempt > 1:  # a gate that asks twice is not keeping SPEC 8: do not loop on it
            return Shown(text, "unchecked", attempt, False, why="the gate asked for a 2nd repair")
        text = repair(checked.instruction or "", checked.state_block or "")
        attempt += 1
