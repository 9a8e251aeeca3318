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


def _demo_result() -> object:
    """A demo's result as a 300-run demo leaves it, the showcase account replayed from
    the contradicting scenario's events (no broker: the rendering alone is tested)."""
    import orjson

    from outcomes.devtools.demo import DemoResult, DemoSummary
    from outcomes.devtools.loadgen import LoadResult, LoadSpec
    from outcomes.devtools.workload import generate_run
    from outcomes.reducers.engine import Engine
    from outcomes.reducers.limits import Limits
    from outcomes.streams.replay import ReplayStats, SourceItem, replay_items

    run_id = "demo-20261207T020000Z-0-000003"
    events = generate_run(run_id, "contradicting_receipts", 0, 0, narrate=True)
    items = [SourceItem("t", n, orjson.dumps(e), value=e) for n, e in enumerate(events, 1)]
    account = None
    for record in replay_items(items, Engine(), Limits(), ReplayStats()):
        if record.kind == "account_revision":
            account = dict(record.body)
    summary = DemoSummary(
        runs_with_accounts=300,
        status_mix={"complete": 129, "unresolved": 86, "blocked": 43, "partially_complete": 42},
        workflow_mix={"finalized": 258, "cancelled": 42},
        revisions=420,
        superseded_runs=98,
        status_changes=61,
        notifications={"account.final": 300, "account.superseded": 120, "claim.superseded": 40},
        contradictions={"effect_receipts_disagree": 43},
        findings={"withheld_candidate_injected": 43},
        claim_verdicts={"supported": 350, "contradicted": 154, "omitted": 27},
        dead_letters={"undecodable": 3},
        showcase=account,
        contradicted_claims=[
            (run_id, "The task is complete", "status_unresolved"),
            (
                "demo-20261207T020000Z-0-000004",
                "I published the release notes to the project site and told everyone",
                "effect_denied",
            ),
        ],
    )
    load = LoadResult(LoadSpec(runs=300), runs=300)
    return DemoResult(
        "demo-20261207T020000Z", "app", "sink", "chdb:///home/me/.outcomes/chdb", load, summary
    )


def test_summary_fits_80_columns() -> None:
    from outcomes.devtools.demo import DemoResult, render_summary

    result = _demo_result()
    assert isinstance(result, DemoResult)
    console = Console(record=True, width=80)
    render_summary(console, result)
    lines = console.export_text().splitlines()
    too_long = [line for line in lines if len(line) > 80]
    assert not too_long, too_long
    # Keys and titles stay on one line (cut with an ellipsis at worst, never folded).
    for whole in (
        "claim verdicts (now)",
        "dead letters (malformed)",
        "effect_receipts_disagree",
        "withheld_candidate_injected",
        "partially_complete",
        "status_unresolved",
        "demo-20261207T020000Z-0-000004",
    ):
        assert any(whole in line for line in lines), whole
    # Every count table row keeps its count on the row of its key.
    assert any("contradicted" in line and "154" in line for line in lines)
    assert any("omitted" in line and "27" in line for line in lines)


def test_summary_in_a_narrower_terminal_fits_it() -> None:
    from outcomes.devtools.demo import DemoResult, render_summary

    result = _demo_result()
    assert isinstance(result, DemoResult)
    console = Console(record=True, width=64)
    render_summary(console, result)
    assert max(len(line) for line in console.export_text().splitlines()) <= 64


def test_browser_command_names_what_differs_from_the_default() -> None:
    from pathlib import Path

    from outcomes.common.settings import Settings
    from outcomes.devtools.demo import browser_command

    default = Settings.load(env={}, state_dir=Path("/home/me/.outcomes"))
    assert browser_command(default.clickhouse_dsn, default.bootstrap, default=default) == (
        "outcomes ui"
    )
    assert browser_command("chdb:///tmp/demo state/chdb", default.bootstrap, default=default) == (
        "outcomes ui --clickhouse 'chdb:///tmp/demo state/chdb'"
    )
    assert browser_command(default.clickhouse_dsn, "10.0.0.5:9092", default=default) == (
        "outcomes ui --bootstrap 10.0.0.5:9092"
    )
