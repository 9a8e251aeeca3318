"""SPEC 5 and docs/records.md: provenance findings and retrieval/injection journal rows."""

from __future__ import annotations

from tests.builders import Replay, RunBuilder, account_of, candidate, findings, of_kind


def test_withheld_candidate_injected() -> None:
    b = RunBuilder()
    retrieval = b.retrieval(candidates=["c1", candidate("c2", "withheld")])
    injection = b.injection(candidate_ids=["c1", "c2"])
    account = account_of([b.goal(), retrieval, injection, b.finalize(None)])
    assert findings(account) == [
        {
            "kind": "withheld_candidate_injected",
            "subject": "inj-1",
            "evidence": sorted([retrieval["event_id"], injection["event_id"]]),
        }
    ]


def test_injecting_only_selected_candidates_is_no_finding() -> None:
    b = RunBuilder()
    events = [
        b.goal(),
        b.retrieval(candidates=["c1", candidate("c2", "withheld")]),
        b.injection(candidate_ids=["c1"]),
        b.inference(),
        b.finalize(None),
    ]
    assert findings(account_of(events)) == []


def test_injection_after_inference() -> None:
    b = RunBuilder()
    inference = b.inference("call-1")
    injection = b.injection(model_call_id="call-1", confirmed=True)
    account = account_of([b.goal(), b.retrieval(), inference, injection, b.finalize(None)])
    assert findings(account) == [
        {
            "kind": "injection_after_inference",
            "subject": "inj-1",
            "evidence": sorted([inference["event_id"], injection["event_id"]]),
        }
    ]


def test_unconfirmed_injection_used() -> None:
    b = RunBuilder()
    injection = b.injection(confirmed=False, removed_before_inference=False)
    inference = b.inference("call-1")
    account = account_of([b.goal(), b.retrieval(), injection, inference, b.finalize(None)])
    assert findings(account) == [
        {
            "kind": "unconfirmed_injection_used",
            "subject": "inj-1",
            "evidence": sorted([inference["event_id"], injection["event_id"]]),
        }
    ]


def test_unconfirmed_injection_removed_before_inference_is_no_finding() -> None:
    b = RunBuilder()
    events = [
        b.goal(),
        b.retrieval(),
        b.injection(confirmed=False, removed_before_inference=True),
        b.inference("call-1"),
        b.finalize(None),
    ]
    assert findings(account_of(events)) == []


def test_confirmed_injection_before_inference_is_no_finding() -> None:
    b = RunBuilder()
    events = [b.goal(), b.retrieval(), b.injection(), b.inference("call-1"), b.finalize(None)]
    assert findings(account_of(events)) == []


def test_retrieval_receipt_not_observed_goes_away_when_the_retrieval_arrives() -> None:
    b = RunBuilder()
    replay = Replay()
    injection = b.injection(retrieval_id="ret-late")
    replay.apply(b.goal(), injection, b.finalize(None))
    first = replay.account
    assert first is not None
    assert findings(first) == [
        {
            "kind": "retrieval_receipt_not_observed",
            "subject": "inj-1",
            "evidence": [injection["event_id"]],
        }
    ]
    retrieval = b.retrieval("ret-late")
    caused = replay.apply(retrieval)
    [second] = of_kind(caused, "account_revision")
    assert (second["revision"], findings(second)) == (2, [])
    assert "findings" in second["changes"]
    # Findings are not among what SPEC 4 notifies about.
    assert of_kind(caused, "notification") == []
    [withdrawn] = [r for r in of_kind(caused, "provenance_row") if r["row_type"] == "finding"]
    assert withdrawn["row_id"] == "run-1:finding:retrieval_receipt_not_observed:inj-1:2"
    assert withdrawn["event_id"] == retrieval["event_id"]
    assert withdrawn["finding"] == {
        "kind": "retrieval_receipt_not_observed",
        "subject": "inj-1",
        "evidence": [injection["event_id"]],
        "change": "withdrawn",
        "revision": 2,
    }


def test_a_raised_finding_is_emitted_with_its_revision() -> None:
    b = RunBuilder()
    outputs = Replay().apply(b.goal(), b.injection(retrieval_id="ret-x"), b.finalize(None))
    rows = [r for r in of_kind(outputs, "provenance_row") if r["row_type"] == "finding"]
    assert [(r["row_id"], r["finding"]["change"], r["finding"]["revision"]) for r in rows] == [
        ("run-1:finding:retrieval_receipt_not_observed:inj-1:1", "raised", 1)
    ]


def test_retrieval_rows_one_per_candidate_without_an_account() -> None:
    b = RunBuilder()
    event = b.retrieval(candidates=["c1", candidate("c2", "withheld", rank=2)])
    outputs = Replay().apply(event)
    rows = of_kind(outputs, "provenance_row")
    assert of_kind(outputs, "account_revision") == []
    assert [r["row_id"] for r in rows] == ["run-1:retrieval:ret-1:c1", "run-1:retrieval:ret-1:c2"]
    assert {r["row_type"] for r in rows} == {"retrieval_candidate"}
    assert [(r["retrieval"]["candidate_id"], r["retrieval"]["decision"]) for r in rows] == [
        ("c1", "selected"),
        ("c2", "withheld"),
    ]
    assert all(r["event_id"] == event["event_id"] and r["injection"] is None for r in rows)


def test_injection_row_once_per_injection_event() -> None:
    b = RunBuilder()
    event = b.injection()
    rows = of_kind(Replay().apply(event), "provenance_row")
    assert len(rows) == 1
    assert rows[0]["row_type"] == "context_injection"
    assert rows[0]["row_id"] == f"run-1:injection:inj-1:{event['event_id']}"
    assert rows[0]["injection"]["model_call_id"] == "call-1"
    assert rows[0]["retrieval"] is None and rows[0]["finding"] is None


def test_journal_rows_are_not_emitted_again_on_redelivery() -> None:
    b = RunBuilder()
    retrieval, injection = b.retrieval(candidates=["c1", "c2"]), b.injection()
    replay = Replay()
    first = replay.apply(retrieval, injection)
    assert len(of_kind(first, "provenance_row")) == 3
    assert replay.apply(retrieval, injection) == []


def test_an_unrelated_retrieval_row_makes_no_revision() -> None:
    b = RunBuilder()
    replay = Replay()
    replay.apply(b.goal(), b.finalize(None))
    caused = replay.apply(b.retrieval("ret-unused"))
    assert of_kind(caused, "account_revision") == []
    assert len(of_kind(caused, "provenance_row")) == 1
