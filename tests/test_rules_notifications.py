"""SPEC 4: which revisions notify, and what a notification carries."""

from __future__ import annotations

from tests.builders import Replay, RunBuilder, of_kind, ts


def test_first_revision_notifies_account_final() -> None:
    b = RunBuilder()
    replay = Replay()
    replay.apply(b.goal(), b.finalize(None, at=7))
    assert replay.notifications == [
        {
            "notification_id": "run-1:1",
            "run_id": "run-1",
            "kind": "account.final",
            "revision": 1,
            "supersedes": None,
            "status": "complete",
            "previous_status": None,
            "completion_automation": True,
            "observation_cutoff": ts(7),
        }
    ]


def test_status_change_notifies_account_superseded_with_previous_status() -> None:
    b = RunBuilder()
    replay = Replay()
    replay.apply(b.goal(checks=["unit"]), b.snapshot(), b.finalize())
    caused = replay.apply(b.receipt(result="pass"))
    [notification] = of_kind(caused, "notification")
    assert notification["notification_id"] == "run-1:2"
    assert (notification["kind"], notification["revision"], notification["supersedes"]) == (
        "account.superseded",
        2,
        1,
    )
    assert (notification["previous_status"], notification["status"]) == ("failed", "complete")
    assert notification["completion_automation"] is True


def test_completion_automation_is_false_unless_complete() -> None:
    b = RunBuilder()
    replay = Replay()
    replay.apply(b.goal(checks=["unit"]), b.snapshot(), b.finalize())
    replay.apply(b.receipt(result="indeterminate"))
    replay.apply(b.receipt(result="fail"))
    statuses = [(n["status"], n["completion_automation"]) for n in replay.notifications]
    assert statuses == [("failed", False), ("unresolved", False), ("failed", False)]


def test_dimension_only_change_makes_a_revision_without_a_notification() -> None:
    b = RunBuilder()
    replay = Replay()
    replay.apply(b.goal(), b.finalize(None))
    caused = replay.apply(b.review("revise"))
    [revision] = of_kind(caused, "account_revision")
    assert (revision["revision"], revision["changes"]) == (2, ["dimensions"])
    assert of_kind(caused, "notification") == []


def test_required_predicate_state_change_notifies_with_the_same_status() -> None:
    b = RunBuilder()
    replay = Replay()
    replay.apply(
        b.goal(checks=["unit"], actions=["act-1"]),
        b.receipt(result="indeterminate"),
        b.finalize(None),
    )
    caused = replay.apply(b.tool_finished("act-1", "succeeded"))
    [revision] = of_kind(caused, "account_revision")
    assert not {"status", "effects", "contradictions"} & set(revision["changes"])
    [notification] = of_kind(caused, "notification")
    assert (notification["previous_status"], notification["status"]) == ("unresolved", "unresolved")


def test_contradiction_change_notifies_with_the_same_status() -> None:
    b = RunBuilder()
    replay = Replay()
    replay.apply(b.goal(), b.tool_finished("side", "succeeded"), b.finalize(None))
    caused = replay.apply(b.tool_finished("side", "failed"))
    [revision] = of_kind(caused, "account_revision")
    assert "contradictions" in revision["changes"]
    [notification] = of_kind(caused, "notification")
    assert (notification["previous_status"], notification["status"]) == ("complete", "complete")


def test_unresolved_effects_change_notifies_with_the_same_status() -> None:
    b = RunBuilder()
    replay = Replay()
    replay.apply(b.goal(), b.effect_intent("side-fx"), b.finalize(None))
    caused = replay.apply(b.effect_receipt("side-fx", "present"))
    [notification] = of_kind(caused, "notification")
    assert (notification["previous_status"], notification["status"]) == ("complete", "complete")


def test_effect_change_that_keeps_it_unresolved_does_not_notify() -> None:
    b = RunBuilder()
    replay = Replay()
    replay.apply(b.goal(), b.effect_intent("side-fx"), b.finalize(None))
    caused = replay.apply(b.effect_transition("side-fx", "active"))
    [revision] = of_kind(caused, "account_revision")
    assert "effects" in revision["changes"]
    assert of_kind(caused, "notification") == []


def test_redelivered_receipt_never_notifies_twice() -> None:
    b = RunBuilder()
    replay = Replay()
    receipt = b.effect_receipt("fx-1", "present")
    replay.apply(b.goal(effects=["fx-1"]), b.effect_intent("fx-1"), b.finalize(None))
    replay.apply(receipt)
    replay.apply(receipt)
    ids = [n["notification_id"] for n in replay.notifications]
    assert ids == ["run-1:1", "run-1:2"]
