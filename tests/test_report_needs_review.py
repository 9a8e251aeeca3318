"""The report shows a `needs_review` verdict apart (reports/status.py, reports/html.py):
in words of its own ("needs review"), in a tone of its own (never the failure style),
in a section of its own, and counted apart from the contradictions."""

from __future__ import annotations

from typing import Any

import pytest

from outcomes.reports.html import page
from outcomes.reports.model import RunView
from outcomes.reports.report import markdown
from outcomes.reports.status import (
    FAILED,
    REVIEW,
    VERDICT_COPY,
    render,
    status_block,
    then_and_now,
)

RUN = "run-q"
TEXT = "All tests pass. Done, I think."
CUTOFF = "2026-11-30T10:00:00.000000Z"


def revision(number: int, status: str) -> dict[str, Any]:
    return {
        "run_id": RUN,
        "revision": number,
        "revision_id": f"{RUN}:{number}",
        "supersedes": number - 1 if number > 1 else None,
        "status": status,
        "workflow_status": "finalized",
        "observation_cutoff": CUTOFF,
        "trigger_event_id": f"e{number}",
        "state_revision": "x",
        "schema_version": 1,
        "assembler_version": "1.0.0",
        "goal_revision": 1,
        "candidate_snapshot": "s",
        "dimensions": {"verification": "fail"},
        "predicates": [
            {"id": "check:unit", "required": True, "state": "unsatisfied", "reason": "failing",
             "evidence": ["e1"]},
        ],
        "artifacts": [],
        "checks": [{"label": "unit", "state": "failing", "result": "fail", "tests_executed": 3,
                    "candidate_snapshot": "s", "check_id": "c1", "required": True}],
        "effects": [],
        "actions": [],
        "contradictions": [],
        "provenance_findings": [],
        "changes": [],
    }  # fmt: skip


def verdict(
    key: str, value: str, reason: str, span: tuple[int, int] | None, **fields: Any
) -> dict[str, Any]:
    claim = f"{RUN}:n1:{key}"
    settlement = fields.pop("settlement", 1)
    return {
        "verdict_id": claim if settlement == 1 else f"{claim}@{settlement}",
        "claim_id": claim,
        "settlement": settlement,
        "supersedes": None if settlement == 1 else claim,
        "withdrawn": False,
        "run_id": RUN,
        "narrative_id": "n1",
        "event_id": "e-n1",
        "account_revision": 1,
        "claim_kind": "verification",
        "verdict": value,
        "subject": None,
        "span_start": span[0] if span else None,
        "span_end": span[1] if span else None,
        "span_text": TEXT[span[0] : span[1]] if span else None,
        "reason": reason,
        "supported": None,
        **fields,
    }


CONTRADICTED = verdict(
    "0", "contradicted", "check_failing", (0, 14), subject="check:unit",
    supported="the unit check failed on s",
)  # fmt: skip
REVIEWED = verdict("1", "needs_review", "hedged", (16, 20), claim_kind="completion")
NARRATIVE = {
    "event_id": "e-n1",
    "run_id": RUN,
    "type": "narrative.submitted",
    "occurred_at": CUTOFF,
    "source": "test",
    "narrative_id": "n1",
    "account_revision": None,
    "channel": "chat",
    "text": TEXT,
}


def view(*verdicts: dict[str, Any]) -> RunView:
    return RunView.of(
        RUN, [revision(1, "failed")], verdicts or [CONTRADICTED, REVIEWED], [NARRATIVE]
    )


def test_the_block_labels_needs_review_apart_and_counts_it_apart() -> None:
    block = status_block(view())
    claims = {c["verdict"]: (c["state_label"], c["tone"]) for c in block["claims"]}
    assert claims == {
        "contradicted": ("contradicted", FAILED),
        "needs_review": ("needs review", REVIEW),
    }
    assert REVIEW != FAILED and VERDICT_COPY["needs_review"] == ("needs review", REVIEW)
    assert block["claim_counts"] == {
        "supported": 0,
        "contradicted": 1,
        "omitted": 0,
        "unverifiable": 0,
        "needs_review": 1,
    }


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_the_rendered_block_has_a_section_for_review(fmt: str) -> None:
    out = render(status_block(view()), fmt)
    claims, _, review = out.partition("Claims for review")
    assert review, out
    # The claims table holds the decided claim only; the review section the other.
    assert "“All tests pass”" in claims and "“Done”" not in claims
    [row] = [line for line in review.splitlines() if "“Done”" in line]
    assert "hedged" in row and "completion" in row and "contradicted" not in row
    assert "neither supported nor contradicted" in review
    assert "Verdicts: 1 contradicted, 1 needs review." in claims
    if fmt == "markdown":
        assert "**needs review**" not in out and "**contradicted**" in claims


def test_no_review_section_when_nothing_needs_review() -> None:
    out = render(status_block(view(CONTRADICTED)), "text")
    assert "Claims for review" not in out and "needs review" not in out


def test_then_and_now_names_a_claim_that_moved_to_needs_review() -> None:
    later = verdict("0", "needs_review", "hedged", (0, 14), settlement=2, account_revision=2)
    runs = RunView.of(
        RUN, [revision(1, "failed"), revision(2, "failed")], [CONTRADICTED, later], [NARRATIVE]
    )
    diffs = then_and_now(runs, 1)["differences"]
    assert {"item": "n1 “All tests pass”", "then": "contradicted", "now": "needs review"} in diffs


def test_the_page_marks_it_in_its_own_tone_and_lists_it_for_review() -> None:
    html = page(view())
    assert (
        '<mark id="claim-run-q-n1-1" class="tone-review">Done</mark>'
        '<span class="tag tone-review">needs review</span>'
    ) in html
    assert '<mark id="claim-run-q-n1-0" class="tone-failed">All tests pass</mark>' in html
    assert "<caption>Claims for review</caption>" in html
    assert html.count("tone-review") >= 3  # the mark, its tag and the claim map's state
    assert ".state.tone-review" in html  # styled, and not with the failure colour
    review_rules = [line for line in html.splitlines() if "tone-review" in line and "{" in line]
    assert review_rules and not any("--failed" in line for line in review_rules)


def test_report_md_claim_maps_use_the_verdict_words() -> None:
    """report.md's claim tables say "needs review", now and as the first verdict, never
    the value `needs_review`."""
    later = verdict("0", "needs_review", "hedged", (0, 14), settlement=2, account_revision=2)
    runs = RunView.of(
        RUN,
        [revision(1, "failed"), revision(2, "failed")],
        [CONTRADICTED, later, REVIEWED],
        [NARRATIVE],
    )
    maps = markdown(runs)[markdown(runs).index("## Narratives") :]
    rows = {
        claim: line.split(" | ")
        for line in maps.splitlines()
        for claim in ("All tests pass", "Done")
        if f"“{claim}”" in line
    }
    # | claim | kind | verdict now | judged on | first verdict | the account supports |
    assert rows["All tests pass"][2] == "needs review"
    assert rows["All tests pass"][4].startswith("contradicted at ")
    assert rows["Done"][2] == "needs review"
    assert rows["Done"][4].startswith("needs review at ")
    assert "needs\\_review" not in maps and "needs_review" not in maps
