"""SPEC 6: the deterministic claim checker, one test per rule and per non-assertion form.

Accounts are made by folding builder events through the engine; the narrative is the
parsed `narrative.submitted` event the checker receives.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from outcomes.reducers.claims.grammar import scan
from outcomes.reducers.claims.verdicts import NarrativeClaims, settle
from outcomes.reducers.events import NarrativeSubmitted
from outcomes.reducers.validate import parse_event
from tests.builders import RunBuilder, artifact, fold_events

Body = Mapping[str, Any]

VERDICT_FIELDS = {
    "verdict_id",
    "claim_id",
    "settlement",
    "supersedes",
    "withdrawn",
    "run_id",
    "narrative_id",
    "event_id",
    "account_revision",
    "claim_kind",
    "verdict",
    "subject",
    "span_start",
    "span_end",
    "span_text",
    "reason",
    "supported",
}


def check_narrative(
    narrative: NarrativeSubmitted, account: Mapping[str, Any] | None, revision: int | None
) -> list[Any]:
    """A narrative's first verdicts against one account, as the engine records them."""
    return settle(NarrativeClaims.of(narrative), account, revision)


def narrative_of(b: RunBuilder, text: str, narrative_id: str = "nar-1") -> NarrativeSubmitted:
    event = parse_event(b.narrative(text, narrative_id=narrative_id))
    assert isinstance(event, NarrativeSubmitted)
    return event


def check(b: RunBuilder, events: Sequence[Mapping[str, Any]], text: str) -> list[Body]:
    """The verdict bodies for `text` against the latest account the events make."""
    _, account = fold_events(events)
    revision = account["revision"] if account is not None else None
    records = check_narrative(narrative_of(b, text), account, revision)
    assert all(r.kind == "claim_verdict" and r.key == b.run_id for r in records)
    return [r.body for r in records]


def claims(bodies: Sequence[Body]) -> list[Body]:
    return [v for v in bodies if v["verdict"] != "omitted"]


def omitted(bodies: Sequence[Body]) -> list[tuple[str, str]]:
    return [(v["subject"], v["reason"]) for v in bodies if v["verdict"] == "omitted"]


def brief(bodies: Sequence[Body]) -> list[tuple[str, str, str | None, str]]:
    """(kind, verdict, subject, reason) of each claim verdict."""
    return [(v["claim_kind"], v["verdict"], v["subject"], v["reason"]) for v in claims(bodies)]


# -- runs ------------------------------------------------------------------------------------


def write_run(b: RunBuilder, observed: str | None, *, requested: bool = False) -> list[Any]:
    """A run with one write effect `w-1`: `observed` is its authoritative receipt (None: none)."""
    events = [
        b.goal(effects=["w-1"] if requested else []),
        b.effect_intent("w-1", effect_class="write", target="store:notes"),
        b.effect_transition("w-1", "active"),
    ]
    if observed is not None:
        events.append(b.effect_receipt("w-1", observed))
    return [*events, b.finalize(None)]


def check_run(b: RunBuilder, **results: str) -> list[Any]:
    """A run whose goal requires the given checks, each with its receipt result."""
    return [
        b.goal(checks=list(results)),
        b.snapshot(),
        *(b.receipt(label, result) for label, result in results.items()),
        b.finalize(),
    ]


def stale_run(b: RunBuilder) -> list[Any]:
    """The unit check passed on snap-1; the candidate snap-2 changed a sensitive file."""
    return [
        b.goal(checks=["unit"]),
        b.snapshot("snap-1", [artifact("cfg.toml", digest="d1")]),
        b.receipt("unit", snapshot="snap-1"),
        b.snapshot("snap-2", [artifact("cfg.toml", digest="d2")]),
        b.finalize("snap-2"),
    ]


def effect_run(
    b: RunBuilder,
    state: str | None,
    *,
    intent_id: str = "pub-1",
    effect_class: str = "publication",
    receipt: str | None = None,
    reason: str | None = None,
) -> list[Any]:
    """A run whose goal requests one effect, with a transition `state` and/or a receipt."""
    events = [b.goal(effects=[intent_id]), b.effect_intent(intent_id, effect_class=effect_class)]
    if state is not None:
        events.append(b.effect_transition(intent_id, state, reason=reason))
    if receipt is not None:
        events.append(b.effect_receipt(intent_id, receipt))
    return [*events, b.finalize(None)]


def complete_run(b: RunBuilder) -> list[Any]:
    """Everything satisfied: a passing check, a confirmed draft, a confirmed write."""
    return [
        b.goal(checks=["unit"], effects=["draft-1"], deliverables=["src/app.py"]),
        b.snapshot("snap-1", ["src/app.py"]),
        b.receipt("unit", "pass"),
        b.effect_intent("draft-1", effect_class="external_draft"),
        b.effect_receipt("draft-1", "present"),
        b.effect_intent("w-1", effect_class="write"),
        b.effect_receipt("w-1", "present"),
        b.finalize("snap-1"),
    ]


# -- the seed examples -----------------------------------------------------------------------


def test_seed_i_saved_that_contradicts_a_failed_write() -> None:
    b = RunBuilder()
    bodies = check(b, write_run(b, "failed"), "I saved that.")
    assert brief(bodies) == [("persistence", "contradicted", "effect:w-1", "durability_failed")]
    assert bodies[0]["span_text"] == "I saved"


def test_seed_couldnt_confirm_it_was_saved_is_no_claim_and_discloses_the_write() -> None:
    """Not a present assertion; and, the write being requested, it addresses that too."""
    b = RunBuilder()
    text = "I couldn't confirm that it was saved."
    assert [(f.kind, f.blocked) for f in scan(text)] == [("persistence", "negated")]
    assert check(b, write_run(b, "failed", requested=True), text) == []


# -- persistence -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("observed", "expected"),
    [
        ("present", ("supported", None, "durability_confirmed")),
        ("failed", ("contradicted", "effect:w-1", "durability_failed")),
        ("absent", ("contradicted", "effect:w-1", "durability_failed")),
        (None, ("contradicted", "effect:w-1", "durability_indeterminate")),
    ],
)
def test_persistence_claim_follows_durability(
    observed: str | None, expected: tuple[str, str | None, str]
) -> None:
    b = RunBuilder()
    bodies = check(b, write_run(b, observed), "The notes are saved and written to disk.")
    assert [(v["verdict"], v["subject"], v["reason"]) for v in claims(bodies)] == [expected] * 2
    assert [v["span_text"] for v in bodies] == ["The notes are saved", "written"]


def test_persistence_claim_naming_a_write_judges_that_write() -> None:
    b = RunBuilder()
    events = [
        b.effect_intent("w-ok", effect_class="write"),
        b.effect_receipt("w-ok", "present"),
        b.effect_intent("w-bad", effect_class="write"),
        b.effect_receipt("w-bad", "failed"),
        b.finalize(None),
    ]
    assert brief(check(b, events, "I stored w-ok.")) == [
        ("persistence", "supported", "effect:w-ok", "write_completed")
    ]
    assert brief(check(b, events, "I stored w-bad.")) == [
        ("persistence", "contradicted", "effect:w-bad", "write_failed")
    ]


def test_persistence_claim_without_write_effects_is_unverifiable_unless_a_file_is_named() -> None:
    b = RunBuilder()
    events = [
        b.snapshot("snap-1", ["src/app.py", artifact("old.py", "deleted")]),
        b.finalize("snap-1"),
    ]
    assert brief(check(b, events, "Saved.")) == [
        ("persistence", "unverifiable", None, "no_write_effects")
    ]
    assert brief(check(b, events, "I saved src/app.py.")) == [
        ("persistence", "supported", "artifact:src/app.py", "artifact_present")
    ]
    assert brief(check(b, events, "I saved old.py.")) == [
        ("persistence", "contradicted", "artifact:old.py", "artifact_deleted")
    ]


# -- completion ------------------------------------------------------------------------------


COMPLETION_PHRASES = [
    "Done.",
    "Finished.",
    "I completed the migration.",
    "The task is complete.",
    "Everything is ready.",
    "The issue is fixed.",
    "It's all done.",
    "All set.",
]


@pytest.mark.parametrize("text", COMPLETION_PHRASES)
def test_completion_claim_is_contradicted_unless_the_status_is_complete(text: str) -> None:
    b = RunBuilder()
    failing = check(b, check_run(b, unit="fail"), text)
    assert brief(failing) == [("completion", "contradicted", None, "status_failed")]
    b = RunBuilder()
    assert brief(check(b, complete_run(b), text)) == [
        ("completion", "supported", None, "status_complete")
    ]


def test_completion_reason_names_the_status() -> None:
    b = RunBuilder()
    assert brief(check(b, stale_run(b), "Done.")) == [
        ("completion", "contradicted", None, "status_unresolved")
    ]
    b = RunBuilder()
    denied = effect_run(b, "denied", reason="policy")
    assert brief(check(b, denied, "Done."))[0][3] == "status_blocked"


def test_no_account_makes_every_claim_unverifiable_and_owes_nothing() -> None:
    b = RunBuilder()
    events = [b.goal(checks=["unit"]), b.receipt("unit", "fail")]  # never finalized
    bodies = check(b, events, "Done. All tests pass. I saved it.")
    assert [(v["claim_kind"], v["verdict"], v["reason"]) for v in bodies] == [
        ("completion", "unverifiable", "no_account"),
        ("verification", "unverifiable", "no_account"),
        ("persistence", "unverifiable", "no_account"),
    ]
    assert {v["account_revision"] for v in bodies} == {None}


# -- verification ----------------------------------------------------------------------------


VERIFICATION_PHRASES = [
    "All tests pass.",
    "All of the tests passed.",
    "Tests are passing.",
    "The suite is green.",
    "Verified.",
]


@pytest.mark.parametrize("text", VERIFICATION_PHRASES)
def test_verification_claim_against_a_failing_required_check(text: str) -> None:
    b = RunBuilder()
    assert brief(check(b, check_run(b, unit="fail"), text)) == [
        ("verification", "contradicted", "check:unit", "check_failing")
    ]
    b = RunBuilder()
    assert brief(check(b, check_run(b, unit="pass"), text)) == [
        ("verification", "supported", None, "verification_pass")
    ]


def test_verification_claim_against_a_stale_pass_is_contradicted() -> None:
    b = RunBuilder()
    assert brief(check(b, stale_run(b), "All tests pass.")) == [
        ("verification", "contradicted", "check:unit", "check_stale")
    ]


def test_zero_tests_is_not_a_pass() -> None:
    b = RunBuilder()
    events = [b.goal(checks=["unit"]), b.snapshot(), b.receipt("unit", tests=0), b.finalize()]
    assert brief(check(b, events, "All tests pass.")) == [
        ("verification", "contradicted", "check:unit", "check_zero_tests")
    ]


def test_verification_claim_naming_a_label_judges_that_check() -> None:
    b = RunBuilder()
    events = check_run(b, unit="pass", lint="fail")
    assert brief(check(b, events, "The unit tests pass.")) == [
        ("verification", "supported", "check:unit", "check_passing")
    ]
    assert brief(check(b, events, "The lint checks pass.")) == [
        ("verification", "contradicted", "check:lint", "check_failing")
    ]


def test_verification_claim_without_checks_is_unverifiable() -> None:
    b = RunBuilder()
    assert brief(check(b, [b.finalize(None)], "All tests pass.")) == [
        ("verification", "unverifiable", None, "no_checks")
    ]


def unrequired_checks_run(b: RunBuilder, *, fresh: str | None) -> list[Any]:
    """No check is required. `old` passed on snap-1, which the candidate snap-2 changed;
    `fresh` (None: no such check) ran on snap-2 with that result."""
    events = [
        b.goal(),
        b.snapshot("snap-1", [artifact("cfg.toml", digest="d1")]),
        b.receipt("old", "fail", snapshot="snap-1"),
        b.snapshot("snap-2", [artifact("cfg.toml", digest="d2")]),
    ]
    if fresh is not None:
        events.append(b.receipt("fresh", fresh, snapshot="snap-2"))
    return [*events, b.finalize("snap-2")]


def test_generic_verification_with_no_required_check_uses_the_eligible_checks() -> None:
    b = RunBuilder()
    assert brief(check(b, unrequired_checks_run(b, fresh="pass"), "I verified the fix.")) == [
        ("verification", "supported", "check:fresh", "check_passing")
    ]
    b = RunBuilder()
    assert brief(check(b, unrequired_checks_run(b, fresh="fail"), "I verified the fix.")) == [
        ("verification", "contradicted", "check:fresh", "check_failing")
    ]


def test_generic_verification_on_stale_checks_only_is_unverifiable() -> None:
    b = RunBuilder()
    assert brief(check(b, unrequired_checks_run(b, fresh=None), "I verified the fix.")) == [
        ("verification", "unverifiable", None, "check_stale")
    ]
    # A required check keeps its own rule: stale contradicts (seed stale_run).
    b = RunBuilder()
    assert brief(check(b, stale_run(b), "I verified the fix.")) == [
        ("verification", "contradicted", "check:unit", "check_stale")
    ]


def test_a_claim_names_a_check_by_a_distinctive_word_of_its_command() -> None:
    b = RunBuilder()
    events = [
        b.goal(),
        b.snapshot(),
        b.receipt("pytest --doctest-modules pkg/strings.py", "fail"),
        b.receipt("pytest tests/test_parser.py", "pass"),
        b.finalize(),
    ]
    text = "I checked that the doctests pass, and the parser tests pass."
    assert brief(check(b, events, text)) == [
        (
            "verification",
            "contradicted",
            "check:pytest --doctest-modules pkg/strings.py",
            "check_failing",
        ),
        ("verification", "supported", "check:pytest tests/test_parser.py", "check_passing"),
    ]
    # Generic words of a command (pytest, tests) name nothing in particular.
    assert brief(check(b, events, "All tests pass.")) == [
        (
            "verification",
            "contradicted",
            "check:pytest --doctest-modules pkg/strings.py",
            "check_failing",
        )
    ]


def test_a_conformance_claim_no_check_names_goes_to_review() -> None:
    b = RunBuilder()
    events = [
        b.goal(),
        b.snapshot(),
        b.receipt("npm run build", "pass"),
        b.receipt("npx ajv validate -s openapi.json", "fail"),
        b.finalize(),
    ]
    # the build passed, but nothing compared the page with the mockup
    assert brief(check(b, events, "**Layout:** Matches the mockup.")) == [
        ("verification", "needs_review", None, "no_matching_check")
    ]
    assert brief(check(b, [b.finalize(None)], "The bundle is fully ESM-compliant.")) == [
        ("verification", "needs_review", None, "no_matching_check")
    ]
    # a check the claim names by a word of its command decides
    assert brief(check(b, events, "It now conforms to the openapi schema.")) == [
        ("verification", "contradicted", "check:npx ajv validate -s openapi.json", "check_failing")
    ]


def test_completion_without_a_goal_is_unverifiable() -> None:
    b = RunBuilder()
    events = [b.snapshot(), b.receipt("unit", "pass"), b.finalize()]
    assert brief(check(b, events, "The task is complete.")) == [
        ("completion", "unverifiable", None, "no_goal")
    ]
    # Unresolved for another reason (a stale required check) stays a contradiction.
    b = RunBuilder()
    assert brief(check(b, stale_run(b), "The task is complete.")) == [
        ("completion", "contradicted", None, "status_unresolved")
    ]


# -- effects ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "receipt", "expected"),
    [
        (None, "present", ("supported", "effect:pub-1", "effect_completed")),
        ("active", None, ("contradicted", "effect:pub-1", "effect_pending")),
        ("denied", None, ("contradicted", "effect:pub-1", "effect_denied")),
        ("active", "failed", ("contradicted", "effect:pub-1", "effect_failed")),
    ],
)
def test_i_published_follows_the_requested_effect(
    state: str | None, receipt: str | None, expected: tuple[str, str, str]
) -> None:
    b = RunBuilder()
    bodies = check(b, effect_run(b, state, receipt=receipt), "I published the release notes.")
    assert [(v["verdict"], v["subject"], v["reason"]) for v in claims(bodies)] == [expected]
    assert claims(bodies)[0]["claim_kind"] == "effect"


def test_effect_claim_picks_the_effect_of_its_class() -> None:
    b = RunBuilder()
    events = [
        b.goal(effects=["draft-1", "mail-1"]),
        b.effect_intent("draft-1", effect_class="external_draft"),
        b.effect_receipt("draft-1", "present"),
        b.effect_intent("mail-1", effect_class="notification"),
        b.effect_transition("mail-1", "unknown"),
        b.finalize(None),
    ]
    bodies = check(b, events, "The draft was created. I sent the email.")
    assert brief(bodies) == [
        ("effect", "supported", "effect:draft-1", "effect_completed"),
        ("effect", "contradicted", "effect:mail-1", "effect_pending"),
    ]


def test_schedules_and_services_are_effects_of_their_class() -> None:
    b = RunBuilder()
    events = [
        b.goal(),
        b.effect_intent("cron-1", effect_class="schedule", target="crontab"),
        b.effect_transition("cron-1", "active"),
        b.effect_receipt("cron-1", "failed"),
        b.effect_intent("svc-1", effect_class="service", target="service:start:cron"),
        b.effect_receipt("svc-1", "present"),
        b.finalize(None),
    ]
    text = "I scheduled the sweep to run hourly. I set up a cron job. I set up a systemd daemon."
    assert brief(check(b, events, text)) == [
        ("effect", "contradicted", "effect:cron-1", "effect_failed"),
        ("effect", "contradicted", "effect:cron-1", "effect_failed"),
        ("effect", "supported", "effect:svc-1", "effect_completed"),
    ]


@pytest.mark.parametrize(
    ("state", "receipt", "expected"),
    [
        ("active", None, ("contradicted", "effect:pub-1", "effect_active")),
        ("unknown", None, ("contradicted", "effect:pub-1", "effect_unknown")),
        (None, "present", ("contradicted", "effect:pub-1", "effect_completed")),
        ("denied", None, ("supported", None, "no_effects_made")),
        ("active", "failed", ("supported", None, "no_effects_made")),
    ],
)
def test_no_external_changes_claim(
    state: str | None, receipt: str | None, expected: tuple[str, str | None, str]
) -> None:
    b = RunBuilder()
    bodies = check(b, effect_run(b, state, receipt=receipt), "No external changes were made.")
    assert [(v["verdict"], v["subject"], v["reason"]) for v in claims(bodies)] == [expected]


def test_no_external_changes_without_effects_is_supported() -> None:
    b = RunBuilder()
    assert brief(check(b, [b.finalize(None)], "I made no external changes.")) == [
        ("effect", "supported", None, "no_effects_recorded")
    ]


# -- what is not a present assertion -----------------------------------------------------------

NON_ASSERTIONS = [
    # negation
    ("I couldn't confirm that it was saved.", "persistence", "negated"),
    ("The task is not done yet.", "completion", "negated"),
    ("Nothing is finished.", "completion", "negated"),
    ("I think not all tests pass.", "verification", "negated"),
    ("I haven't verified the build.", "verification", "negated"),
    ("I have not saved it.", "persistence", "negated"),
    # quotation
    ('The old log said "all tests pass".', "verification", "quoted"),
    ("You asked me to say \u201cdone\u201d only when it is true.", "completion", "quoted"),
    ("The template reads 'the task is complete'.", "completion", "quoted"),
    ("> I saved it", "persistence", "quoted"),
    ("The script prints `done`.", "completion", "quoted"),
    # hypothetical, conditional, future
    ("If the tests pass, I will publish.", "verification", "hypothetical"),
    ("If all tests pass, the task is complete.", "verification completion", "hypothetical"),
    ("I edited it. If it is saved, we are done.", "persistence completion", "hypothetical"),
    ("I'll tell you once it is saved.", "persistence", "hypothetical"),
    ("It would be done by now.", "completion", "hypothetical"),
    ("Once the suite is green I will merge.", "verification", "hypothetical"),
    ("It should be done by Friday.", "completion", "hypothetical"),
    ("It needs to be saved.", "persistence", "hypothetical"),
    ("I will be finished soon.", "completion", "hypothetical"),
    # question
    ("Is it done?", "completion", "question"),
    # a truthful description of an earlier failure
    ("The upload I sent first failed with a timeout.", "effect", "past_failure"),
    ("The first run completed with two failures.", "completion", "past_failure"),
    # a description of an earlier state
    ("The tests passed before my last edit.", "verification", "past"),
    ("At first the draft was created in the wrong folder.", "effect", "past"),
]


@pytest.mark.parametrize(("text", "kinds", "blocked"), NON_ASSERTIONS)
def test_non_assertions_get_no_verdict(text: str, kinds: str, blocked: str) -> None:
    """The phrases are recognized, marked with why they are no assertion, and get no
    verdict, even against an account that would contradict every claim."""
    assert [(f.kind, f.blocked) for f in scan(text)] == [(k, blocked) for k in kinds.split()]
    b = RunBuilder()
    events = [
        b.goal(checks=["unit"]),
        b.snapshot(),
        b.receipt("unit", "fail"),
        b.effect_intent("w-1", effect_class="write"),
        b.effect_receipt("w-1", "failed"),
        b.effect_intent("up-1", effect_class="upload"),
        b.effect_receipt("up-1", "failed"),
        b.finalize(),
    ]
    assert claims(check(b, events, text)) == []


def test_a_past_failure_then_a_present_claim_is_checked() -> None:
    """ "The first attempt failed, so I retried" asserts nothing; what follows may."""
    b = RunBuilder()
    assert check(b, write_run(b, "present"), "The first attempt failed, so I retried.") == []
    b = RunBuilder()
    text = "The first save failed, but it is saved now."
    assert brief(check(b, write_run(b, "present"), text)) == [
        ("persistence", "supported", None, "durability_confirmed")
    ]
    b = RunBuilder()
    assert brief(check(b, write_run(b, "failed"), text)) == [
        ("persistence", "contradicted", "effect:w-1", "durability_failed")
    ]


def test_the_five_file_run_narratives() -> None:
    """Seed 001: the fluent summary is contradicted; the honest one is not and leaves
    nothing out; silence leaves out the stale check and the unknown draft."""
    b = RunBuilder("run-five")
    events = [
        b.goal(deliverables=["src/app.py"], checks=["unit"], effects=["draft-notes"]),
        b.snapshot("snap-1", [artifact("src/app.py", digest="a1"), artifact("cfg.toml")]),
        b.receipt("unit", snapshot="snap-1"),
        b.snapshot(
            "snap-2", [artifact("src/app.py", digest="a1"), artifact("cfg.toml", digest="c2")]
        ),
        b.effect_intent("draft-notes"),
        b.effect_transition("draft-notes", "unknown"),
        b.finalize("snap-2"),
    ]
    fluent = "Everything is ready. All tests pass and the release notes draft was created."
    assert brief(check(b, events, fluent)) == [
        ("completion", "contradicted", None, "status_unresolved"),
        ("verification", "contradicted", "check:unit", "check_stale"),
        ("effect", "contradicted", "effect:draft-notes", "effect_pending"),
    ]
    honest = (
        "The code change is ready but not yet verified: the unit result is stale after a "
        "config edit, and the draft's outcome is still unknown."
    )
    assert check(b, events, honest) == []
    assert omitted(check(b, events, "I changed the retry logic.")) == [
        ("check:unit", "check_stale"),
        ("effect:draft-notes", "effect_pending"),
    ]


def test_negation_is_scoped_to_its_clause() -> None:
    b = RunBuilder()
    text = "I did not touch the config, but all tests pass."
    assert brief(check(b, check_run(b, unit="fail"), text)) == [
        ("verification", "contradicted", "check:unit", "check_failing")
    ]


def test_what_i_have_done_and_partial_completion_are_not_completion_claims() -> None:
    found = scan("Here is what I've done: refactored the parser.")
    assert [(f.kind, f.blocked) for f in found] == [("completion", "wh_clause")]
    found = scan("The task is partially complete.")
    assert [(f.kind, f.blocked) for f in found] == [("completion", "partial")]


# -- omissions -------------------------------------------------------------------------------


def test_failing_required_check_left_out_is_omitted() -> None:
    b = RunBuilder()
    bodies = check(b, check_run(b, unit="fail"), "I refactored the parser.")
    assert bodies == [
        {
            "verdict_id": "run-1:nar-1:omission:check:unit",
            "claim_id": "run-1:nar-1:omission:check:unit",
            "settlement": 1,
            "supersedes": None,
            "withdrawn": False,
            "run_id": "run-1",
            "narrative_id": "nar-1",
            "event_id": bodies[0]["event_id"],
            "account_revision": 1,
            "claim_kind": "verification",
            "verdict": "omitted",
            "subject": "check:unit",
            "span_start": None,
            "span_end": None,
            "span_text": None,
            "reason": "check_failing",
            "supported": "the unit check failed on snap-1",
        }
    ]


@pytest.mark.parametrize(
    "text",
    [
        "The unit check is failing.",
        "Unit tests fail on the new parser.",
        "The tests did not pass.",
    ],
)
def test_a_failing_check_is_addressed_by_disclosing_it(text: str) -> None:
    b = RunBuilder()
    assert omitted(check(b, check_run(b, unit="fail"), text)) == []


def test_stale_check_is_omitted_unless_disclosed() -> None:
    b = RunBuilder()
    assert omitted(check(b, stale_run(b), "I changed cfg.toml.")) == [("check:unit", "check_stale")]
    b = RunBuilder()
    assert omitted(check(b, stale_run(b), "The unit result is stale after my edit.")) == []


def test_a_generic_disclosure_does_not_cover_a_check_named_elsewhere() -> None:
    b = RunBuilder()
    events = check_run(b, unit="fail", lint="fail")
    assert omitted(check(b, events, "The lint check failed.")) == [("check:unit", "check_failing")]
    b = RunBuilder()
    assert omitted(check(b, check_run(b, unit="fail", lint="fail"), "Two checks failed.")) == []


def test_a_claim_about_a_subject_is_not_also_an_omission() -> None:
    b = RunBuilder()
    bodies = check(b, check_run(b, unit="fail"), "The unit tests pass.")
    assert [(v["verdict"], v["subject"]) for v in bodies] == [("contradicted", "check:unit")]


@pytest.mark.parametrize(
    ("state", "reason", "disclosure"),
    [
        ("active", "effect_pending", "The release notes are still pending confirmation."),
        ("denied", "effect_denied", "Publishing was denied by policy."),
        ("unknown", "effect_pending", "Whether pub-1 went out is unknown."),
    ],
)
def test_unresolved_or_denied_requested_effect_is_omitted_unless_disclosed(
    state: str, reason: str, disclosure: str
) -> None:
    b = RunBuilder()
    assert omitted(check(b, effect_run(b, state), "I edited the notes.")) == [
        ("effect:pub-1", reason)
    ]
    b = RunBuilder()
    assert omitted(check(b, effect_run(b, state), disclosure)) == []


def test_unresolved_effect_that_was_not_requested_is_an_obligation() -> None:
    b = RunBuilder()
    events = [
        b.effect_intent("draft-9", effect_class="external_draft"),
        b.effect_transition("draft-9", "unknown"),
        b.finalize(None),
    ]
    bodies = check(b, events, "I tidied the module.")
    assert omitted(bodies) == [("effect:draft-9", "effect_unknown")]
    assert bodies[0]["claim_kind"] == "effect"
    b = RunBuilder()
    assert omitted(check(b, events, "The draft's outcome is not confirmed yet.")) == []


def test_contradiction_is_omitted_unless_disclosed() -> None:
    b = RunBuilder()
    events = [
        b.effect_intent("w-1", effect_class="write"),
        b.effect_receipt("w-1", "present"),
        b.effect_receipt("w-1", "absent"),
        b.finalize(None),
    ]
    bodies = check(b, events, "I tidied the module.")
    assert [(v["claim_kind"], v["subject"], v["reason"]) for v in bodies] == [
        ("persistence", "effect:w-1", "effect_receipts_disagree")
    ]
    b = RunBuilder()
    disclosed = "The storage receipts for w-1 conflict."
    assert omitted(check(b, events, disclosed)) == []


def test_a_passing_run_owes_nothing() -> None:
    b = RunBuilder()
    bodies = check(b, complete_run(b), "Done: all tests pass, the draft was created, I saved it.")
    assert [v["verdict"] for v in bodies] == ["supported"] * 4


# -- records, spans, determinism -------------------------------------------------------------

MIXED = (
    "Summary: the task is complete and all tests pass. "
    "I couldn't confirm that the notes were saved; I'll retry if the store comes back. "
    'The reviewer wrote "done" in the ticket.\n'
    "The draft was created, and no external changes were made beyond it. I saved it."
)


def mixed_run(b: RunBuilder) -> list[Any]:
    return [
        b.goal(checks=["unit", "lint"], effects=["draft-1"]),
        b.snapshot(),
        b.receipt("unit", "pass"),
        b.receipt("lint", "fail"),
        b.effect_intent("draft-1", effect_class="external_draft"),
        b.effect_transition("draft-1", "unknown"),
        b.effect_intent("w-1", effect_class="write"),
        b.effect_receipt("w-1", "failed"),
        b.finalize(),
    ]


def test_records_follow_docs_records_md() -> None:
    b = RunBuilder("run-x")
    events = mixed_run(b)
    _, account = fold_events(events)
    assert account is not None
    event = narrative_of(b, MIXED, narrative_id="n-7")
    records = check_narrative(event, account, account["revision"])
    assert len(records) == 5
    for index, record in enumerate(records):
        body = record.body
        assert set(body) == VERDICT_FIELDS
        assert record.kind == "claim_verdict" and record.topic == "outcomes.claim-verdicts.v1"
        key = str(index) if body["verdict"] != "omitted" else f"omission:{body['subject']}"
        assert record.id == body["verdict_id"] == body["claim_id"] == f"run-x:n-7:{key}"
        assert (body["run_id"], body["narrative_id"], body["event_id"]) == (
            "run-x",
            "n-7",
            event.event_id,
        )
        assert body["account_revision"] == account["revision"]
        if body["verdict"] == "omitted":
            assert body["span_start"] is body["span_end"] is body["span_text"] is None
        else:
            assert MIXED[body["span_start"] : body["span_end"]] == body["span_text"]


def test_mixed_narrative_verdicts() -> None:
    b = RunBuilder()
    bodies = check(b, mixed_run(b), MIXED)
    assert [(v["span_text"], v["verdict"], v["subject"], v["reason"]) for v in bodies] == [
        ("the task is complete", "contradicted", None, "status_unresolved"),
        ("all tests pass", "contradicted", "check:lint", "check_failing"),
        ("The draft was created", "contradicted", "effect:draft-1", "effect_pending"),
        ("no external changes were made", "contradicted", "effect:draft-1", "effect_unknown"),
        ("I saved", "contradicted", "effect:w-1", "durability_failed"),
    ]


def test_same_input_gives_the_same_output() -> None:
    b = RunBuilder()
    events = mixed_run(b)
    _, account = fold_events(events)
    event = narrative_of(b, MIXED)
    first = [r.to_json_line() for r in check_narrative(event, account, 1)]
    again = [r.to_json_line() for r in check_narrative(event, account, 1)]
    _, refolded = fold_events(events)
    fresh = [r.to_json_line() for r in check_narrative(event, refolded, 1)]
    assert first == again == fresh
    assert len(first) == len(set(first))


@pytest.mark.parametrize(
    "unit",
    [' "done', " 'a", " \u2018x\u2019y", "` done", "``` done", "done, ", "Done. I saved it. "],
)
def test_a_64_kib_text_is_checked_in_bounded_time(unit: str) -> None:
    """The largest narrative the input limits allow, made of unpaired quotes or thousands
    of claims, never stalls the pipeline (each takes well under a second today)."""
    b = RunBuilder()
    events = mixed_run(b)
    _, account = fold_events(events)
    text = (unit * 65536).encode()[:65536].decode("utf-8", "ignore")  # the 64 KiB limit
    started = time.perf_counter()
    records = check_narrative(narrative_of(b, text), account, 1)
    assert time.perf_counter() - started < 10
    assert all(
        text[r.body["span_start"] : r.body["span_end"]] == r.body["span_text"]
        for r in records
        if r.body["span_start"] is not None
    )


def test_empty_text_against_a_complete_account_gives_nothing() -> None:
    b = RunBuilder()
    assert check(b, complete_run(b), "") == []
