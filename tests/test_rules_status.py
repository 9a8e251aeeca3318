"""SPEC 3.2 status algebra and the goal in force (SPEC 2, `goal.revised`)."""

from __future__ import annotations

from tests.builders import RunBuilder, account_of, artifact, predicate, verdict


def test_run_without_a_goal_is_unresolved() -> None:
    b = RunBuilder()
    account = account_of([b.snapshot(), b.finalize()])
    assert account["goal_revision"] is None
    assert verdict(account, "goal.in_force") == ("indeterminate", "missing")
    assert predicate(account, "goal.in_force")["required"] is True
    assert account["status"] == "unresolved"


def test_goal_in_force_reason_is_its_author() -> None:
    b = RunBuilder()
    goal = b.goal(authored_by="product_rule")
    account = account_of([goal, b.finalize(None)])
    assert verdict(account, "goal.in_force") == ("satisfied", "product_rule")
    assert predicate(account, "goal.in_force")["evidence"] == [goal["event_id"]]


def test_highest_user_or_product_rule_revision_is_in_force() -> None:
    b = RunBuilder()
    events = [
        b.goal(revision=1, deliverables=["a.py"]),
        b.goal(revision=3, deliverables=["c.py"], authored_by="product_rule"),
        b.goal(revision=2, deliverables=["b.py"]),
        b.snapshot(artifacts=["c.py"]),
        b.finalize(),
    ]
    account = account_of(events)
    assert account["goal_revision"] == 3
    assert verdict(account, "deliverable:c.py") == ("satisfied", "modified")
    assert [p["id"] for p in account["predicates"] if p["id"].startswith("deliverable:")] == [
        "deliverable:c.py"
    ]


def test_model_goal_revision_is_a_proposal_that_never_changes_the_goal() -> None:
    b = RunBuilder()
    proposal = b.goal(revision=2, deliverables=["extra.py"], authored_by="model")
    events = [b.goal(revision=1), proposal, b.finalize(None)]
    account = account_of(events)
    assert account["goal_revision"] == 1
    assert account["ignored_goal_proposals"] == [
        {"goal_revision": 2, "event_id": proposal["event_id"]}
    ]
    assert "deliverable:extra.py" not in [p["id"] for p in account["predicates"]]
    assert account["status"] == "complete"


def test_model_goal_alone_leaves_the_run_without_a_goal() -> None:
    b = RunBuilder()
    proposal = b.goal(authored_by="model")
    account = account_of([proposal, b.finalize(None)])
    assert account["goal_revision"] is None
    assert verdict(account, "goal.in_force") == ("indeterminate", "missing")
    assert account["status"] == "unresolved"


def test_complete_when_every_required_predicate_is_satisfied() -> None:
    b = RunBuilder()
    events = [
        b.goal(deliverables=["out.py"], checks=["unit"], effects=["fx-1"], actions=["act-1"]),
        b.snapshot(artifacts=["out.py"]),
        b.receipt(),
        b.effect_receipt("fx-1", "present"),
        b.tool_finished("act-1", "succeeded"),
        b.finalize(),
    ]
    assert account_of(events)["status"] == "complete"


def test_indeterminate_beats_denied() -> None:
    b = RunBuilder()
    events = [
        b.goal(effects=["fx-1"], checks=["unit"]),
        b.effect_transition("fx-1", "denied"),
        b.receipt(result="indeterminate"),
        b.snapshot(),
        b.finalize(),
    ]
    account = account_of(events)
    assert verdict(account, "effect:fx-1") == ("unsatisfied", "denied")
    assert account["status"] == "unresolved"


def test_denied_beats_unsatisfied() -> None:
    b = RunBuilder()
    events = [
        b.goal(effects=["fx-1"], checks=["unit"]),
        b.effect_transition("fx-1", "denied"),
        b.snapshot(),
        b.receipt(result="fail"),
        b.finalize(),
    ]
    account = account_of(events)
    assert verdict(account, "check:unit") == ("unsatisfied", "failing")
    assert account["status"] == "blocked"


def test_unsatisfied_with_a_satisfied_goal_predicate_is_partially_complete() -> None:
    b = RunBuilder()
    events = [
        b.goal(deliverables=["out.py"], checks=["unit"]),
        b.snapshot(artifacts=["out.py"]),
        b.receipt(result="fail"),
        b.finalize(),
    ]
    assert account_of(events)["status"] == "partially_complete"


def test_unsatisfied_with_only_workspace_predicates_satisfied_is_failed() -> None:
    b = RunBuilder()
    events = [
        b.goal(deliverables=["out.py"], target_revision="base-1"),
        b.snapshot(artifacts=[artifact("out.py", "deleted")], base_revision="base-1"),
        b.finalize(),
    ]
    account = account_of(events)
    # goal.in_force, workspace.sealed and candidate.target are satisfied, but none of
    # them is goal-derived (deliverable, check, effect, action).
    assert verdict(account, "workspace.sealed") == ("satisfied", "sealed")
    assert verdict(account, "candidate.target") == ("satisfied", "match")
    assert account["status"] == "failed"


def test_every_goal_predicate_unsatisfied_is_failed() -> None:
    b = RunBuilder()
    events = [
        b.goal(checks=["unit"], actions=["act-1"]),
        b.tool_finished("act-1", "failed"),
        b.finalize(None),
    ]
    assert account_of(events)["status"] == "failed"


def test_partially_complete_counts_satisfied_effects_and_actions() -> None:
    b = RunBuilder()
    events = [
        b.goal(effects=["fx-1"], actions=["act-1"]),
        b.effect_receipt("fx-1", "present"),
        b.tool_finished("act-1", "failed"),
        b.finalize(None),
    ]
    assert account_of(events)["status"] == "partially_complete"


def test_goal_with_nothing_to_do_is_complete() -> None:
    b = RunBuilder()
    account = account_of([b.goal(), b.finalize(None)])
    assert [p["id"] for p in account["predicates"]] == ["goal.in_force"]
    assert account["status"] == "complete"
