"""`outcomes demo` end to end: real broker, real worker and sink processes, real chDB.

What ClickHouse holds after the demo must be what `outcomes replay` makes of the very
events the demo published: every run's current account has the content of replay's
final account (bookkeeping fields aside: the stream may number revisions differently,
because events of one run reach the worker from several topics in another order), and
every malformed message is a dead letter.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson
import pytest
from rich.console import Console

from outcomes.devtools.demo import DemoResult, run_demo
from outcomes.devtools.harness import BOOKKEEPING
from outcomes.devtools.workload import SCENARIOS
from outcomes.reducers.engine import Engine
from outcomes.reducers.limits import Limits
from outcomes.sinks import clickhouse
from outcomes.streams.replay import ReplayStats, SourceItem, replay_items

RUNS = 210


def content(account: Mapping[str, Any]) -> dict[str, Any]:
    """An account without the fields that depend on arrival order."""
    return {k: v for k, v in account.items() if k not in BOOKKEEPING}


@pytest.fixture(scope="module")
def demo_run(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DemoResult]:
    """One small demo for the module's assertions (it takes about half a minute)."""
    state = tmp_path_factory.mktemp("demo-state")
    clickhouse.close_all()
    result = run_demo(
        runs=RUNS,
        workers=3,
        malformed=4,
        bootstrap=kafka_bootstrap,
        clickhouse=f"chdb://{state}/chdb",
        state_dir=state,
        idle_seconds=2.0,
        timeout=300.0,
        console=Console(file=io.StringIO(), width=120),
    )
    yield result
    clickhouse.close_all()


def replay_final_accounts(events: list[dict[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """Replay's last account revision per run for the given events."""
    items = [SourceItem("demo", n, orjson.dumps(e), value=e) for n, e in enumerate(events, 1)]
    final: dict[str, Mapping[str, Any]] = {}
    for record in replay_items(items, Engine(), Limits(), ReplayStats()):
        assert record.kind != "dead_letter", record.body
        if record.kind == "account_revision":
            final[record.key] = record.body
    return final


def test_clickhouse_accounts_equal_replay_of_the_published_events(demo_run: DemoResult) -> None:
    events = demo_run.events
    assert len(events) == demo_run.load.events > RUNS * 5
    assert {e["run_id"].rsplit("-", 2)[0] for e in events} == {demo_run.prefix}
    expected = replay_final_accounts(events)
    assert len(expected) == RUNS

    conn = clickhouse.connect(demo_run.dsn)
    rows = conn.rows(
        f"SELECT run_id, account FROM {conn.table('current_accounts')} "
        "WHERE startsWith(run_id, {p:String})",
        {"p": demo_run.prefix + "-"},
    )
    stored = {run_id: orjson.loads(account) for run_id, account in rows}
    assert stored.keys() == expected.keys()
    mismatched = [r for r in expected if content(stored[r]) != content(expected[r])]
    assert not mismatched, f"{len(mismatched)} runs differ from replay, e.g. {mismatched[0]}"


def replay_current_verdicts(events: list[dict[str, Any]]) -> dict[str, tuple[Any, ...]]:
    """Replay's current verdict per claim: its latest settlement, unless withdrawn."""
    items = [SourceItem("demo", n, orjson.dumps(e), value=e) for n, e in enumerate(events, 1)]
    latest: dict[str, Mapping[str, Any]] = {}
    for record in replay_items(items, Engine(), Limits(), ReplayStats()):
        if record.kind == "claim_verdict":
            latest[record.body["claim_id"]] = record.body  # settlements come in order
    return {
        claim: (v["claim_kind"], v["verdict"], v["subject"], v["reason"], v["span_text"])
        for claim, v in latest.items()
        if not v["withdrawn"]
    }


def test_current_claim_verdicts_equal_replay_of_the_published_events(
    demo_run: DemoResult,
) -> None:
    """The worker saw each run's events in another order than replay (several topics);
    verdicts settle, so each claim's current verdict is still replay's, and so are the
    demo's counts (SPEC 6)."""
    expected = replay_current_verdicts(demo_run.events)
    assert expected, "the clean scenario's runs submit a narrative"
    conn = clickhouse.connect(demo_run.dsn)
    rows = conn.rows(
        "SELECT claim_id, claim_kind, verdict, subject, reason, span_text "
        f"FROM {conn.table('current_claim_verdicts')} WHERE startsWith(run_id, {{p:String}})",
        {"p": demo_run.prefix + "-"},
    )
    assert {claim: tuple(rest) for claim, *rest in rows} == expected
    counts: dict[str, int] = {}
    for _, verdict, *_ in expected.values():
        counts[verdict] = counts.get(verdict, 0) + 1
    assert demo_run.summary.claim_verdicts == counts


def test_malformed_messages_are_dead_letters_with_their_bytes(demo_run: DemoResult) -> None:
    conn = clickhouse.connect(demo_run.dsn)
    rows = conn.rows(
        f"SELECT origin_topic, origin_partition, origin_offset, reason, raw "
        f"FROM {conn.table('dead_letters')} FINAL WHERE origin_topic = {{t:String}}",
        {"t": demo_run.malformed[0].topic},
    )
    found = {(t, p, o): (reason, raw) for t, p, o, reason, raw in rows}
    sent = dict(zip(demo_run.malformed, demo_run.load.malformed_raw, strict=True))
    assert len(sent) == 4
    for origin, raw in sent.items():
        reason, stored = found[(origin.topic, origin.partition, origin.offset)]
        assert reason == "undecodable"
        assert (stored.encode() if isinstance(stored, str) else stored) == raw
    assert demo_run.summary.dead_letters == {"undecodable": 4}
    assert demo_run.summary.run_dead_letters == 0


def test_summary_shows_every_scenario_effect(demo_run: DemoResult) -> None:
    summary = demo_run.summary
    assert summary.runs_with_accounts == RUNS
    assert sum(summary.status_mix.values()) == RUNS
    # Seven scenarios, 30 runs each. Late and contradicting receipts usually supersede
    # a first account, but how often depends on the order the worker saw each run's
    # events (several topics), so only "some, not all" is certain.
    assert set(demo_run.load.by_scenario) == set(SCENARIOS)
    assert 0 < summary.superseded_runs < RUNS
    superseded = summary.notifications.get("account.superseded", 0)
    assert RUNS + superseded <= summary.revisions
    assert summary.notifications["account.final"] == RUNS
    assert summary.contradictions.get("effect_receipts_disagree") == RUNS // len(SCENARIOS)
    assert summary.findings.get("withheld_candidate_injected") == RUNS // len(SCENARIOS)
    assert {"complete", "blocked", "unresolved"} <= summary.status_mix.keys()
    assert summary.workflow_mix.get("cancelled") == RUNS // len(SCENARIOS)
    assert summary.showcase is not None
    assert summary.showcase["contradictions"], "the showcase run is the contradicting one"
    # The agents' final messages: some told truthfully, some overclaiming, some silent
    # about a failure (devtools/workload.py, narrated runs).
    verdicts = summary.claim_verdicts
    assert verdicts.get("supported", 0) > 0
    assert verdicts.get("contradicted", 0) > RUNS // 10
    assert verdicts.get("omitted", 0) > 0
    assert summary.contradicted_claims
    assert len({reason for _, _, reason in summary.contradicted_claims}) > 1


def test_rendered_summary_names_status_and_predicates(demo_run: DemoResult) -> None:
    from outcomes.devtools.demo import render_summary

    out = io.StringIO()
    render_summary(Console(file=out, width=80), demo_run)
    text = out.getvalue()
    for needle in ("status", "predicates", "effect_receipts_disagree", "undecodable"):
        assert needle in text
    assert "contradicted" in text and "what agents said" in text
    assert demo_run.prefix in text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_demo_only_counts_its_own_runs(demo_run: DemoResult, kafka_bootstrap: str) -> None:
    # The worker's group started at the end of the topics: nothing older was folded,
    # so every account in ClickHouse under this prefix came from this demo's events.
    published_runs = {e["run_id"] for e in demo_run.events}
    conn = clickhouse.connect(demo_run.dsn)
    rows = conn.rows(
        f"SELECT DISTINCT run_id FROM {conn.table('account_revisions')} "
        "WHERE startsWith(run_id, {p:String})",
        {"p": demo_run.prefix + "-"},
    )
    assert {r[0] for r in rows} == published_runs


def test_unreachable_remote_broker_is_one_clear_error(tmp_path: Path) -> None:
    from outcomes.devtools.demo import DemoError

    with pytest.raises(DemoError, match=r"no Kafka broker answers at 10\.255\.255\.1:9092"):
        run_demo(
            runs=1,
            bootstrap="10.255.255.1:9092",
            clickhouse=f"chdb://{tmp_path}/chdb",
            state_dir=tmp_path,
            console=Console(file=io.StringIO()),
        )
