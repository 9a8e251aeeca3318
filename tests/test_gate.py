"""SPEC 8: the pre-display gate's judgement (reducers/gate.py), on the five-file run.

The account is the five-file sample folded up to its first revision (before the late
draft receipt and the rerun of the unit tests): the unit check is stale on the final
candidate and the external draft's outcome is unknown.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from outcomes.reducers.gate import (
    MAX_TEXT_CHARS,
    GateInputError,
    MappedClaim,
    check,
    contained_answer,
    parse_claim_map,
    state_block,
)
from tests.builders import account_of, five_file_events


def _events() -> list[dict[str, Any]]:
    return five_file_events()


@pytest.fixture(scope="module")
def before() -> Mapping[str, Any]:
    """Revision 1: every event up to finalize.requested."""
    events = _events()
    last = next(i for i, e in enumerate(events) if e["type"] == "finalize.requested")
    return account_of(events[: last + 1])


@pytest.fixture(scope="module")
def after() -> Mapping[str, Any]:
    """The latest revision: the draft's receipt and the rerun arrived; the run is complete."""
    return account_of(_events())


OVERCLAIM = "All five files changed, tests pass, and the release-notes draft was sent."
TRUTHFUL = (
    "I changed five files. The unit tests are stale: they were not re-run after the "
    "config edit. The release-notes draft is not confirmed; its outcome is unknown."
)


def test_an_overclaim_is_sent_back_for_repair_naming_each_fact(before: Mapping) -> None:
    result = check(before, OVERCLAIM)
    assert result.decision == "repair"
    said = {c.text for c in result.contradicted}
    assert said == {"tests pass", "the release-notes draft was sent"}
    assert result.instruction is not None
    assert "has not passed on the final candidate snap-2" in result.instruction
    assert "its outcome is unknown" in result.instruction
    assert result.state_block in result.instruction
    assert result.contained is None


def test_a_truthful_repair_passes(before: Mapping) -> None:
    result = check(before, TRUTHFUL, attempt=2)
    assert result.decision == "pass"
    assert result.contradicted == ()
    assert result.instruction is None and result.contained is None


def test_a_pass_carries_the_appendix_of_what_it_left_out(before: Mapping) -> None:
    result = check(before, "I changed five files.", attempt=2)
    assert result.decision == "pass"
    subjects = {o.entries for o in result.omissions}
    assert ("check:unit",) in subjects and ("effect:draft-release-notes",) in subjects
    assert result.appendix is not None
    assert "the unit check has not passed" in result.appendix
    assert "draft-release-notes" in result.appendix


def test_a_repaired_answer_that_still_contradicts_is_contained(before: Mapping) -> None:
    result = check(before, "Sorry for the confusion: the draft was sent.", attempt=2)
    assert result.decision == "contain"
    assert result.contained == contained_answer(before)
    assert "Status: unresolved." in result.contained
    assert "its outcome is unknown" in result.contained
    assert "was sent" not in result.contained


def test_the_same_answer_passes_once_the_account_supports_it(after: Mapping) -> None:
    result = check(after, "Tests pass and the release-notes draft was sent.")
    assert result.decision == "pass"
    assert {c.verdict for c in result.claims} == {"supported"}


def test_a_needs_review_claim_does_not_block(before: Mapping) -> None:
    result = check(before, "It looks like the job completed.")
    assert result.decision == "pass"


def test_a_mapped_claim_is_judged_against_exactly_its_entries(before: Mapping) -> None:
    text = "The draft was handed over."  # no effect word the prose reader would judge
    cmap = (MappedClaim(0, len(text), "effect", ("effect:draft-release-notes",)),)
    result = check(before, text, cmap)
    assert result.decision == "repair"
    (claim,) = result.claims
    assert claim.source == "map"
    assert claim.entries == ("effect:draft-release-notes",)
    assert claim.reason == "effect_pending"


def test_a_mapped_claim_on_entries_that_hold_is_supported(before: Mapping) -> None:
    text = "src/retry.py was added."
    cmap = (MappedClaim(0, len(text), "persistence", ("artifact:src/retry.py",)),)
    result = check(before, text, cmap)
    (claim,) = result.claims
    assert (claim.verdict, claim.source) == ("supported", "map")


def test_a_receipt_entry_stands_for_its_check(before: Mapping) -> None:
    text = "The suite passed."
    cmap = (MappedClaim(0, len(text), "verification", ("receipt:chk-1",)),)
    (claim,) = check(before, text, cmap).claims
    assert (claim.verdict, claim.reason) == ("contradicted", "check_stale")


def test_prose_outside_the_map_is_still_read(before: Mapping) -> None:
    text = "src/retry.py was added. All tests pass."
    cmap = (MappedClaim(0, 23, "persistence", ("artifact:src/retry.py",)),)
    result = check(before, text, cmap)
    sources = {(c.source, c.verdict) for c in result.claims}
    assert ("map", "supported") in sources
    assert ("prose", "contradicted") in sources
    assert result.decision == "repair"


@pytest.mark.parametrize(
    "entry",
    ["effect:someone-elses-draft", "check:lint", "artifact:src/other.py", "receipt:chk-9"],
)
def test_an_entry_the_account_does_not_hold_is_refused(before: Mapping, entry: str) -> None:
    cmap = (MappedClaim(0, 4, "effect", (entry,)),)
    with pytest.raises(GateInputError) as err:
        check(before, "Done.", cmap)
    assert err.value.code == "unknown_entry"


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ({"start": 0}, "list"),
        ([{"start": 0, "end": 99, "kind": "effect", "entries": []}], "start and end"),
        ([{"start": 3, "end": 2, "kind": "effect", "entries": []}], "start and end"),
        ([{"start": 0, "end": 2, "kind": "magic", "entries": []}], "kind"),
        ([{"start": 0, "end": 2, "kind": "effect", "entries": "effect:x"}], "entries"),
        ([{"start": 0, "end": 2, "kind": "effect", "entries": ["draft-1"]}], "is not one of"),
        ([{"start": True, "end": 2, "kind": "effect", "entries": []}], "start and end"),
    ],
)
def test_a_malformed_claim_map_is_one_clear_error(raw: object, why: str) -> None:
    with pytest.raises(GateInputError) as err:
        parse_claim_map(raw, "Done. Sent.")
    assert err.value.code == "bad_claim_map"
    assert why in str(err.value)


def test_a_text_over_the_limit_is_refused(before: Mapping) -> None:
    with pytest.raises(GateInputError) as err:
        check(before, "x" * (MAX_TEXT_CHARS + 1))
    assert err.value.code == "text_too_long"


def test_no_account_yet_never_passes_a_claim_as_supported() -> None:
    result = check(None, "All tests pass and the PR is merged.")
    assert all(c.verdict != "supported" for c in result.claims)
    assert "nothing is confirmed" in state_block(None)


def test_the_state_block_is_delimited_bounded_and_deterministic(before: Mapping) -> None:
    block = state_block(before)
    assert block.startswith('<outcome-account run="run-five-files" revision="1">')
    assert block.endswith("</outcome-account>")
    assert "- unit: stale, 42 tests, on snap-1" in block
    assert "- draft-release-notes (external_draft): unknown, no receipt" in block
    assert block == state_block(dict(before))
    many = dict(before)
    many["artifacts"] = [{"path": f"src/f{i:03}.py", "change": "added"} for i in range(40)]
    assert "… and 28 more" in state_block(many)


def test_the_same_inputs_give_the_same_result(before: Mapping) -> None:
    assert check(before, OVERCLAIM) == check(before, OVERCLAIM)
