"""Narratives are checked against the revision they name, within the retained window."""

from __future__ import annotations

from outcomes.reducers.engine import REVISIONS_RETAINED
from tests.builders import Replay, RunBuilder, of_kind


def _narrative(b: RunBuilder, names: int, narrative_id: str = "nar-1") -> dict[str, object]:
    return dict(
        b.event(
            "narrative.submitted",
            narrative_id=narrative_id,
            account_revision=names,
            channel="chat",
            text="Done.",
        )
    )


def _run_with_revisions(count: int) -> tuple[RunBuilder, Replay]:
    """A finalized run, then `count - 1` tool attempts that each make a new revision."""
    b = RunBuilder("run-long")
    replay = Replay()
    replay.apply(b.goal(), b.finalize(snapshot=None))
    for index in range(count - 1):
        replay.apply(b.tool_started(action_id=f"a{index}"))
    assert len(replay.accounts) == count
    return b, replay


def test_a_narrative_is_checked_against_the_revision_it_names() -> None:
    b, replay = _run_with_revisions(5)
    outputs = replay.apply(_narrative(b, 2))
    [verdict] = of_kind(outputs, "claim_verdict")
    assert verdict["account_revision"] == 2


def test_a_revision_older_than_the_retained_window_falls_back_to_the_latest() -> None:
    total = REVISIONS_RETAINED + 10
    b, replay = _run_with_revisions(total)
    state = replay.engine.runs["run-long"]
    assert len(state.revisions) == REVISIONS_RETAINED  # memory stays bounded
    outputs = replay.apply(_narrative(b, total - 3))
    assert of_kind(outputs, "claim_verdict")[0]["account_revision"] == total - 3
    outputs = replay.apply(_narrative(b, 1, narrative_id="n2"))
    assert of_kind(outputs, "claim_verdict")[0]["account_revision"] == total
