"""The pre-display gate in the worker (SPEC 8): checks answered from the fold's own state.

A check names a run, a candidate answer and a position: the ids of the events its caller
had published to the run when it asked (the producer SDK keeps them). The worker that
owns the run's run-log partition holds the run's state, so the check is answered there,
between two batches of the worker's poll loop, when no fold is under way:

- `GateDesk.submit` (any thread: the HTTP door's) queues a check and returns a `Pending`
  to wait on;
- `GateDesk.serve` (the worker's loop, with a `lookup` of the runs it owns) answers every
  queued check whose position the run has reached, judged by `outcomes.reducers.gate`
  against the run's latest revision (or, before the first one, the account its events
  make now); a check whose deadline passed first is answered `stale` with how much of
  the position was reached, never with a verdict on an older account.

Nothing here blocks the loop: `serve` judges only checks that are ready and returns.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from outcomes.common.text import terminal_safe
from outcomes.reducers.account import assemble
from outcomes.reducers.gate import GateInputError, GateResult, check, parse_claim_map
from outcomes.reducers.state import RunState

# A position names at most this many events (the SDK drops the ids a check confirmed).
MAX_POSITION_EVENTS = 10_000
# Checks waiting at once in one worker; past it a new check is refused (429 at the door).
MAX_PENDING = 1_000

log = logging.getLogger("outcomes.worker.gate")


class GateBusy(Exception):
    """Too many checks are waiting in this worker: try again shortly."""


@dataclass(frozen=True, slots=True)
class CheckRequest:
    """One check as the door received it (already size-checked)."""

    run_id: str
    text: str
    claim_map: object  # the raw JSON claim map, or None
    position: tuple[str, ...]
    attempt: int
    chain_id: str | None
    deadline: float  # time.monotonic() by which it is answered


@dataclass(frozen=True, slots=True)
class Stale:
    """The fold did not reach the position in time: no verdict."""

    reached: int
    wanted: int
    missing: tuple[str, ...]  # a few of the ids not reached yet, for the caller's log


class GateFailure(Exception):
    """The check could not be made (the run's stored events unreadable, or a bug); the
    door answers 500 with this one line, and the worker's loop goes on."""


Outcome = GateResult | Stale | GateInputError | GateFailure


@dataclass
class Pending:
    """A queued check; `wait` returns its outcome once the worker's loop gave it."""

    request: CheckRequest
    done: threading.Event = field(default_factory=threading.Event)
    outcome: Outcome | None = None

    def resolve(self, outcome: Outcome) -> None:
        self.outcome = outcome
        self.done.set()

    def wait(self, timeout: float) -> Outcome | None:
        return self.outcome if self.done.wait(timeout) else None


Lookup = Callable[[str], RunState | None]


def account_now(state: RunState) -> Mapping[str, Any] | None:
    """What the gate judges against: the run's latest revision, or before its first one
    the account its applied events make now (None when they make none yet)."""
    if state.revisions:
        return state.revisions[-1]
    return assemble(state) if state.events else None


def position_reached(state: RunState | None, position: Sequence[str]) -> tuple[int, list[str]]:
    """(how many of the position's events the run has applied, the ids still missing)."""
    if state is None:
        return 0, list(position)
    missing = [i for i in position if i not in state.events]
    return len(position) - len(missing), missing


def judge(state: RunState | None, request: CheckRequest) -> GateResult | GateInputError:
    """The check itself, on a state that has reached the request's position. A run of
    which this worker holds nothing (no event ever applied) is no run to check: an
    error, and nothing recorded."""
    if state is None or not state.events:
        return GateInputError("no_run", f"no run {request.run_id!r}: no event of it was folded")
    account = account_now(state)
    try:
        claim_map = parse_claim_map(request.claim_map, request.text)
        return check(account, request.text, claim_map, request.attempt)
    except GateInputError as exc:
        return exc


Record = Callable[[CheckRequest, GateResult], None]


class GateDesk:
    """The queue of checks between the door's threads and the worker's loop. `record`
    (the worker's: an `answer.checked` event of the run, SPEC 8 "Record") is called in
    the loop for every check it judged."""

    def __init__(
        self, clock: Callable[[], float] = time.monotonic, record: Record | None = None
    ) -> None:
        self._lock = threading.Lock()
        self._pending: list[Pending] = []
        self._clock = clock
        self.record = record

    def __len__(self) -> int:
        with self._lock:
            return len(self._pending)

    def submit(self, request: CheckRequest) -> Pending:
        pending = Pending(request)
        with self._lock:
            if len(self._pending) >= MAX_PENDING:
                raise GateBusy(f"{len(self._pending)} checks are waiting in this worker")
            self._pending.append(pending)
        return pending

    def serve(self, lookup: Lookup) -> int:
        """Answer every queued check that is ready or past its deadline; returns how many
        were answered. Called from the loop that owns the states `lookup` returns."""
        with self._lock:
            queued, self._pending = self._pending, []
        now = self._clock()
        keep: list[Pending] = []
        answered = 0
        for pending in queued:
            request = pending.request
            try:
                state = lookup(request.run_id)
                reached, missing = position_reached(state, request.position)
                if missing and now < request.deadline:
                    keep.append(pending)
                    continue
                if missing:
                    outcome: Outcome = Stale(reached, len(request.position), tuple(missing[:5]))
                else:
                    outcome = judge(state, request)
                    if isinstance(outcome, GateResult) and self.record is not None:
                        self.record(request, outcome)
            except Exception as exc:  # a bug or an unreadable run: this check, not the loop
                log.exception("gate check of run %s failed", terminal_safe(request.run_id))
                outcome = GateFailure(f"{type(exc).__name__}: {exc}")
            pending.resolve(outcome)
            answered += 1
        if keep:
            with self._lock:
                self._pending[:0] = keep
        return answered


Decision = Literal["pass", "repair", "contain", "stale"]


def answer_json(outcome: GateResult | Stale, run_id: str) -> dict[str, Any]:
    """The JSON a check answers with (the door's, the SDK's and the CLI's shape)."""
    if isinstance(outcome, Stale):
        return {
            "run_id": run_id,
            "decision": "stale",
            "position": {"reached": outcome.reached, "wanted": outcome.wanted},
            "missing": list(outcome.missing),
        }
    return {
        "run_id": run_id,
        "decision": outcome.decision,
        "revision": outcome.revision,
        "counts": outcome.counts(),
        "claims": [_claim(c) for c in outcome.claims],
        "omissions": [_claim(c) for c in outcome.omissions],
        "instruction": outcome.instruction,
        "appendix": outcome.appendix,
        "contained": outcome.contained,
        "state_block": outcome.state_block,
    }


def _claim(c: Any) -> dict[str, Any]:
    return {
        "key": c.key,
        "kind": c.kind,
        "verdict": c.verdict,
        "reason": c.reason,
        "source": c.source,
        "span": [c.start, c.end] if c.start is not None else None,
        "text": c.text,
        "entries": list(c.entries),
        "supported": c.supported,
    }
