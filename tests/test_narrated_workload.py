"""The demo's narrated workload: each agent's final message is written from its run's own
events, and a share of them overclaims or leaves a failure out, so the claim checker has
something to contradict and to find missing (SPEC 6). Judged here by the real reducers
in process, as `outcomes replay` would."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import orjson

from outcomes.devtools.workload import SCENARIOS, generate_run, narrative_for
from outcomes.reducers.engine import Engine
from outcomes.reducers.limits import Limits
from outcomes.streams.replay import ReplayStats, SourceItem, replay_items

RUNS = 140


def current_verdicts(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each claim's latest settlement after every event of the run, withdrawn ones aside."""
    items = [SourceItem("t", n, orjson.dumps(e), value=e) for n, e in enumerate(events, 1)]
    latest: dict[str, dict[str, Any]] = {}
    for record in replay_items(items, Engine(), Limits(), ReplayStats()):
        assert record.kind != "dead_letter", record.body
        if record.kind == "claim_verdict":
            latest[record.body["claim_id"]] = dict(record.body)
    return [v for v in latest.values() if not v["withdrawn"]]


def narrated_runs() -> list[tuple[str, list[dict[str, Any]]]]:
    names = list(SCENARIOS)
    return [
        (
            names[i % len(names)],
            generate_run(f"demo-t-0-{i:06d}", names[i % len(names)], 0, 0, narrate=True),
        )
        for i in range(RUNS)
    ]


def narrative(events: list[dict[str, Any]]) -> str:
    texts = [e["text"] for e in events if e["type"] == "narrative.submitted"]
    assert len(texts) == 1
    return str(texts[0])


def test_every_narrated_run_ends_with_one_final_message() -> None:
    for _, events in narrated_runs():
        text = narrative(events)
        assert text.endswith(".")


def test_narrated_runs_are_deterministic() -> None:
    first = generate_run("demo-t-0-000007", "clean", 2, 5, narrate=True)
    again = generate_run("demo-t-0-000007", "clean", 2, 5, narrate=True)
    assert orjson.dumps(first) == orjson.dumps(again)


def test_unnarrated_runs_keep_their_single_canned_message() -> None:
    """Benchmarks and other tests use the plain workload; it is what it was."""
    for index, name in enumerate(SCENARIOS):
        events = generate_run(f"run-0-{index:06d}", name)
        texts = [e["text"] for e in events if e["type"] == "narrative.submitted"]
        assert texts == (["Done: the change is in and all tests pass."] if name == "clean" else [])


def test_verdicts_span_supported_contradicted_and_omitted() -> None:
    counts: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    for _, events in narrated_runs():
        for v in current_verdicts(events):
            counts[v["verdict"]] += 1
            if v["verdict"] != "supported":
                reasons[v["reason"]] += 1
    total = sum(counts.values())
    assert counts["supported"] > total / 3
    assert counts["contradicted"] > total / 10
    assert counts["omitted"] > 0
    # Contradictions of several sorts: a check, an effect, the run's status.
    assert {"effect_denied", "durability_indeterminate", "check_missing"} <= reasons.keys()
    assert any(r.startswith("status_") for r in reasons)


def test_messages_vary() -> None:
    texts = {narrative(events) for _, events in narrated_runs()}
    assert len(texts) > RUNS / 4


def test_a_run_without_trouble_is_told_truthfully() -> None:
    """A provenance run ends well: whatever its agent says is supported."""
    for scenario, events in narrated_runs():
        if scenario == "provenance_withheld":
            verdicts = current_verdicts(events)
            assert verdicts and {v["verdict"] for v in verdicts} == {"supported"}


def test_every_troubled_clean_run_says_it_claims_it_or_leaves_it_out() -> None:
    """A clean run whose check failed, whose lint never ran or whose email is unknown:
    its agent says so, or the checker contradicts a claim, or finds the failure left out."""
    troubled = 0
    for scenario, events in narrated_runs():
        if scenario != "clean":
            continue
        failed = any(e["type"] == "verification.receipt" and e["result"] == "fail" for e in events)
        unknown = any(e["type"] == "effect.transition" and e["state"] == "unknown" for e in events)
        goal = next(e for e in events if e["type"] == "goal.revised")
        missing = len(goal["required_checks"]) > 1
        if not (failed or unknown or missing):
            continue
        troubled += 1
        text = narrative(events)
        said = any(
            w in text for w in ("fail", "not run", "did not run", "no confirmation", "do not know")
        )
        verdicts = {v["verdict"] for v in current_verdicts(events)}
        assert said or verdicts & {"contradicted", "omitted"}, text
    assert troubled > 5


def _events(result: str, effect_state: str | None) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [
        {"type": "goal.revised", "required_checks": [{"label": "unit", "scope": "suite"}]},
        {
            "type": "workspace.snapshot",
            "artifacts": [{"path": "src/app.py"}, {"path": "src/io.py"}],
        },
        {
            "type": "verification.receipt",
            "label": "unit",
            "result": result,
            "candidate_snapshot": "snap-1",
            "tests_executed": 12,
        },
    ]
    if effect_state is not None:
        events += [
            {"type": "effect.intent", "intent_id": "email-1", "effect_class": "message"},
            {"type": "effect.transition", "intent_id": "email-1", "state": effect_state},
        ]
    events.append({"type": "finalize.requested", "candidate_snapshot": "snap-1"})
    return events


def test_the_message_follows_the_events() -> None:
    """Same draw, different events, different message: the words come from the run."""
    passed = narrative_for(_events("pass", None), random.Random(3))
    assert "`src/app.py` and `src/io.py`" in passed
    assert "12" in passed or "pass" in passed
    told = Counter[str]()
    for seed in range(40):
        text = narrative_for(_events("fail", "unknown"), random.Random(seed))
        if "fail" in text and ("no confirmation" in text or "do not know" in text):
            told["truthful"] += 1
        elif "pass" in text or "green" in text:
            told["overclaim"] += 1
            assert "sent the email to the team" in text or "has been sent to the team" in text
        else:
            told["silent"] += 1
            assert "email" not in text and "test" not in text
    assert told.keys() == {"truthful", "overclaim", "silent"}, told
