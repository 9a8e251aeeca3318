"""SPEC 3.1: when revisions are made, what they judge, and their bookkeeping fields."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from outcomes.reducers.errors import InvalidEvent
from tests.builders import (
    Event,
    Replay,
    RunBuilder,
    effect,
    fold_events,
    of_kind,
    ts,
    verdict,
)

BOOKKEEPING = ("revision", "supersedes", "trigger_event_id", "changes", "revision_id")


def _content(account: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in account.items() if k not in BOOKKEEPING}


def test_no_account_before_finalize_cancel_or_interrupt() -> None:
    b = RunBuilder()
    outputs, account = fold_events(
        [
            b.run_started(),
            b.goal(checks=["unit"]),
            b.snapshot(),
            b.receipt(),
            b.disposition("completed"),
            b.review("pass"),
        ]
    )
    assert account is None
    assert of_kind(outputs, "notification") == []


def test_finalize_naming_an_unknown_snapshot_waits_for_it_sealed() -> None:
    b = RunBuilder()
    replay = Replay()
    replay.apply(b.goal(), b.finalize("snap-1"))
    assert replay.account is None
    snap = b.snapshot("snap-1", sealed=True)
    replay.apply(snap)
    account = replay.account
    assert account is not None
    assert (account["revision"], account["candidate_snapshot"]) == (1, "snap-1")
    assert account["trigger_event_id"] == snap["event_id"]


def test_finalize_naming_an_unsealed_snapshot_waits_until_it_is_sealed() -> None:
    b = RunBuilder()
    replay = Replay()
    replay.apply(b.goal(), b.snapshot("snap-1", ["a.py"], sealed=False), b.finalize("snap-1"))
    assert replay.account is None
    replay.apply(b.snapshot("snap-1", ["a.py"], sealed=True))
    account = replay.account
    assert account is not None
    assert account["candidate_snapshot"] == "snap-1"
    assert verdict(account, "workspace.sealed") == ("satisfied", "sealed")
    assert account["contradictions"] == []


def test_finalize_without_a_workspace_is_ready_at_once() -> None:
    b = RunBuilder()
    finalize = b.finalize(None)
    _, account = fold_events([b.goal(), finalize])
    assert account is not None
    assert (account["candidate_snapshot"], account["trigger_event_id"]) == (
        None,
        finalize["event_id"],
    )
    assert account["workflow_status"] == "finalized"


def test_candidate_is_the_latest_ready_request() -> None:
    b = RunBuilder()
    events = [
        b.goal(),
        b.snapshot("snap-1"),
        b.snapshot("snap-2"),
        b.finalize("snap-2", at=20),
        b.finalize("snap-1", at=10),
    ]
    _, account = fold_events(events)
    assert account is not None
    assert account["candidate_snapshot"] == "snap-2"


def test_a_newer_request_that_is_not_ready_keeps_the_current_candidate() -> None:
    b = RunBuilder()
    replay = Replay()
    replay.apply(b.goal(), b.snapshot("snap-1"), b.finalize("snap-1"))
    caused = replay.apply(b.finalize("snap-2"), b.snapshot("snap-2", sealed=False))
    assert of_kind(caused, "account_revision") == []
    assert replay.account is not None and replay.account["candidate_snapshot"] == "snap-1"
    replay.apply(b.snapshot("snap-2", sealed=True))
    assert replay.account["candidate_snapshot"] == "snap-2"
    assert replay.account["revision"] == 2


def test_cancel_makes_a_revision_at_once_with_the_latest_snapshot_even_unsealed() -> None:
    b = RunBuilder()
    events = [
        b.goal(),
        b.snapshot("snap-2", sealed=True, at=5),
        b.snapshot("snap-3", sealed=False, at=9),
        b.snapshot("snap-1", sealed=True, at=2),
    ]
    cancel = b.cancelled("user stopped")
    _, account = fold_events([*events, cancel])
    assert account is not None
    assert (account["revision"], account["trigger_event_id"]) == (1, cancel["event_id"])
    assert account["candidate_snapshot"] == "snap-3"
    assert verdict(account, "workspace.sealed") == ("unsatisfied", "unsealed")
    assert account["workflow_status"] == "cancelled"


def test_interrupt_without_any_snapshot_has_no_candidate() -> None:
    b = RunBuilder()
    _, account = fold_events([b.goal(), b.interrupted("node lost")])
    assert account is not None
    assert (account["candidate_snapshot"], account["workflow_status"]) == (None, "interrupted")


def test_cancel_keeps_the_candidate_of_a_ready_finalize() -> None:
    b = RunBuilder()
    events = [
        b.goal(),
        b.snapshot("snap-1"),
        b.finalize("snap-1"),
        b.snapshot("snap-2", sealed=False),
        b.cancelled(),
    ]
    _, account = fold_events(events)
    assert account is not None
    assert (account["candidate_snapshot"], account["workflow_status"]) == ("snap-1", "cancelled")


@pytest.mark.parametrize(
    ("closers", "expected"),
    [
        (("finalize",), "finalized"),
        (("finalize", "interrupted"), "interrupted"),
        (("interrupted", "cancelled"), "cancelled"),
        (("cancelled", "interrupted", "finalize"), "cancelled"),
    ],
)
def test_workflow_status_cancelled_beats_interrupted_beats_finalized(
    closers: tuple[str, ...], expected: str
) -> None:
    b = RunBuilder()
    make = {"finalize": lambda: b.finalize(None), "interrupted": b.interrupted}
    make["cancelled"] = b.cancelled
    _, account = fold_events([b.goal(), *(make[c]() for c in closers)])
    assert account is not None
    assert account["workflow_status"] == expected


def test_effects_are_tracked_after_cancellation() -> None:
    b = RunBuilder()
    replay = Replay()
    replay.apply(
        b.goal(effects=["fx-1"]),
        b.effect_intent("fx-1"),
        b.effect_transition("fx-1", "unknown"),
        b.cancelled(),
    )
    first = replay.account
    assert first is not None and effect(first, "fx-1")["unresolved"] is True
    receipt = b.effect_receipt("fx-1", "present")
    caused = replay.apply(receipt)
    [second] = of_kind(caused, "account_revision")
    assert (second["revision"], second["trigger_event_id"]) == (2, receipt["event_id"])
    assert effect(second, "fx-1")["state"] == "completed"
    assert verdict(second, "effect:fx-1") == ("satisfied", "completed")
    assert second["workflow_status"] == "cancelled"


def test_redelivery_makes_no_revision_and_no_output() -> None:
    b = RunBuilder()
    receipt = b.effect_receipt()
    replay = Replay()
    replay.apply(b.goal(), b.finalize(None), receipt)
    assert replay.apply(receipt) == []
    assert len(replay.accounts) == 2


@pytest.mark.parametrize("helper", ["run_started", "narrative", "retrieval"])
def test_events_that_change_no_content_make_no_revision(helper: str) -> None:
    b = RunBuilder()
    replay = Replay()
    replay.apply(b.goal(), b.finalize(None))
    caused = replay.apply(getattr(b, helper)())
    assert of_kind(caused, "account_revision") == []
    assert of_kind(caused, "notification") == []


def test_revisions_are_consecutive_and_name_what_changed() -> None:
    b = RunBuilder()
    replay = Replay()
    replay.apply(b.goal(checks=["unit"]), b.snapshot(), b.finalize())
    replay.apply(b.receipt(result="indeterminate"))
    replay.apply(b.review("fail"))
    replay.apply(b.receipt(result="pass"))
    accounts = replay.accounts
    assert [(a["revision"], a["supersedes"]) for a in accounts] == [
        (1, None),
        (2, 1),
        (3, 2),
        (4, 3),
    ]
    assert [a["revision_id"] for a in accounts] == ["run-1:1", "run-1:2", "run-1:3", "run-1:4"]
    assert accounts[0]["changes"] == []
    assert [a["status"] for a in accounts] == ["failed", "unresolved", "unresolved", "complete"]
    assert {"status", "predicates", "checks"} <= set(accounts[1]["changes"])
    assert not {"artifacts", "effects", "contradictions"} & set(accounts[1]["changes"])
    assert "dimensions" in accounts[2]["changes"]
    assert not {"status", "predicates", "checks"} & set(accounts[2]["changes"])


def _five_events(b: RunBuilder) -> list[Event]:
    return [
        b.goal(checks=["unit"], effects=["fx-1"]),
        b.snapshot(),
        b.receipt(),
        b.effect_intent("fx-1"),
        b.effect_transition("fx-1", "unknown"),
        b.finalize(),
        b.effect_receipt("fx-1", "present"),
        b.review("pass"),
    ]


def test_same_set_of_events_in_any_order_gives_the_same_account() -> None:
    events = _five_events(RunBuilder())
    _, forward = fold_events(events)
    _, backward = fold_events(list(reversed(events)))
    _, twice = fold_events(events + events[::2])
    assert forward is not None and backward is not None and twice is not None
    assert _content(forward) == _content(backward) == _content(twice)
    assert forward["state_revision"] == backward["state_revision"]


def test_different_sets_of_events_give_different_state_revisions() -> None:
    b = RunBuilder()
    events = _five_events(b)
    _, base = fold_events(events)
    _, more = fold_events([*events, b.disposition("completed")])
    assert base is not None and more is not None
    assert base["state_revision"] != more["state_revision"]
    assert len(base["state_revision"]) == 64


def test_observation_cutoff_is_the_largest_occurred_at() -> None:
    b = RunBuilder()
    events = [b.goal(at=5), b.review("pass", at=40), b.finalize(None, at=10)]
    _, account = fold_events(events)
    assert account is not None
    assert account["observation_cutoff"] == ts(40)


def test_event_id_conflict_is_rejected_and_changes_nothing() -> None:
    b = RunBuilder()
    replay = Replay()
    review = b.review("pass")
    replay.apply(b.goal(), b.finalize(None), review)
    before = replay.account
    assert before is not None
    state = replay.engine.state("run-1")
    applied = dict(state.events)
    forged = {**review, "state": "fail"}
    with pytest.raises(InvalidEvent) as raised:
        replay.apply(forged)
    assert raised.value.reason == "event_id_conflict"
    assert state.events == applied
    assert state.state_revision == before["state_revision"]
    replay.apply(b.disposition("completed"))
    after = replay.account
    assert after is not None
    assert after["dimensions"]["review"] == "pass"
    assert after["revision"] == before["revision"] + 1
