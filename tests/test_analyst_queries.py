"""Every SQL block of docs/analyst-queries.md runs and gives the answer the sample implies.

Expected answers are derived from the sample records in Python, not copied from a run.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from outcomes.devtools import samples
from outcomes.sinks import clickhouse
from outcomes.sinks.query import QueryResult, run_query
from outcomes.sinks.writer import ClickHouseWriter

pytestmark = pytest.mark.clickhouse
DOC = Path(__file__).resolve().parent.parent / "docs" / "analyst-queries.md"
RECORDS = samples.sample_records()


def blocks() -> dict[str, str]:
    """name -> SQL of every ```sql block (first line `-- name: <name>`)."""
    found: dict[str, str] = {}
    for sql in re.findall(r"```sql\n(.*?)```", DOC.read_text(), re.DOTALL):
        match = re.match(r"-- name: (\w+)\n", sql)
        assert match, f"SQL block without a `-- name:` line: {sql[:60]!r}"
        found[match.group(1)] = sql
    return found


def accounts() -> list[dict[str, Any]]:
    return [dict(r.body) for r in RECORDS if r.kind == "account_revision"]


def current() -> dict[str, dict[str, Any]]:
    newest: dict[str, dict[str, Any]] = {}
    for a in accounts():
        if a["revision"] > newest.get(a["run_id"], {"revision": 0})["revision"]:
            newest[a["run_id"]] = a
    return newest


def rows(result: QueryResult) -> list[dict[str, Any]]:
    return [dict(zip(result.columns, r, strict=True)) for r in result.rows]


def check_status_mix(r: QueryResult) -> None:
    want = Counter(a["status"] for a in current().values())
    assert {x["status"]: x["runs"] for x in rows(r)} == want


def check_superseded_runs(r: QueryResult) -> None:
    by_run: dict[str, list[dict[str, Any]]] = {}
    for a in accounts():
        by_run.setdefault(a["run_id"], []).append(a)
    want = {
        run: (len(revs), min(revs, key=lambda a: a["revision"])["status"], current()[run]["status"])
        for run, revs in by_run.items()
        if len(revs) > 1
    }
    got = {x["run_id"]: (x["revisions"], x["first_status"], x["current_status"]) for x in rows(r)}
    assert got == want and got


def check_status_changes(r: QueryResult) -> None:
    status = {(a["run_id"], a["revision"]): a["status"] for a in accounts()}
    notified = {(x.body["run_id"], x.body["revision"]) for x in RECORDS if x.kind == "notification"}
    want = [
        (run, rev, status[(run, rev - 1)], s, True)
        for (run, rev), s in sorted(status.items())
        if rev > 1 and status[(run, rev - 1)] != s
    ]
    got = [
        (x["run_id"], x["revision"], x["previous_status"], x["status"], x["notified"])
        for x in rows(r)
    ]
    assert got == want and got
    assert all((run, rev) in notified for run, rev, *_ in got)


def check_contradictions_by_kind(r: QueryResult) -> None:
    kinds = Counter(c["kind"] for a in current().values() for c in a["contradictions"])
    assert {x["kind"]: x["contradictions"] for x in rows(r)} == kinds and kinds


def check_stale_or_missing_checks(r: QueryResult) -> None:
    want = sorted(
        (a["run_id"], p["id"].removeprefix("check:"), p["reason"])
        for a in current().values()
        for p in a["predicates"]
        if p["id"].startswith("check:") and p["required"] and p["reason"] in ("stale", "missing")
    )
    assert [(x["run_id"], x["label"], x["reason"]) for x in rows(r)] == want and want


def check_unresolved_effects(r: QueryResult) -> None:
    want = sorted(
        (a["run_id"], e["intent_id"], e["state"])
        for a in current().values()
        for e in a["effects"]
        if e["unresolved"]
    )
    assert [(x["run_id"], x["intent_id"], x["state"]) for x in rows(r)] == want and want


def check_provenance_findings(r: QueryResult) -> None:
    want = sorted(
        (a["run_id"], f["kind"], f["subject"])
        for a in current().values()
        for f in a["provenance_findings"]
    )
    assert [(x["run_id"], x["kind"], x["subject"]) for x in rows(r)] == want and want


def check_withheld_candidates_injected(r: QueryResult) -> None:
    prov = [x.body for x in RECORDS if x.kind == "provenance_row"]
    withheld = {
        (p["run_id"], p["retrieval"]["retrieval_id"], p["retrieval"]["candidate_id"])
        for p in prov
        if p["row_type"] == "retrieval_candidate" and p["retrieval"]["decision"] == "withheld"
    }
    want = sorted(
        (p["run_id"], p["injection"]["injection_id"], c)
        for p in prov
        if p["row_type"] == "context_injection"
        for c in p["injection"]["candidate_ids"]
        if (p["run_id"], p["injection"]["retrieval_id"], c) in withheld
    )
    assert [(x["run_id"], x["injection_id"], x["candidate_id"]) for x in rows(r)] == want and want


def check_blockers_by_reason(r: QueryResult) -> None:
    want = Counter(
        (p["id"].split(":", 1)[0], p["state"], p["reason"])
        for a in current().values()
        for p in a["predicates"]
        if p["required"] and p["state"] != "satisfied"
    )
    got = {(x["predicate_kind"], x["state"], x["reason"]): x["predicates"] for x in rows(r)}
    assert got == want and want


def current_verdicts() -> list[dict[str, Any]]:
    """Each claim's latest settlement, unless it withdrew an omission."""
    latest: dict[str, dict[str, Any]] = {}
    for x in RECORDS:
        if x.kind == "claim_verdict":
            body = dict(x.body)
            if body["settlement"] > latest.get(body["claim_id"], {"settlement": 0})["settlement"]:
                latest[body["claim_id"]] = body
    return [v for v in latest.values() if not v["withdrawn"]]


def check_unsupported_claims(r: QueryResult) -> None:
    want = sorted(
        (v["run_id"], v["narrative_id"], v["verdict"], v["span_text"] or "")
        for v in current_verdicts()
        if v["verdict"] in ("contradicted", "omitted")
    )
    got = sorted(
        (x["run_id"], x["narrative_id"], x["verdict"], x["span_text"] or "") for x in rows(r)
    )
    assert got == want and want
    # run-a's claims settled again: its contradiction and omission are no longer current.
    assert {x["run_id"] for x in rows(r)} == {"run-b"}


def check_claims_for_review(r: QueryResult) -> None:
    want = sorted(
        (v["run_id"], v["narrative_id"], v["span_text"] or "")
        for v in current_verdicts()
        if v["verdict"] == "needs_review"
    )
    got = sorted((x["run_id"], x["narrative_id"], x["span_text"] or "") for x in rows(r))
    assert got == want and want
    # A claim for review is not among the claims the account does not bear out.
    assert all(v["verdict"] != "contradicted" for v in current_verdicts() if v["run_id"] == "run-c")


def check_claim_settlements(r: QueryResult) -> None:
    verdicts = [x.body for x in RECORDS if x.kind == "claim_verdict"]
    changed = {v["claim_id"] for v in verdicts if v["settlement"] > 1}
    want = sorted(
        (v["claim_id"], v["settlement"], v["verdict"], v["withdrawn"])
        for v in verdicts
        if v["claim_id"] in changed
    )
    got = [(x["claim_id"], x["settlement"], x["verdict"], x["withdrawn"]) for x in rows(r)]
    assert got == want and want


def check_dead_letters_by_reason(r: QueryResult) -> None:
    want = Counter(x.body["reason"] for x in RECORDS if x.kind == "dead_letter")
    assert {x["reason"]: x["letters"] for x in rows(r)} == want and want
    assert {x["recorded_by"] for x in rows(r)} == {"pipeline"}


def check_account_json_predicates(r: QueryResult) -> None:
    want = {run: len(a["predicates"]) for run, a in current().items()}
    assert {x["run_id"]: x["predicates"] for x in rows(r)} == want


CHECKS: dict[str, Callable[[QueryResult], None]] = {
    name.removeprefix("check_"): fn for name, fn in globals().items() if name.startswith("check_")
}


@pytest.fixture(scope="module")
def sunk_sample(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    clickhouse.close_all()
    dsn = f"chdb://{tmp_path_factory.mktemp('analyst')}/chdb"
    ClickHouseWriter(dsn).write(RECORDS)
    yield dsn
    clickhouse.close_all()


def test_every_block_has_a_check() -> None:
    assert set(blocks()) == set(CHECKS)


@pytest.mark.parametrize("name", sorted(blocks()))
def test_analyst_query(name: str, sunk_sample: str) -> None:
    result = run_query(sunk_sample, blocks()[name])
    CHECKS[name](result)
