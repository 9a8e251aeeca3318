"""The three sequences the seed documents describe, each end to end through the core."""

from __future__ import annotations

from tests.builders import Replay, RunBuilder, action, artifact, check, effect, of_kind, verdict


def test_five_file_run_goes_from_unresolved_to_complete() -> None:
    """Seed 001: a sensitive config edit makes the earlier pass stale and an external draft
    is unknown; a late receipt confirms the draft; the rerun against the candidate passes."""
    b = RunBuilder("run-five-files")
    replay = Replay()
    replay.apply(
        b.run_started(),
        b.goal(
            deliverables=["src/app.py", "src/retry.py"],
            checks=["unit"],
            effects=["draft-release-notes"],
            target_revision="abc123",
        ),
        b.tool_started("edit-1"),
        b.tool_finished("edit-1", "succeeded"),
        b.snapshot(
            "snap-1",
            [
                artifact("src/app.py", "modified", digest="d1"),
                artifact("src/retry.py", "added", digest="d2"),
                artifact("tests/test_retry.py", "added", digest="d3"),
            ],
            base_revision="abc123",
        ),
        b.receipt("unit", "pass", snapshot="snap-1", tests=42, check_id="chk-1"),
        b.effect_intent("draft-release-notes", effect_class="external_draft"),
        b.effect_transition("draft-release-notes", "active"),
        b.effect_transition("draft-release-notes", "unknown"),
        b.snapshot(
            "snap-2",
            [
                artifact("src/app.py", "modified", digest="d1"),
                artifact("src/retry.py", "added", digest="d2"),
                artifact("tests/test_retry.py", "added", digest="d3"),
                artifact("config/retry.toml", "modified", digest="d4", sensitive=True),
                artifact("CHANGELOG.md", "modified", digest="d5", sensitive=False),
            ],
            base_revision="abc123",
        ),
        b.disposition("completed"),
        b.finalize("snap-2"),
    )
    [first] = replay.accounts
    assert first["status"] == "unresolved"
    assert first["candidate_snapshot"] == "snap-2"
    assert len(first["artifacts"]) == 5
    assert verdict(first, "check:unit") == ("indeterminate", "stale")
    assert check(first, "unit")["state"] == "stale"
    assert verdict(first, "effect:draft-release-notes") == ("indeterminate", "pending")
    assert effect(first, "draft-release-notes")["unresolved"] is True
    assert first["dimensions"]["response_completion"] == "completed"
    assert [n["kind"] for n in replay.notifications] == ["account.final"]

    confirmed = b.effect_receipt("draft-release-notes", "present", origin="provider_query")
    caused = replay.apply(confirmed)
    [second] = of_kind(caused, "account_revision")
    [superseded] = of_kind(caused, "notification")
    assert (second["revision"], second["supersedes"], second["status"]) == (2, 1, "unresolved")
    assert verdict(second, "effect:draft-release-notes") == ("satisfied", "completed")
    assert (superseded["kind"], superseded["notification_id"]) == (
        "account.superseded",
        "run-five-files:2",
    )

    caused = replay.apply(b.receipt("unit", "pass", snapshot="snap-2", tests=43), confirmed)
    [third] = of_kind(caused, "account_revision")
    [final] = of_kind(caused, "notification")
    assert (third["revision"], third["status"]) == (3, "complete")
    assert verdict(third, "check:unit") == ("satisfied", "passing")
    assert (final["previous_status"], final["status"]) == ("unresolved", "complete")
    assert final["completion_automation"] is True


def test_contained_response_keeps_the_successful_action() -> None:
    """Seed 000: successful tool, indeterminate verification, reviewer revision,
    containment: the settled action remains successful."""
    b = RunBuilder("run-contained")
    replay = Replay()
    replay.apply(
        b.goal(actions=["save-1"], checks=["verify"]),
        b.tool_started("save-1", tool="save_note"),
        b.tool_finished("save-1", "succeeded", tool="save_note"),
        b.receipt("verify", "indeterminate", snapshot="none"),
        b.review("revise"),
        b.disposition("contained"),
        b.finalize(None),
    )
    account = replay.account
    assert account is not None
    assert account["dimensions"] == {
        "response_completion": "contained",
        "requested_action_outcome": "succeeded",
        "verification": "indeterminate",
        "review": "revise",
        "durability": None,
    }
    assert action(account, "save-1") == {
        "action_id": "save-1",
        "tool": "save_note",
        "outcome": "succeeded",
    }
    assert verdict(account, "action:save-1") == ("satisfied", "succeeded")
    assert account["status"] == "unresolved"


def test_cancelled_run_keeps_the_failed_action() -> None:
    """Seed 000: failed action, failed verification and review, governed cancellation:
    the settled action remains failed."""
    b = RunBuilder("run-cancelled")
    replay = Replay()
    replay.apply(
        b.goal(actions=["save-1"], checks=["verify"]),
        b.tool_started("save-1", tool="save_note"),
        b.tool_finished("save-1", "failed", tool="save_note", error_class="PermissionDenied"),
        b.receipt("verify", "fail", snapshot="none"),
        b.review("fail"),
        b.disposition("cancelled"),
        b.cancelled("user stopped the run"),
    )
    account = replay.account
    assert account is not None
    assert account["workflow_status"] == "cancelled"
    assert account["dimensions"]["requested_action_outcome"] == "failed"
    assert account["dimensions"]["verification"] == "fail"
    assert account["dimensions"]["review"] == "fail"
    assert action(account, "save-1")["outcome"] == "failed"
    assert verdict(account, "action:save-1") == ("unsatisfied", "failed")
    assert account["status"] == "failed"
