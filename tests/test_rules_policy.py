"""SPEC 3.2, runs whose goal arrives without structure: what done requires.

An imported trace or a hook session states its goal as prose. By default (`request_goal`)
the goal requires what the run did: `*` as a required check (every label the run ran, in
its latest state) and as a requested effect (every effect it attempted), resolved by the
reducer from the events, so a later rerun changes the account. A project policy
(`importers/policy.py`) replaces the default with a later goal revision by
`product_rule`. The account records which (`requirement_policy`, `requirement_source`).
"""

from __future__ import annotations

import itertools
import random
from pathlib import Path
from typing import Any

import pytest

from outcomes.importers.derive import derive
from outcomes.importers.policy import (
    POLICY_FILE,
    Policy,
    PolicyError,
    apply_policy,
    load_policy,
    parse_policy,
    policy_for,
    with_policy,
)
from outcomes.importers.trace import Finish, Message, ToolCall, Trace, request_goal
from outcomes.reducers.account import requirement_ids
from tests.builders import Replay, RunBuilder, account_of, artifact, check, predicate_ids, verdict

Event = dict[str, Any]


def observed_goal(b: RunBuilder, **envelope: Any) -> Event:
    """The goal an importer derives from a user's first request."""
    return b.event("goal.revised", **request_goal(), **envelope)


def test_the_request_goal_requires_what_the_run_did() -> None:
    goal = request_goal()
    assert goal["required_checks"] == [{"label": "*", "scope": "focused"}]
    assert goal["requested_effects"] == ["*"]
    assert goal["deliverables"] == [] and goal["requested_actions"] == []


def test_a_last_test_run_that_failed_is_not_complete() -> None:
    """'1 failed, 4 passed' as the last pytest: the run is not complete."""
    b = RunBuilder()
    account = account_of(
        [
            observed_goal(b),
            b.snapshot("snap-1"),
            b.receipt("pytest -q", "pass", snapshot="snap-1", scope="suite", tests=5),
            b.receipt("pytest -q", "fail", snapshot="snap-1", scope="suite", tests=5),
            b.finalize("snap-1"),
        ]
    )
    assert verdict(account, "check:pytest -q") == ("unsatisfied", "failing")
    assert account["status"] == "failed"
    assert account["requirement_policy"] == "observed"
    assert account["dimensions"]["verification"] == "fail"


def test_a_test_run_made_stale_by_a_later_edit_is_not_complete() -> None:
    b = RunBuilder()
    account = account_of(
        [
            observed_goal(b),
            b.snapshot("snap-1", [artifact("src/app.py", digest="d1")]),
            b.receipt("pytest", "pass", snapshot="snap-1"),
            b.snapshot("snap-2", [artifact("src/app.py", digest="d2")]),
            b.finalize("snap-2"),
        ]
    )
    assert verdict(account, "check:pytest") == ("indeterminate", "stale")
    assert account["status"] == "unresolved"


def test_a_rerun_that_fixes_the_test_makes_a_new_revision_and_a_notification() -> None:
    b = RunBuilder()
    replay = Replay()
    replay.apply(
        observed_goal(b),
        b.snapshot("snap-1"),
        b.receipt("pytest", "fail", snapshot="snap-1"),
        b.finalize("snap-1"),
    )
    assert replay.account is not None and replay.account["status"] == "failed"
    replay.apply(b.receipt("pytest", "pass", snapshot="snap-1"))
    first, second = replay.accounts
    assert second["status"] == "complete" and second["supersedes"] == first["revision"]
    assert verdict(second, "check:pytest") == ("satisfied", "passing")
    kinds = [(n["kind"], n["status"], n["previous_status"]) for n in replay.notifications]
    assert kinds == [
        ("account.final", "failed", None),
        ("account.superseded", "complete", "failed"),
    ]
    assert replay.notifications[-1]["completion_automation"] is True


def test_a_check_first_seen_after_the_account_is_required_too() -> None:
    """A receipt for a label the run had not run before adds a requirement (and so a
    revision) even when it fails, without any new goal event."""
    b = RunBuilder()
    replay = Replay()
    replay.apply(observed_goal(b), b.snapshot("snap-1"), b.finalize("snap-1"))
    assert replay.account is not None and replay.account["status"] == "complete"
    replay.apply(b.receipt("ruff check .", "fail", snapshot="snap-1"))
    assert replay.account["status"] == "failed"
    assert [n["kind"] for n in replay.notifications] == ["account.final", "account.superseded"]


def test_every_attempted_effect_needs_its_receipt() -> None:
    b = RunBuilder()
    events = [
        observed_goal(b),
        b.effect_intent("push-1", effect_class="git_push"),
        b.effect_transition("push-1", "active"),
        b.effect_transition("push-1", "unknown"),
        b.finalize(None),
    ]
    account = account_of(events)
    assert verdict(account, "effect:push-1") == ("indeterminate", "pending")
    assert account["status"] == "unresolved"
    done = account_of([*events, b.effect_receipt("push-1", "present")])
    assert verdict(done, "effect:push-1") == ("satisfied", "completed")
    assert done["status"] == "complete"
    refused = account_of([*events[:-1], b.effect_transition("push-1", "denied"), events[-1]])
    assert refused["status"] == "blocked"


def test_a_run_that_ran_nothing_requires_nothing() -> None:
    b = RunBuilder()
    account = account_of([observed_goal(b), b.snapshot("snap-1"), b.finalize("snap-1")])
    assert account["status"] == "complete"
    assert predicate_ids(account) == ["goal.in_force", "workspace.sealed"]
    assert account["checks"] == [] and account["requirement_policy"] == "observed"


def test_a_stated_goal_requires_only_what_it_names() -> None:
    """The structured goals of producers are unchanged: an unrequired failing check does
    not change the status."""
    b = RunBuilder()
    account = account_of(
        [
            b.goal(checks=["unit"]),
            b.snapshot("snap-1"),
            b.receipt("unit", "pass"),
            b.receipt("lint", "fail"),
            b.finalize("snap-1"),
        ]
    )
    assert account["status"] == "complete"
    assert check(account, "lint")["required"] is False
    assert account["requirement_policy"] == "stated"
    assert account["requirement_source"] == "worker-1"


def test_no_goal_records_no_policy() -> None:
    b = RunBuilder()
    account = account_of([b.snapshot("snap-1"), b.finalize("snap-1")])
    assert account["requirement_policy"] is None and account["requirement_source"] is None


def test_a_pattern_requires_the_labels_it_matches_or_is_missing() -> None:
    b = RunBuilder()
    events = [
        b.goal(checks=[("pytest*", "focused"), ("npm run lint*", "suite")], effects=["*"]),
        b.snapshot("snap-1"),
        b.receipt("pytest tests/test_a.py", "pass", scope="focused"),
        b.receipt("pytest -x", "pass"),
        b.receipt("ruff check .", "fail"),
        b.finalize("snap-1"),
    ]
    account = account_of(events)
    assert verdict(account, "check:pytest tests/test_a.py") == ("satisfied", "passing")
    assert verdict(account, "check:pytest -x") == ("satisfied", "passing")
    assert verdict(account, "check:npm run lint*") == ("unsatisfied", "missing")
    assert check(account, "ruff check .")["required"] is False
    assert account["status"] == "partially_complete"
    assert account["requirement_policy"] == "stated+observed"


@pytest.mark.parametrize(
    ("wanted", "known", "required"),
    [
        ("pytest", ["pytest -q"], ["pytest"]),
        ("pytest*", ["pytest -q", "npm test", "pytest"], ["pytest -q", "pytest"]),
        ("*test*", ["npm test", "pytest -q", "ruff"], ["npm test", "pytest -q"]),
        ("py*q", ["pytest -q", "pyq", "py"], ["pytest -q", "pyq"]),
        ("a*a", ["a", "aa", "aba"], ["aa", "aba"]),
        ("pytest [x]*", ["pytest [x] -q", "pytest x"], ["pytest [x] -q"]),
        ("cargo*", [], ["cargo*"]),
        ("*", [], []),
        ("*", ["b", "a"], ["b", "a"]),
    ],
)
def test_requirement_patterns(wanted: str, known: list[str], required: list[str]) -> None:
    assert requirement_ids(wanted, known) == required


def test_the_account_is_the_same_for_every_arrival_order() -> None:
    b = RunBuilder()
    events = [
        observed_goal(b),
        b.snapshot("snap-1", [artifact("src/app.py", digest="d1")]),
        b.receipt("pytest", "fail", snapshot="snap-1"),
        b.snapshot("snap-2", [artifact("src/app.py", digest="d2")]),
        b.receipt("pytest", "pass", snapshot="snap-2"),
        b.receipt("ruff check .", "pass", snapshot="snap-2"),
        b.effect_intent("push-1", effect_class="git_push"),
        b.effect_receipt("push-1", "present"),
        b.finalize("snap-2"),
    ]
    expected = _content(account_of(events))
    assert expected["status"] == "complete"
    rng = random.Random(7)
    orders = [list(p) for p in itertools.islice(itertools.permutations(events), 0, 40, 7)]
    for _ in range(10):
        order = events[:]
        rng.shuffle(order)
        orders.append(order)
    for order in orders:
        assert _content(account_of(order)) == expected


def _content(account: Any) -> dict[str, Any]:
    bookkeeping = {
        "revision",
        "supersedes",
        "trigger_event_id",
        "changes",
        "revision_id",
        "state_revision",
        "observation_cutoff",
    }
    return {k: v for k, v in account.items() if k not in bookkeeping}


# -- the project policy ------------------------------------------------------------------------

POLICY = """
# what a run of this repository must show
checks = ["pytest*", { label = "npm run lint", scope = "suite" }]
deliverables = ["CHANGELOG.md"]
effects = []
"""


def test_a_policy_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(POLICY, encoding="utf-8")
    policy = load_policy(path)
    assert policy.checks == (("pytest*", "focused"), ("npm run lint", "suite"))
    assert policy.deliverables == ("CHANGELOG.md",)
    assert policy.effects == () and policy.observed is False
    assert policy.source.startswith(f"{path} sha256:")
    fields = policy.goal_fields()
    assert fields["required_checks"] == [
        {"label": "pytest*", "scope": "focused"},
        {"label": "npm run lint", "scope": "suite"},
    ]
    observed = parse_policy("observed = true\nchecks = ['make test']", "p.toml")
    assert observed.goal_fields()["required_checks"][-1] == {"label": "*", "scope": "focused"}
    assert observed.goal_fields()["requested_effects"] == ["*"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("checks = [", "p.toml: not TOML: "),
        ("check = []", "p.toml: unknown key 'check' (a policy has checks, deliverables"),
        ("checks = 'pytest'", "p.toml: 'checks' must be a list"),
        ("checks = [3]", "p.toml: each of 'checks' must be a label or {label, scope}"),
        ("checks = ['']", "p.toml: each of 'checks' must be a non-empty string"),
        ("checks = [{label = 'x', scope = 'all'}]", "p.toml: check 'x': scope must be focused"),
        ("checks = [{label = 'x', when = 1}]", "p.toml: a check has 'label' and 'scope'"),
        ("deliverables = [1]", "p.toml: each of 'deliverables' must be a non-empty string"),
        ("observed = 'yes'", "p.toml: 'observed' must be true or false"),
    ],
)
def test_a_bad_policy_is_one_line_naming_the_file_and_key(text: str, message: str) -> None:
    with pytest.raises(PolicyError) as raised:
        parse_policy(text, "p.toml")
    assert str(raised.value).startswith(message)
    assert "\n" not in str(raised.value)


def test_an_unreadable_policy_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match=r"cannot read the policy") as raised:
        load_policy(tmp_path / "absent.toml")
    assert "\n" not in str(raised.value)


def test_the_policy_of_a_run_option_first_then_the_repository(tmp_path: Path) -> None:
    assert policy_for(None, None) is None
    assert policy_for(None, tmp_path) is None
    (tmp_path / POLICY_FILE).parent.mkdir()
    (tmp_path / POLICY_FILE).write_text("checks = ['make test']", encoding="utf-8")
    found = policy_for(None, tmp_path)
    assert found is not None and found.checks == (("make test", "focused"),)
    assert found.source.startswith(".outcomes/policy.toml sha256:")
    option = tmp_path / "other.toml"
    option.write_text("deliverables = ['a.py']", encoding="utf-8")
    given = policy_for(option, tmp_path)
    assert given is not None and given.deliverables == ("a.py",) and given.checks == ()


def _imported(b: RunBuilder) -> list[Event]:
    return [
        b.run_started(),
        observed_goal(b),
        b.snapshot("snap-1", [artifact("src/app.py", digest="d1")]),
        b.receipt("pytest -q", "pass", snapshot="snap-1"),
        b.receipt("ruff check .", "fail", snapshot="snap-1"),
        b.finalize("snap-1"),
    ]


def test_a_policy_is_a_product_rule_revision_of_the_goal() -> None:
    b = RunBuilder()
    events = _imported(b)
    policy = parse_policy(POLICY, ".outcomes/policy.toml")
    applied = apply_policy(events, policy)
    assert apply_policy(events, None) is events
    assert applied == apply_policy(events, policy)  # the same events every time
    [goal, rule] = [e for e in applied if e["type"] == "goal.revised"]
    assert applied.index(rule) == applied.index(goal) + 1
    assert (rule["goal_revision"], rule["authored_by"]) == (2, "product_rule")
    assert rule["event_id"] == f"{goal['event_id']}:policy"
    assert rule["occurred_at"] == goal["occurred_at"]
    assert rule["source"] == f"policy:{policy.source}"
    account = account_of(applied)
    # The policy requires pytest* and npm run lint and CHANGELOG.md; ruff is not required.
    assert verdict(account, "check:pytest -q") == ("satisfied", "passing")
    assert verdict(account, "check:npm run lint") == ("unsatisfied", "missing")
    assert verdict(account, "deliverable:CHANGELOG.md") == ("unsatisfied", "absent")
    assert check(account, "ruff check .")["required"] is False
    assert account["status"] == "partially_complete"
    assert account["goal_revision"] == 2
    assert account["requirement_policy"] == "stated"
    assert account["requirement_source"] == f"policy:{policy.source}"
    # Without the policy the default judges the same run: ruff failed.
    default = account_of(events)
    assert default["status"] == "partially_complete"
    assert verdict(default, "check:ruff check .") == ("unsatisfied", "failing")


def test_a_policy_on_a_long_goal_id_keeps_ids_within_the_limit() -> None:
    b = RunBuilder("r" * 100)
    goal = observed_goal(b, event_id="g" * 124)
    [_, rule] = apply_policy([goal], Policy(source="p"))
    assert len(rule["event_id"]) <= 128 and rule["event_id"] != goal["event_id"]


def test_an_empty_policy_requires_nothing_but_the_goal() -> None:
    b = RunBuilder()
    account = account_of(apply_policy(_imported(b), parse_policy("", "p.toml")))
    assert account["status"] == "complete"
    assert account["requirement_policy"] == "stated"


# -- end to end: a trace's steps, derived as an importer or the hook derives them -------------


def _shell(n: int, command: str, output: str, exit_code: int) -> ToolCall:
    return ToolCall(
        f"call-{n}", "Bash", "shell", f"line {n}", None, command=command,
        output=output, exit_code=exit_code,
    )  # fmt: skip


def _edit(n: int, path: str, text: str) -> ToolCall:
    return ToolCall(
        f"call-{n}", "Write", "write", f"line {n}", None, path=path, created=False,
        content=text, output="ok",
    )  # fmt: skip


FAILED_RUN = "===== 1 failed, 4 passed in 0.12s ====="
PASSED_RUN = "===== 5 passed in 0.10s ====="


def _trace(*steps: Any) -> Trace:
    return Trace(
        "claude-code-jsonl", "claude-code", "session.jsonl",
        (Message("user", "Fix the parser", None, "line 0"), *steps,
         Message("assistant", "Done: all tests pass.", None, "line 98"),
         Finish("line 99", None)),
    )  # fmt: skip


def _status(events: list[Event]) -> str:
    return str(account_of(events)["status"])


def test_an_imported_run_whose_last_pytest_failed_is_not_complete() -> None:
    trace = _trace(
        _edit(1, "src/parser.py", "v1"),
        _shell(2, "pytest -q", FAILED_RUN, 1),
    )
    events = derive(trace, "run-imported")
    account = account_of(events)
    assert account["status"] == "failed"
    assert account["requirement_policy"] == "observed"
    assert verdict(account, "check:pytest -q") == ("unsatisfied", "failing")


def test_an_imported_run_whose_test_went_stale_is_not_complete() -> None:
    trace = _trace(
        _edit(1, "src/parser.py", "v1"),
        _shell(2, "pytest -q", PASSED_RUN, 0),
        _edit(3, "src/parser.py", "v2"),
    )
    account = account_of(derive(trace, "run-stale"))
    assert verdict(account, "check:pytest -q") == ("indeterminate", "stale")
    assert account["status"] == "unresolved"
    fixed = _trace(
        _edit(1, "src/parser.py", "v1"),
        _shell(2, "pytest -q", PASSED_RUN, 0),
        _edit(3, "src/parser.py", "v2"),
        _shell(4, "pytest -q", PASSED_RUN, 0),
    )
    assert _status(derive(fixed, "run-stale")) == "complete"


def test_a_hook_session_fixed_after_its_stop_is_superseded_with_a_notification() -> None:
    """The hook derives the session again on each payload and sends the new events: a
    rerun after the first Stop revises the account and notifies."""
    first = [
        Message("user", "Fix the parser", None, "hook 1"),
        _edit(2, "src/parser.py", "v1"),
        _shell(3, "pytest -q", FAILED_RUN, 1),
        Message("assistant", "Done.", None, "hook 4"),
        Finish("hook 5", None),
    ]
    later = [_edit(6, "src/parser.py", "v2"), _shell(7, "pytest -q", PASSED_RUN, 0),
             Finish("hook 8", None)]  # fmt: skip
    session = Trace("claude-code-jsonl", "claude-code", "s.jsonl", tuple(first))
    whole = Trace("claude-code-jsonl", "claude-code", "s.jsonl", (*first, *later))
    sent = derive(session, "run-hook", whole=False)
    replay = Replay()
    replay.apply(*sent)
    assert replay.account is not None and replay.account["status"] == "failed"
    known = {e["event_id"] for e in sent}
    again = derive(whole, "run-hook", whole=False)
    assert [e for e in again if e["event_id"] in known] == sent  # the hook's premise
    replay.apply(*(e for e in again if e["event_id"] not in known))
    assert replay.account["status"] == "complete"
    # The edit made the failure stale (unresolved), the rerun passed (complete).
    assert [(n["kind"], n["status"]) for n in replay.notifications] == [
        ("account.final", "failed"),
        ("account.superseded", "unresolved"),
        ("account.superseded", "complete"),
    ]


def test_a_project_policy_decides_an_imported_run(tmp_path: Path) -> None:
    """The policy file in the run's workspace: the lint it requires never ran."""
    (tmp_path / POLICY_FILE).parent.mkdir()
    (tmp_path / POLICY_FILE).write_text("checks = ['pytest*', 'ruff check*']\n", "utf-8")
    trace = _trace(_edit(1, "src/parser.py", "v1"), _shell(2, "pytest -q", PASSED_RUN, 0))
    events = derive(trace, "run-policy")
    assert _status(events) == "complete"
    account = account_of(with_policy(events, None, tmp_path))
    assert verdict(account, "check:ruff check*") == ("unsatisfied", "missing")
    assert account["status"] == "partially_complete"
    assert account["requirement_source"].startswith("policy:.outcomes/policy.toml sha256:")
