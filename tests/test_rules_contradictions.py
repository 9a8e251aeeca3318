"""SPEC 3.6: every contradiction kind, kept with all its evidence."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from tests.builders import (
    Event,
    RunBuilder,
    account_of,
    action,
    artifact,
    contradictions,
    verdict,
)


def _evidence_ids(contradiction: Mapping[str, Any]) -> list[str]:
    return [e["event_id"] for e in contradiction["evidence"]]


def _entry(event: Event, value: str) -> dict[str, str]:
    return {"event_id": event["event_id"], "value": value, "occurred_at": event["occurred_at"]}


def test_effect_receipts_disagree_keeps_every_authoritative_receipt() -> None:
    b = RunBuilder()
    present = b.effect_receipt(observed="present")
    failed = b.effect_receipt(observed="failed")
    absent = b.effect_receipt(observed="absent")
    account = account_of([b.goal(), b.effect_intent(), present, failed, absent, b.finalize(None)])
    assert contradictions(account) == [
        {
            "subject": "effect:fx-1",
            "kind": "effect_receipts_disagree",
            "evidence": [
                _entry(present, "present"),
                _entry(failed, "failed"),
                _entry(absent, "absent"),
            ],
        }
    ]


def test_action_outcome_conflict_makes_the_action_indeterminate() -> None:
    b = RunBuilder()
    ok = b.tool_finished("act-1", "succeeded")
    bad = b.tool_finished("act-1", "failed")
    account = account_of([b.goal(actions=["act-1"]), ok, bad, b.finalize(None)])
    assert action(account, "act-1")["outcome"] == "indeterminate"
    assert verdict(account, "action:act-1") == ("indeterminate", "indeterminate")
    assert contradictions(account) == [
        {
            "subject": "action:act-1",
            "kind": "action_outcome_conflict",
            "evidence": [_entry(ok, "succeeded"), _entry(bad, "failed")],
        }
    ]


def test_repeated_identical_outcomes_are_not_a_conflict() -> None:
    b = RunBuilder()
    events = [
        b.goal(actions=["act-1"]),
        b.tool_finished("act-1", "succeeded"),
        b.tool_finished("act-1", "succeeded"),
        b.finalize(None),
    ]
    account = account_of(events)
    assert account["contradictions"] == []
    assert verdict(account, "action:act-1") == ("satisfied", "succeeded")


@pytest.mark.parametrize("change", ["deleted", "excluded", "quarantined"])
def test_check_pass_artifact_missing_when_the_candidate_removed_the_path(change: str) -> None:
    b = RunBuilder()
    snap = b.snapshot(artifacts=["src/app.py", artifact("dist/out.whl", change)])
    receipt = b.receipt(expected_artifacts=["dist/out.whl"])
    account = account_of([b.goal(checks=["unit"]), snap, receipt, b.finalize()])
    assert verdict(account, "check:unit") == ("indeterminate", "contradiction")
    [found] = contradictions(account)
    assert (found["subject"], found["kind"]) == ("check:unit", "check_pass_artifact_missing")
    assert set(_evidence_ids(found)) == {receipt["event_id"], snap["event_id"]}
    by_event = {e["event_id"]: e["value"] for e in found["evidence"]}
    assert by_event[receipt["event_id"]] == "pass"
    assert change in by_event[snap["event_id"]]


def test_check_pass_artifact_missing_when_the_receipt_snapshot_listed_the_path() -> None:
    b = RunBuilder()
    own = b.snapshot("snap-1", ["src/app.py", artifact("docs/out.md", "added", sensitive=False)])
    receipt = b.receipt(snapshot="snap-1", expected_artifacts=["docs/out.md"])
    candidate = b.snapshot("snap-2", ["src/app.py"])
    account = account_of([b.goal(checks=["unit"]), own, receipt, candidate, b.finalize("snap-2")])
    assert verdict(account, "check:unit") == ("indeterminate", "contradiction")
    [found] = contradictions(account)
    assert (found["subject"], found["kind"]) == ("check:unit", "check_pass_artifact_missing")
    # All its evidence: the passing receipt, the candidate that lacks the path and the
    # receipt's own snapshot that listed it.
    assert set(_evidence_ids(found)) == {
        receipt["event_id"],
        candidate["event_id"],
        own["event_id"],
    }


def test_expected_artifact_unknown_to_both_snapshots_is_not_a_contradiction() -> None:
    b = RunBuilder()
    events = [
        b.goal(checks=["unit"]),
        b.snapshot(artifacts=["src/app.py"]),
        b.receipt(expected_artifacts=["never/listed.txt"]),
        b.finalize(),
    ]
    account = account_of(events)
    assert account["contradictions"] == []
    assert verdict(account, "check:unit") == ("satisfied", "passing")


def test_non_required_passing_check_with_a_removed_artifact_is_no_contradiction() -> None:
    b = RunBuilder()
    events = [
        b.goal(),
        b.snapshot(artifacts=[artifact("dist/out.whl", "deleted")]),
        b.receipt("lint", expected_artifacts=["dist/out.whl"]),
        b.finalize(),
    ]
    account = account_of(events)
    assert account["contradictions"] == []
    assert account["status"] == "complete"


def test_failing_receipt_with_a_removed_artifact_is_failing_not_a_contradiction() -> None:
    b = RunBuilder()
    events = [
        b.goal(checks=["unit"]),
        b.snapshot(artifacts=[artifact("dist/out.whl", "deleted")]),
        b.receipt(result="fail", expected_artifacts=["dist/out.whl"]),
        b.finalize(),
    ]
    account = account_of(events)
    assert account["contradictions"] == []
    assert verdict(account, "check:unit") == ("unsatisfied", "failing")


def test_snapshot_conflict_makes_the_candidate_predicates_indeterminate() -> None:
    b = RunBuilder()
    first = b.snapshot(artifacts=["out.py"], base_revision="abc")
    second = b.snapshot(artifacts=["out.py", "more.py"], base_revision="abc")
    goal = b.goal(deliverables=["out.py"], target_revision="abc")
    account = account_of([goal, first, second, b.finalize()])
    assert verdict(account, "workspace.sealed") == ("indeterminate", "conflict")
    assert verdict(account, "candidate.target") == ("indeterminate", "unknown")
    assert verdict(account, "deliverable:out.py") == ("indeterminate", "conflict")
    [found] = contradictions(account)
    assert (found["subject"], found["kind"]) == ("snapshot:snap-1", "snapshot_conflict")
    assert _evidence_ids(found) == [first["event_id"], second["event_id"]]
    assert [e["occurred_at"] for e in found["evidence"]] == [
        first["occurred_at"],
        second["occurred_at"],
    ]
    values = [e["value"] for e in found["evidence"]]
    assert values[0] != values[1]
    assert account["status"] == "unresolved"


def test_snapshot_conflict_on_base_revision_alone() -> None:
    b = RunBuilder()
    events = [
        b.goal(),
        b.snapshot(base_revision="abc"),
        b.snapshot(base_revision="def"),
        b.finalize(),
    ]
    [found] = contradictions(account_of(events))
    assert (found["subject"], found["kind"]) == ("snapshot:snap-1", "snapshot_conflict")


def test_snapshot_conflict_is_listed_even_when_not_the_candidate() -> None:
    b = RunBuilder()
    events = [
        b.goal(deliverables=["out.py"]),
        b.snapshot("snap-1", ["out.py"]),
        b.snapshot("snap-1", ["other.py"]),
        b.snapshot("snap-2", ["out.py"]),
        b.finalize("snap-2"),
    ]
    account = account_of(events)
    assert [c["subject"] for c in contradictions(account, "snapshot_conflict")] == [
        "snapshot:snap-1"
    ]
    assert verdict(account, "workspace.sealed") == ("satisfied", "sealed")
    assert verdict(account, "deliverable:out.py") == ("satisfied", "modified")


def test_sealing_an_unsealed_snapshot_is_not_a_conflict() -> None:
    b = RunBuilder()
    events = [
        b.goal(deliverables=["out.py"]),
        b.snapshot(artifacts=["out.py"], sealed=False),
        b.snapshot(artifacts=["out.py"], sealed=True),
        b.finalize(),
    ]
    account = account_of(events)
    assert account["contradictions"] == []
    assert verdict(account, "workspace.sealed") == ("satisfied", "sealed")
    assert verdict(account, "deliverable:out.py") == ("satisfied", "modified")


def test_a_later_unsealed_report_never_unseals_a_snapshot() -> None:
    b = RunBuilder()
    events = [
        b.goal(),
        b.snapshot(artifacts=["out.py"], sealed=True),
        b.finalize(),
        b.snapshot(artifacts=["out.py"], sealed=False),
    ]
    account = account_of(events)
    assert account["contradictions"] == []
    assert verdict(account, "workspace.sealed") == ("satisfied", "sealed")


def test_contradictions_are_sorted_by_subject_then_kind() -> None:
    b = RunBuilder()
    events = [
        b.goal(),
        b.effect_receipt("fx-1", "present"),
        b.effect_receipt("fx-1", "absent"),
        b.tool_finished("act-1", "succeeded"),
        b.tool_finished("act-1", "failed"),
        b.snapshot(base_revision="a"),
        b.snapshot(base_revision="b"),
        b.finalize(None),
    ]
    subjects = [c["subject"] for c in account_of(events)["contradictions"]]
    assert subjects == ["action:act-1", "effect:fx-1", "snapshot:snap-1"]
