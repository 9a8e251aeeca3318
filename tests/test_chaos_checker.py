"""The ClickHouse checker's rules on snapshots made by hand (no Kafka, no ClickHouse):
each rule passes on what the reducers produce and names the exact ids it breaks on."""

from __future__ import annotations

import orjson
import pytest

from outcomes.devtools.chaos.checker import (
    DeadLetterRow,
    Inputs,
    Snapshot,
    check,
    check_accounts,
    check_copies,
    check_dead_letters,
    check_notifications,
    check_purged,
    check_revisions,
)
from outcomes.devtools.harness import output_codec, workload
from outcomes.reducers.engine import Engine
from outcomes.reducers.validate import parse_event

PREFIX = "tcheck-0123456789"


def _snapshot(events: list[dict[str, object]]) -> Snapshot:
    """What a faithful sink would have stored for `events` folded in this order."""
    codec = output_codec()
    engine = Engine()
    accounts: dict[str, dict[int, tuple[int | None, str]]] = {}
    notifications = {}
    for event in events:
        for record in engine.apply(parse_event(event)):
            body = codec.decode(codec.encode_output(record)).value
            assert isinstance(body, dict)
            if record.kind == "account_revision":
                stored = orjson.dumps(body, option=orjson.OPT_SORT_KEYS).decode()
                accounts.setdefault(body["run_id"], {})[body["revision"]] = (
                    body["supersedes"],
                    stored,
                )
            elif record.kind == "notification":
                notifications[(body["run_id"], body["revision"])] = (
                    body["kind"],
                    body["supersedes"],
                    body["status"],
                    body["previous_status"],
                )
    rows = sum(len(r) for r in accounts.values())
    return Snapshot(
        counts={"account_revisions": (rows, rows)},
        repeated={},
        accounts=accounts,
        notifications=notifications,
        dead_letters=[],
        purged=frozenset(),
        purged_rows={},
    )


@pytest.fixture(scope="module")
def events() -> list[dict[str, object]]:
    return workload(12, PREFIX, padding=1, seed=7)


def test_a_faithful_snapshot_passes_every_rule(events: list[dict[str, object]]) -> None:
    report = check(Inputs(PREFIX, tuple(events)), _snapshot(events))
    assert report.ok, str(report)
    assert (report.lost, report.duplicated, report.differing) == (0, 0, 0)
    assert report.lines()[0].startswith("PASS accounts: 12 runs")


def test_duplicated_inputs_change_no_expectation(events: list[dict[str, object]]) -> None:
    doubled = events + list(reversed(events))
    assert check(Inputs(PREFIX, tuple(doubled)), _snapshot(events)).ok


def test_lost_extra_and_different_runs_are_named(events: list[dict[str, object]]) -> None:
    snapshot = _snapshot(events)
    runs = sorted(snapshot.accounts)
    gone, changed = runs[0], runs[1]
    del snapshot.accounts[gone]
    revisions = snapshot.accounts[changed]
    last = max(revisions)
    account = orjson.loads(revisions[last][1])
    account["status"] = "tampered"
    revisions[last] = (revisions[last][0], orjson.dumps(account).decode())
    snapshot.accounts[f"{PREFIX}-stranger"] = {1: (None, revisions[last][1])}
    result = check_accounts(Inputs(PREFIX, tuple(events)), snapshot)
    assert result.lost == (gone,)
    assert result.different == (changed,)
    assert result.extra == (f"{PREFIX}-stranger",)
    assert result.line().startswith("FAIL accounts: 12 runs")
    assert gone in result.line() and changed in result.line()


def test_a_revision_gap_is_named(events: list[dict[str, object]]) -> None:
    snapshot = _snapshot(events)
    run = next(r for r, revs in sorted(snapshot.accounts.items()) if len(revs) > 1)
    del snapshot.accounts[run][1]
    result = check_revisions(snapshot)
    assert len(result.different) == 1 and result.different[0].startswith(f"{run}:")


def test_physical_copies_are_named_by_table_and_row() -> None:
    snapshot = Snapshot(
        counts={"notifications": (5, 4), "dead_letters": (3, 3)},
        repeated={"notifications": ["run-1:2"]},
        accounts={},
        notifications={},
        dead_letters=[],
        purged=frozenset(),
        purged_rows={},
    )
    result = check_copies(snapshot)
    assert result.extra == ("notifications:run-1:2",)
    assert "FAIL physical copies" in result.line()


def test_a_missing_or_surplus_notification_is_named(events: list[dict[str, object]]) -> None:
    snapshot = _snapshot(events)
    run = sorted(snapshot.accounts)[0]
    del snapshot.notifications[(run, 1)]
    snapshot.notifications[(run, 99)] = ("account.superseded", 98, "complete", "complete")
    result = check_notifications(snapshot)
    assert result.lost == (f"{run}:1",)
    assert result.extra == (f"{run}:99",)


def test_each_poison_record_needs_exactly_one_dead_letter() -> None:
    poison = frozenset({("outcomes.tool.v1", 0, 5), ("outcomes.tool.v1", 1, 9)})
    snapshot = Snapshot(
        counts={},
        repeated={},
        accounts={},
        notifications={},
        dead_letters=[
            DeadLetterRow("dl-a", ("outcomes.tool.v1", 0, 5), None, 2),
            DeadLetterRow("dl-b", ("run-log", 3, 1), f"{PREFIX}-000001", 1),
        ],
        purged=frozenset(),
        purged_rows={},
    )
    result = check_dead_letters(Inputs(PREFIX, (), poison), snapshot)
    assert result.lost == ("outcomes.tool.v1:1:9",)
    assert result.extra == ("outcomes.tool.v1:0:5#2", "dl-b")


def test_rows_of_a_purged_run_are_extra(events: list[dict[str, object]]) -> None:
    snapshot = _snapshot(events)
    run = sorted(snapshot.accounts)[0]
    purged = Snapshot(
        counts=snapshot.counts,
        repeated={},
        accounts=snapshot.accounts,
        notifications=snapshot.notifications,
        dead_letters=[],
        purged=frozenset({run}),
        purged_rows={"account_revisions": [run]},
    )
    result = check_purged(Inputs(PREFIX, tuple(events), purged=frozenset({run})), purged)
    assert result.extra == (f"account_revisions:{run}",)
    # The purged run is not expected among the accounts either way.
    assert check_accounts(Inputs(PREFIX, tuple(events), purged=frozenset({run})), purged).ok
