"""SPEC 8, read your writes: the worker's gate desk (streams/gate.py) answers a check only
from a state that holds every event of the caller's position, else `stale`."""

from __future__ import annotations

import threading
from typing import Any

from outcomes.reducers.gate import GateInputError, GateResult
from outcomes.streams.gate import (
    CheckRequest,
    GateBusy,
    GateDesk,
    GateFailure,
    Stale,
    answer_json,
    position_reached,
)
from tests.builders import Replay, five_file_events

RUN = "run-five-files"
OVERCLAIM = "All tests pass and the release-notes draft was sent."


def _events() -> list[dict[str, Any]]:
    return five_file_events()


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _request(position: list[str], text: str = OVERCLAIM, **kw: Any) -> CheckRequest:
    fields: dict[str, Any] = {
        "run_id": RUN,
        "text": text,
        "claim_map": None,
        "position": tuple(position),
        "attempt": 1,
        "chain_id": "chain-1",
        "deadline": 101.0,
    }
    fields.update(kw)
    return CheckRequest(**fields)


def _prefix(replay: Replay, upto_type: str) -> list[dict[str, Any]]:
    events = _events()
    last = next(i for i, e in enumerate(events) if e["type"] == upto_type)
    replay.apply(*events[: last + 1])
    return events


def test_a_check_waits_for_its_position_then_is_judged_on_it() -> None:
    replay, clock = Replay(), Clock()
    events = _prefix(replay, "finalize.requested")
    desk = GateDesk(clock)
    late = [e for e in events if e["event_id"] == "run-five-files-14"]  # the rerun
    pending = desk.submit(_request([e["event_id"] for e in events[:3]] + ["run-five-files-14"]))

    assert desk.serve(replay.engine.runs.get) == 0  # the rerun is not folded yet
    assert pending.wait(0) is None and len(desk) == 1

    replay.apply(*late)  # the verification receipt that makes the unit check pass
    assert desk.serve(replay.engine.runs.get) == 1
    outcome = pending.wait(0)
    assert isinstance(outcome, GateResult)
    assert outcome.decision == "repair"  # the draft is still unknown...
    assert [c.text for c in outcome.contradicted] == ["the release-notes draft was sent"]
    assert all(c.verdict == "supported" for c in outcome.claims if c.kind == "verification")


def test_a_position_not_reached_by_the_deadline_is_stale_never_a_verdict() -> None:
    replay, clock = Replay(), Clock()
    _prefix(replay, "finalize.requested")
    desk = GateDesk(clock)
    pending = desk.submit(_request(["run-five-files-01", "never-published"]))
    clock.now = 101.0
    assert desk.serve(replay.engine.runs.get) == 1
    outcome = pending.wait(0)
    assert outcome == Stale(reached=1, wanted=2, missing=("never-published",))
    body = answer_json(outcome, RUN)
    assert body["decision"] == "stale" and "claims" not in body


def test_a_run_the_worker_has_never_seen_is_stale_at_its_deadline() -> None:
    desk = GateDesk(Clock())
    pending = desk.submit(_request(["e1"], deadline=0.0))
    desk.serve(lambda run_id: None)
    assert isinstance(pending.wait(0), Stale)


def test_an_empty_position_is_judged_at_once() -> None:
    replay = Replay()
    _prefix(replay, "finalize.requested")
    desk = GateDesk(Clock())
    pending = desk.submit(_request([]))
    desk.serve(replay.engine.runs.get)
    outcome = pending.wait(0)
    assert isinstance(outcome, GateResult) and outcome.revision == 1


def test_a_bad_claim_map_is_answered_as_an_input_error() -> None:
    replay = Replay()
    _prefix(replay, "finalize.requested")
    desk = GateDesk(Clock())
    bad = [{"start": 0, "end": 3, "kind": "effect", "entries": ["effect:other-runs-draft"]}]
    pending = desk.submit(_request([], claim_map=bad))
    desk.serve(replay.engine.runs.get)
    outcome = pending.wait(0)
    assert isinstance(outcome, GateInputError) and outcome.code == "unknown_entry"


def test_checks_are_answered_across_threads() -> None:
    replay = Replay()
    _prefix(replay, "finalize.requested")
    desk = GateDesk()
    results: list[object] = []

    def ask() -> None:
        pending = desk.submit(_request([], deadline=float("inf")))
        results.append(pending.wait(5))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    while len(results) < 4:
        desk.serve(replay.engine.runs.get)
    for t in threads:
        t.join()
    assert all(isinstance(r, GateResult) and r.decision == "repair" for r in results)


def test_the_desk_refuses_past_its_bound(monkeypatch: Any) -> None:
    monkeypatch.setattr("outcomes.streams.gate.MAX_PENDING", 2)
    desk = GateDesk(Clock())
    desk.submit(_request([]))
    desk.submit(_request([]))
    try:
        desk.submit(_request([]))
    except GateBusy:
        pass
    else:
        raise AssertionError("a third check was queued past the bound")


def test_position_reached_counts_what_the_state_holds() -> None:
    replay = Replay()
    _prefix(replay, "goal.revised")
    state = replay.engine.runs[RUN]
    assert position_reached(state, ["run-five-files-01", "x"]) == (1, ["x"])
    assert position_reached(None, ["a"]) == (0, ["a"])


def test_a_check_that_fails_is_answered_and_the_others_still_are() -> None:
    replay = Replay()
    _prefix(replay, "finalize.requested")
    desk = GateDesk(Clock())
    broken = desk.submit(_request([], run_id="unreadable"))
    fine = desk.submit(_request([]))

    def lookup(run_id: str) -> Any:
        if run_id == "unreadable":
            raise RuntimeError("stored event 3 cannot be read")
        return replay.engine.runs.get(run_id)

    assert desk.serve(lookup) == 2
    failed = broken.wait(0)
    assert isinstance(failed, GateFailure) and "stored event 3" in str(failed)
    assert isinstance(fine.wait(0), GateResult)


def test_a_run_nobody_folded_is_an_error_not_a_verdict() -> None:
    desk = GateDesk(Clock())
    pending = desk.submit(_request([], run_id="never-seen"))
    desk.serve(lambda run_id: None)
    outcome = pending.wait(0)
    assert isinstance(outcome, GateInputError) and outcome.code == "no_run"
