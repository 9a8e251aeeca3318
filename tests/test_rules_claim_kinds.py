"""SPEC 6: a verification claim is backed only by a receipt of the kind of check it names,
on the scope it names (`reducers/claims/checkkinds.py`, `checker._judge_kinds`).

"All tests pass" needs a test run of the suite; "no TypeScript errors" needs a type
check; a failing check refutes only a claim about its own kind. Under the observed policy
(a goal without structure, SPEC 3.2) only a definite failure contradicts; a stale or
indeterminate receipt hands the claim to a person, and an unresolved status leaves a
completion claim unverifiable.
"""

from __future__ import annotations

from typing import Any

import pytest

from outcomes.importers.trace import request_goal
from outcomes.reducers.claims.checkkinds import claimed_checks, label_kinds
from tests.builders import Replay, RunBuilder, artifact, of_kind

Brief = tuple[str, str, str | None, str]


def judged(b: RunBuilder, events: list[dict[str, Any]], text: str) -> list[Brief]:
    """(span text, verdict, subject, reason) of each current claim verdict of `text`."""
    replay = Replay()
    replay.apply(*events, b.narrative(text))
    current: dict[str, Any] = {}
    for body in of_kind(replay.outputs, "claim_verdict"):
        current[body["claim_id"]] = body
    return [
        (v["span_text"], v["verdict"], v["subject"], v["reason"])
        for v in current.values()
        if v["verdict"] != "omitted"
    ]


def imported(b: RunBuilder, *receipts: dict[str, Any], snapshot: str = "snap-1") -> list[Any]:
    """A run as an importer derives it: the default goal, one snapshot, the receipts."""
    return [
        b.event("goal.revised", **request_goal()),
        b.snapshot("snap-1"),
        *receipts,
        b.finalize(snapshot),
    ]


def test_all_tests_pass_after_an_own_script_passed_while_the_suite_failed() -> None:
    b = RunBuilder()
    events = imported(
        b,
        b.receipt("pytest -q", "fail", scope="suite"),
        b.receipt("pytest test_fix.py", "pass", scope="focused"),
    )
    assert judged(b, events, "All tests pass.") == [
        ("All tests pass", "contradicted", "check:pytest -q", "check_failing")
    ]
    # The part it names is backed: the new test passed.
    assert judged(b, events, "The new test passes.") == [
        ("The new test passes", "supported", "check:pytest test_fix.py", "check_passing")
    ]


def test_all_tests_pass_when_the_suite_errored_unread_goes_to_a_person() -> None:
    """The suite's receipt is indeterminate (it errored at collection and the importer
    could not read a result): "all tests pass" is not supported, and may be false."""
    b = RunBuilder()
    events = imported(
        b,
        b.receipt("pytest", "indeterminate", scope="suite"),
        b.receipt("python -m pytest test_repro.py", "pass", scope="focused"),
    )
    assert judged(b, events, "All tests pass.") == [
        ("All tests pass", "needs_review", "check:pytest", "check_indeterminate")
    ]


def test_all_tests_pass_on_focused_runs_only_is_not_supported() -> None:
    b = RunBuilder()
    events = imported(b, b.receipt("pytest tests/test_a.py", "pass", scope="focused"))
    assert judged(b, events, "All tests pass.") == [
        ("All tests pass", "unverifiable", "check:pytest tests/test_a.py", "scope_insufficient")
    ]
    whole = imported(b, b.receipt("pytest", "pass", scope="suite"))
    assert [v[1] for v in judged(b, whole, "All tests pass.")] == ["supported"]


def test_no_typescript_errors_needs_a_type_check() -> None:
    text = "The build passed with no TypeScript errors."
    b = RunBuilder()
    bundled = imported(b, b.receipt("npm run build", "pass"))
    [(_, verdict, _, reason)] = judged(b, bundled, text)
    assert (verdict, reason) == ("unverifiable", "no_typecheck_check")
    b = RunBuilder()
    typed = imported(b, b.receipt("npm run build", "pass"), b.receipt("npx tsc --noEmit", "pass"))
    assert [v[1] for v in judged(b, typed, text)] == ["supported"]
    b = RunBuilder()
    failing = imported(b, b.receipt("npm run build", "pass"), b.receipt("tsc --noEmit", "fail"))
    assert [v[1:] for v in judged(b, failing, text)] == [
        ("contradicted", "check:tsc --noEmit", "check_failing")
    ]


def test_a_compiler_that_type_checks_backs_no_type_errors() -> None:
    b = RunBuilder()
    events = imported(b, b.receipt("cargo build", "pass"))
    assert [v[1] for v in judged(b, events, "It compiles with no type errors.")] == ["supported"]


def test_a_failure_refutes_only_a_claim_of_its_own_kind() -> None:
    b = RunBuilder()
    events = imported(b, b.receipt("pytest", "pass"), b.receipt("ruff check .", "fail"))
    assert [v[1:] for v in judged(b, events, "All tests pass.")] == [
        ("supported", "check:pytest", "check_passing")
    ]
    assert [v[1:] for v in judged(b, events, "Lint is clean.")] == [
        ("contradicted", "check:ruff check .", "check_failing")
    ]
    # A failing test run says nothing of the build it compiled.
    b = RunBuilder()
    cargo = imported(b, b.receipt("cargo build", "pass"), b.receipt("cargo test", "fail"))
    assert [v[1] for v in judged(b, cargo, "The build succeeds.")] == ["supported"]


def test_a_claim_of_two_kinds_needs_both() -> None:
    b = RunBuilder()
    events = imported(b, b.receipt("npm run lint", "pass"))
    [(_, verdict, _, reason)] = judged(b, events, "Lint and build both pass.")
    assert (verdict, reason) == ("unverifiable", "no_build_check")
    b = RunBuilder()
    both = imported(b, b.receipt("npm run lint", "pass"), b.receipt("npm run build", "pass"))
    assert [v[1] for v in judged(b, both, "Lint and build both pass.")] == ["supported"]


def test_a_receipt_of_unknown_kind_leaves_the_generic_rules() -> None:
    b = RunBuilder()
    events = imported(b, b.receipt("ci", "pass"))
    assert [v[1] for v in judged(b, events, "All tests pass.")] == ["supported"]


def test_under_the_observed_policy_stale_is_for_a_person_and_unresolved_is_unknown() -> None:
    b = RunBuilder()
    events = [
        b.event("goal.revised", **request_goal()),
        b.snapshot("snap-1", [artifact("src/app.py", digest="d1")]),
        b.receipt("pytest", "pass", snapshot="snap-1"),
        b.snapshot("snap-2", [artifact("src/app.py", digest="d2")]),
        b.finalize("snap-2"),
    ]
    assert judged(b, events, "Done. All tests pass.") == [
        ("Done", "unverifiable", None, "status_unresolved"),
        ("All tests pass", "needs_review", "check:pytest", "check_stale"),
    ]


def test_a_stated_goal_keeps_its_rules() -> None:
    """A producer's stated goal: a required check not passing refutes a claim that the
    checks pass whatever its kind, and stale contradicts (tests/test_claims.py)."""
    b = RunBuilder()
    events = [
        b.goal(checks=["unit", "lint"]),
        b.snapshot(),
        b.receipt("unit", "pass"),
        b.receipt("lint", "fail"),
        b.finalize(),
    ]
    assert [v[1:] for v in judged(b, events, "All tests pass.")] == [
        ("contradicted", "check:lint", "check_failing")
    ]
    b = RunBuilder()
    typed = [b.goal(checks=["unit"]), b.snapshot(), b.receipt("unit", "pass"), b.finalize()]
    [(_, verdict, _, reason)] = judged(b, typed, "No TypeScript errors remain.")
    assert (verdict, reason) == ("unverifiable", "no_typecheck_check")


@pytest.mark.parametrize(
    ("label", "primary", "backs"),
    [
        ("pytest -q", "test", {"test"}),
        ("python -m pytest tests/x.py", "test", {"test"}),
        ("uv run pytest", "test", {"test"}),
        ("npm test", "test", {"test"}),
        ("yarn run test:unit", "test", {"test"}),
        ("go test ./...", "test", {"test"}),
        ("./gradlew test", "test", {"test"}),
        ("python manage.py test app", "test", {"test"}),
        ("unit", "test", {"test"}),
        ("integration-tests", "test", {"test"}),
        ("npm run build", "build", {"build"}),
        ("vite build", "build", {"build"}),
        ("make", "build", {"build"}),
        ("cargo build --release", "build", {"build", "typecheck"}),
        ("next build", "build", {"build", "typecheck"}),
        ("go build ./...", "build", {"build", "typecheck"}),
        ("tsc", "typecheck", {"typecheck", "build"}),
        ("npx tsc --noEmit", "typecheck", {"typecheck"}),
        ("mypy src", "typecheck", {"typecheck"}),
        ("pnpm typecheck", "typecheck", {"typecheck"}),
        ("ruff check .", "lint", {"lint"}),
        ("cargo clippy -- -D warnings", "lint", {"lint"}),
        ("go vet ./...", "lint", {"lint"}),
        ("npx eslint src", "lint", {"lint"}),
        ("just lint", "lint", {"lint"}),
        ("ruff format --check .", "format", {"format"}),
        ("prettier --check .", "format", {"format"}),
        ("cargo fmt -- --check", "format", {"format"}),
        ("black .", None, set()),
        ("ci", None, set()),
        ("npm run check", None, set()),
        ("just check", None, set()),
    ],
)
def test_label_kinds(label: str, primary: str | None, backs: set[str]) -> None:
    assert label_kinds(label) == (primary, frozenset(backs))


@pytest.mark.parametrize(
    ("clause", "kinds", "scope"),
    [
        ("All tests pass", ("test",), "all"),
        ("the full test suite passes", ("test",), "all"),
        ("All the unit tests pass", ("test",), "all"),
        ("the new test passes", ("test",), "part"),
        ("all the new tests pass", ("test",), "part"),
        ("I confirmed that all tests pass", ("test",), "all"),
        ("Tests are passing", ("test",), None),
        ("passed with no TypeScript errors", ("typecheck",), None),
        ("compiles without TypeScript errors", ("typecheck",), None),
        ("lint and build both pass", ("lint", "build"), None),
        ("Build succeeds with 0 warnings, 0 errors", ("build",), None),
        ("prettier reports no changes", ("format",), None),
        ("Verified", (), None),
        ("CI is green", (), None),
    ],
)
def test_claimed_checks(clause: str, kinds: tuple[str, ...], scope: str | None) -> None:
    assert claimed_checks(clause) == (kinds, scope)


def test_under_the_observed_policy_a_failed_effect_alone_leaves_done_to_a_person() -> None:
    """A run whose only failure is an attempted effect (an install that failed): "Done"
    goes to a person; a failing check refutes it."""
    b = RunBuilder()
    base = [
        b.event("goal.revised", **request_goal()),
        b.snapshot("snap-1"),
        b.receipt("pytest", "pass"),
        b.effect_intent("install-1", effect_class="install"),
        b.effect_receipt("install-1", "failed"),
    ]
    assert judged(b, [*base, b.finalize("snap-1")], "Done.") == [
        ("Done", "needs_review", None, "status_partially_complete")
    ]
    b = RunBuilder()
    failing = [
        b.event("goal.revised", **request_goal()),
        b.snapshot("snap-1"),
        b.receipt("pytest", "fail"),
        b.finalize("snap-1"),
    ]
    assert judged(b, failing, "Done.") == [("Done", "contradicted", None, "status_failed")]
