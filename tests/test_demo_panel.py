"""The demo's run panel: a field the run did not record reads "not recorded", never None."""

from __future__ import annotations

from rich.console import Console

from outcomes.devtools.demo import account_panel


def _rendered(account: dict[str, object]) -> str:
    console = Console(record=True, width=160)
    console.print(account_panel(account))
    return console.export_text()


def test_unrecorded_fields_say_not_recorded() -> None:
    account: dict[str, object] = {
        "run_id": "run-panel",
        "status": "unresolved",
        "workflow_status": "open",
        "revision": 1,
        "goal_revision": None,
        "candidate_snapshot": None,
        "dimensions": {"response_completion": None, "review": None, "verification": "passed"},
        "predicates": [],
        "checks": [{"label": "unit", "state": "pending", "result": None, "tests_executed": None}],
        "effects": [
            {"intent_id": "deploy", "effect_class": None, "state": "requested", "receipts": []}
        ],
    }
    text = _rendered(account)
    assert "None" not in text
    assert "response_completion=not recorded" in text and "review=not recorded" in text
    assert "verification=passed" in text
    assert "goal revision not recorded" in text and "candidate not recorded" in text
