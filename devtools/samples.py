"""Hand-built output records in the exact form of docs/records.md.

A small, fixed cast of runs that touches every table and every view, so tests (and the
analyst-query doc test) can check meaningful answers without the domain core:

- `run-a`: revision 1 `unresolved` (check `unit` stale), revision 2 `complete`.
- `run-b`: `blocked`: publication denied, an (unrequested) upload still `unknown`,
  check `suite` missing.
- `run-c`: `unresolved`: receipts disagree on a write; conflicting tool outcomes; a
  stale check.
- `run-d`: `cancelled`, `partially_complete`; retrieval, injections and findings (one
  raised, one raised then withdrawn).
- claim verdicts for runs a and b; run-a's settle again at its revision 2 (one
  superseded, one omission withdrawn, with a claim notification); one pipeline dead
  letter.
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from outcomes.reducers.records import OutputRecord, dead_letter

ASSEMBLER = "1.0.0"


def _ts(minute: int, second: int = 0) -> str:
    return f"2026-11-30T10:{minute:02d}:{second:02d}.000000Z"


def predicate(
    pid: str, state: str, reason: str, *evidence: str, required: bool = True
) -> dict[str, Any]:
    return {
        "id": pid,
        "required": required,
        "state": state,
        "reason": reason,
        "evidence": sorted(evidence),
    }


def effect(intent: str, cls: str, state: str, *receipts: str) -> dict[str, Any]:
    unresolved = state in {"prepared", "approved", "active", "unknown", "observed", "contradicted"}
    return {
        "intent_id": intent,
        "effect_class": cls,
        "state": state,
        "receipts": sorted(receipts),
        "unresolved": unresolved,
    }


def contradiction(subject: str, kind: str, *evidence: tuple[str, str, str]) -> dict[str, Any]:
    return {
        "subject": subject,
        "kind": kind,
        "evidence": [
            {"event_id": e, "value": v, "occurred_at": t}
            for e, v, t in sorted(evidence, key=lambda x: (x[2], x[0]))
        ],
    }


def account(
    run_id: str,
    revision: int,
    *,
    status: str,
    minute: int,
    workflow_status: str = "finalized",
    predicates: list[dict[str, Any]] | None = None,
    effects: list[dict[str, Any]] | None = None,
    contradictions: list[dict[str, Any]] | None = None,
    findings: list[dict[str, Any]] | None = None,
    changes: list[str] | None = None,
    padding: int = 0,
) -> OutputRecord:
    """An account_revision record; `padding` adds artifacts to grow the JSON (benchmarks)."""
    preds = sorted(predicates or [], key=lambda p: p["id"])
    body: dict[str, Any] = {
        "revision_id": f"{run_id}:{revision}",
        "run_id": run_id,
        "revision": revision,
        "supersedes": revision - 1 if revision > 1 else None,
        "schema_version": 1,
        "assembler_version": ASSEMBLER,
        "state_revision": hashlib.sha256(f"{run_id}:{revision}".encode()).hexdigest(),
        "observation_cutoff": _ts(minute),
        "trigger_event_id": f"{run_id}:e{minute}",
        "goal_revision": 1,
        "candidate_snapshot": "snap-1",
        "workflow_status": workflow_status,
        "status": status,
        "dimensions": {
            "response_completion": "completed",
            "requested_action_outcome": "succeeded",
            "verification": "pass" if status == "complete" else "indeterminate",
            "review": None,
            "durability": None,
        },
        "predicates": preds,
        "artifacts": [
            {
                "path": f"src/module_{i:04d}.py",
                "change": "modified",
                "digest": f"sha256:{i:064x}",
                "renamed_from": None,
                "verification_sensitive": i % 3 == 0,
            }
            for i in range(padding)
        ],
        "checks": [],
        "effects": sorted(effects or [], key=lambda e: e["intent_id"]),
        "actions": [],
        "contradictions": sorted(contradictions or [], key=lambda c: (c["subject"], c["kind"])),
        "provenance_findings": sorted(findings or [], key=lambda f: (f["kind"], f["subject"])),
        "ignored_goal_proposals": [],
        "changes": sorted(changes or []),
    }
    return OutputRecord("account_revision", run_id, body["revision_id"], body)


def notification(
    run_id: str, revision: int, status: str, previous: str | None, minute: int
) -> OutputRecord:
    body: dict[str, Any] = {
        "notification_id": f"{run_id}:{revision}",
        "run_id": run_id,
        "kind": "account.final" if revision == 1 else "account.superseded",
        "revision": revision,
        "supersedes": revision - 1 if revision > 1 else None,
        "status": status,
        "previous_status": previous,
        "completion_automation": status == "complete",
        "observation_cutoff": _ts(minute),
    }
    return OutputRecord("notification", run_id, f"{run_id}:{revision}", body)


def retrieval_row(
    run_id: str, retrieval_id: str, candidate: str, rank: int, decision: str, minute: int
) -> OutputRecord:
    row_id = f"{run_id}:retrieval:{retrieval_id}:{candidate}"
    body = {
        "row_id": row_id,
        "run_id": run_id,
        "row_type": "retrieval_candidate",
        "event_id": f"{run_id}:r{minute}",
        "occurred_at": _ts(minute),
        "retrieval": {
            "retrieval_id": retrieval_id,
            "job_id": "job-1",
            "query_hash": "q" * 16,
            "algorithm": "bm25",
            "config_hash": "c" * 16,
            "candidate_id": candidate,
            "source_type": "memory",
            "source_event_id": f"src-{candidate}",
            "rank": rank,
            "score": 1.0 / rank,
            "eligible": decision == "selected",
            "decision": decision,
            "withhold_reason": None if decision == "selected" else "policy",
        },
        "injection": None,
        "finding": None,
    }
    return OutputRecord("provenance_row", run_id, row_id, body)


def injection_row(
    run_id: str,
    injection_id: str,
    retrieval_id: str,
    candidates: list[str],
    minute: int,
    confirmed: bool = True,
) -> OutputRecord:
    event_id = f"{run_id}:i{minute}"
    row_id = f"{run_id}:injection:{injection_id}:{event_id}"
    body = {
        "row_id": row_id,
        "run_id": run_id,
        "row_type": "context_injection",
        "event_id": event_id,
        "occurred_at": _ts(minute),
        "retrieval": None,
        "injection": {
            "injection_id": injection_id,
            "model_call_id": f"call-{injection_id}",
            "retrieval_id": retrieval_id,
            "candidate_ids": candidates,
            "block_hash": "b" * 16,
            "block_bytes": 2048,
            "location": "system",
            "range_start": 0,
            "range_end": 2048,
            "confirmed": confirmed,
            "removed_before_inference": False,
        },
        "finding": None,
    }
    return OutputRecord("provenance_row", run_id, row_id, body)


def finding_row(
    run_id: str, kind: str, subject: str, revision: int, change: str, minute: int
) -> OutputRecord:
    row_id = f"{run_id}:finding:{kind}:{subject}:{revision}"
    body = {
        "row_id": row_id,
        "run_id": run_id,
        "row_type": "finding",
        "event_id": f"{run_id}:e{minute}",
        "occurred_at": _ts(minute),
        "retrieval": None,
        "injection": None,
        "finding": {
            "kind": kind,
            "subject": subject,
            "evidence": [f"{run_id}:i{minute}"],
            "change": change,
            "revision": revision,
        },
    }
    return OutputRecord("provenance_row", run_id, row_id, body)


def verdict(
    run_id: str,
    narrative: str,
    key: str,
    kind: str,
    value: str,
    reason: str,
    span: tuple[int, int, str] | None,
    *,
    subject: str | None = None,
    revision: int = 1,
    settlement: int = 1,
    withdrawn: bool = False,
) -> OutputRecord:
    claim = f"{run_id}:{narrative}:{key}"
    vid = claim if settlement == 1 else f"{claim}@{settlement}"
    previous = (
        None if settlement == 1 else (claim if settlement == 2 else f"{claim}@{settlement - 1}")
    )
    body = {
        "verdict_id": vid,
        "claim_id": claim,
        "settlement": settlement,
        "supersedes": previous,
        "withdrawn": withdrawn,
        "run_id": run_id,
        "narrative_id": narrative,
        "event_id": f"{run_id}:{narrative}",
        "account_revision": revision,
        "claim_kind": kind,
        "verdict": value,
        "subject": subject,
        "span_start": span[0] if span else None,
        "span_end": span[1] if span else None,
        "span_text": span[2] if span else None,
        "reason": reason,
    }
    return OutputRecord("claim_verdict", run_id, vid, body)


def claim_notification(
    run_id: str, revision: int, status: str, minute: int, *verdicts: OutputRecord
) -> OutputRecord:
    bodies = [v.body for v in verdicts]
    nid = f"{run_id}:{revision}:claims"
    body = {
        "notification_id": nid,
        "run_id": run_id,
        "revision": revision,
        "trigger_event_id": f"{run_id}:e{minute}",
        "status": status,
        "observation_cutoff": _ts(minute),
        "narrative_ids": sorted({b["narrative_id"] for b in bodies}),
        "verdict_ids": sorted(b["verdict_id"] for b in bodies),
        "superseded": sum(1 for b in bodies if b["supersedes"] is not None),
        "withdrawn": sum(1 for b in bodies if b["withdrawn"]),
    }
    return OutputRecord("claim_notification", run_id, nid, body)


def sample_records() -> list[OutputRecord]:
    """The fixed cast described in the module docstring, in emission order."""
    sealed = predicate("workspace.sealed", "satisfied", "sealed", "e1")
    recs: list[OutputRecord] = []
    # run-a: stale check, then a rerun passes and supersedes.
    recs += [
        account(
            "run-a",
            1,
            status="unresolved",
            minute=1,
            predicates=[
                sealed,
                predicate("check:unit", "indeterminate", "stale", "a-v1"),
                predicate("deliverable:src/app.py", "satisfied", "modified", "a-s1"),
            ],
        ),
        notification("run-a", 1, "unresolved", None, 1),
        account(
            "run-a",
            2,
            status="complete",
            minute=5,
            changes=["checks", "predicates", "status"],
            predicates=[
                sealed,
                predicate("check:unit", "satisfied", "passing", "a-v2"),
                predicate("deliverable:src/app.py", "satisfied", "modified", "a-s1"),
            ],
        ),
        notification("run-a", 2, "complete", "unresolved", 5),
    ]
    # run-b: denied publication, unknown upload, missing suite check.
    recs += [
        account(
            "run-b",
            1,
            status="blocked",
            minute=2,
            predicates=[
                sealed,
                predicate("effect:publish", "unsatisfied", "denied", "b-t1"),
                predicate("check:suite", "unsatisfied", "missing"),
            ],
            effects=[
                effect("publish", "publication", "denied"),
                effect("upload", "upload", "unknown"),
            ],
        ),
        notification("run-b", 1, "blocked", None, 2),
    ]
    # run-c: receipts disagree; conflicting tool outcomes.
    recs += [
        account(
            "run-c",
            1,
            status="unresolved",
            minute=3,
            predicates=[
                sealed,
                predicate("effect:store", "indeterminate", "contradiction", "c-r1", "c-r2"),
                predicate("deliverable:out.csv", "unsatisfied", "absent"),
                predicate("check:lint", "indeterminate", "stale", "c-v1"),
            ],
            effects=[effect("store", "write", "contradicted", "rc-1", "rc-2")],
            contradictions=[
                contradiction(
                    "effect:store",
                    "effect_receipts_disagree",
                    ("c-r1", "present", _ts(3, 1)),
                    ("c-r2", "absent", _ts(3, 2)),
                ),
                contradiction(
                    "action:act-1",
                    "action_outcome_conflict",
                    ("c-f1", "succeeded", _ts(2, 50)),
                    ("c-f2", "failed", _ts(2, 55)),
                ),
            ],
        ),
        notification("run-c", 1, "unresolved", None, 3),
    ]
    # run-d: cancelled; provenance with a withheld candidate injected.
    withheld = {"kind": "withheld_candidate_injected", "subject": "inj-1", "evidence": ["run-d:i4"]}
    unobserved = {
        "kind": "retrieval_receipt_not_observed",
        "subject": "inj-2",
        "evidence": ["run-d:i4"],
    }
    recs += [
        retrieval_row("run-d", "ret-1", "cand-1", 1, "selected", 4),
        retrieval_row("run-d", "ret-1", "cand-2", 2, "selected", 4),
        retrieval_row("run-d", "ret-1", "cand-3", 3, "withheld", 4),
        injection_row("run-d", "inj-1", "ret-1", ["cand-1", "cand-3"], 4),
        injection_row("run-d", "inj-2", "ret-9", ["cand-9"], 4, confirmed=False),
        account(
            "run-d",
            1,
            status="partially_complete",
            minute=6,
            workflow_status="cancelled",
            predicates=[
                sealed,
                predicate("deliverable:a.md", "satisfied", "added", "d-s1"),
                predicate("deliverable:b.md", "unsatisfied", "absent"),
            ],
            findings=[withheld, unobserved],
        ),
        finding_row("run-d", "retrieval_receipt_not_observed", "inj-2", 1, "raised", 6),
        finding_row("run-d", "withheld_candidate_injected", "inj-1", 1, "raised", 6),
        notification("run-d", 1, "partially_complete", None, 6),
        account(
            "run-d",
            2,
            status="partially_complete",
            minute=7,
            workflow_status="cancelled",
            predicates=[
                sealed,
                predicate("deliverable:a.md", "satisfied", "added", "d-s1"),
                predicate("deliverable:b.md", "unsatisfied", "absent"),
            ],
            findings=[withheld],
            changes=["findings"],
        ),
        finding_row("run-d", "retrieval_receipt_not_observed", "inj-2", 2, "withdrawn", 7),
    ]
    # run-a's narrative, judged against revision 1, settles again at revision 2: the
    # completion claim becomes supported and the stale-check omission is withdrawn.
    done = (0, 4, "Done")
    stale = ("omission:check:unit", "verification", "omitted", "check_stale", None)
    settled = [
        verdict("run-a", "nar-1", "0", "completion", "supported", "status_complete", done,
                revision=2, settlement=2),
        verdict("run-a", "nar-1", *stale, subject="check:unit", revision=2, settlement=2,
                withdrawn=True),
    ]  # fmt: skip
    recs += [
        verdict("run-a", "nar-1", "0", "completion", "contradicted", "status_unresolved", done),
        verdict("run-a", "nar-1", *stale, subject="check:unit"),
        *settled,
        claim_notification("run-a", 2, "complete", 5, *settled),
        verdict(
            "run-b",
            "nar-2",
            "0",
            "completion",
            "contradicted",
            "status_blocked",
            (0, 13, "All finished."),
        ),
        verdict(
            "run-b",
            "nar-2",
            "omission:check:suite",
            "verification",
            "omitted",
            "check_missing",
            None,
            subject="check:suite",
        ),
        # run-c's narrative hedges: the reader cannot decide it, a person should.
        verdict(
            "run-c",
            "nar-3",
            "0",
            "persistence",
            "needs_review",
            "hedged",
            (0, 33, "It looks like the store was saved."),
        ),
        dead_letter(
            reason="schema_violation",
            message="unknown field 'colour'",
            raw=b'{"colour": 1}',
            origin_file="events.jsonl",
            origin_line=7,
            run_id="run-b",
            event_id="b-bad",
        ),
    ]
    return recs


def many_accounts(count: int) -> list[OutputRecord]:
    """`count` small account revisions of runs named with a fresh random prefix (two
    revisions a run), for loading a sink."""
    run = uuid.uuid4().hex[:6]
    return [
        account(
            f"{run}-{i:05d}",
            1 + i % 2,
            status="complete",
            minute=i % 60,
            padding=15,
            predicates=[predicate("check:unit", "satisfied", "passing", "e")],
        )
        for i in range(count)
    ]
