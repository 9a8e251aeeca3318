"""The export bundle of one run (docs/reports.md): the human report beside the evidence,
as a mapping of relative path -> bytes that `outcomes export` writes to a directory or
a zip file, and `outcomes.reports.verify` checks offline.

| file | what |
|---|---|
| `report.md`, `report.html` | the human report (status block, timeline, claim maps) |
| `account/revision-<n>.json` | every account revision, canonical JSON |
| `claims/verdicts.json` | every claim verdict (all settlements) |
| `narratives/<narrative_id>.json` | each narrative's text and claim map |
| `artifacts.json` | the candidate's artifacts and their digests |
| `receipts.json` | receipt references: verification receipts and effect receipts |
| `verification.json` | the verification manifest: required checks, their receipts and evidence |
| `answers.json` | the answers checked before display (SPEC 8: chain, attempt, decision,
  claims by verdict, the candidate's digest), when the run has any |
| `events.jsonl` | the run's input events, when they were given |
| `manifest.json` | SHA-256 and size of every other file; the run, its latest revision,
  its cutoff; what was redacted or left out |

Canonical JSON: keys sorted, no insignificant space, UTF-8. The same records give the
same bytes.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from outcomes.reports.html import page
from outcomes.reports.model import Record, RunView
from outcomes.reports.report import claim_maps, markdown

FORMAT = "outcomes-run-bundle"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"

Files = dict[str, bytes]


def canonical(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def pretty(value: Any) -> bytes:
    """Canonical key order, indented, newline-terminated: for files people open."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n"


def revision_path(number: int) -> str:
    return f"account/revision-{number}.json"


def narrative_path(narrative_id: str) -> str:
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in narrative_id)
    return f"narratives/{safe}.json"


def build(view: RunView, *, redact: tuple[str, ...] = ()) -> Files:
    """Every file of the bundle, the manifest last. `redact`: "narrative" takes the
    narrative text out of every file (hashes stay, and the manifest says so)."""
    unknown = sorted(set(redact) - {"narrative"})
    if unknown:
        raise ValueError(f"cannot redact {unknown}: only 'narrative' is known")
    if "narrative" in redact:
        view = view.redact_narratives()
    latest = view.latest
    files: Files = {
        "report.md": markdown(view).encode(),
        "report.html": page(view).encode(),
    }
    for body in view.revisions:
        files[revision_path(int(body["revision"]))] = canonical(body) + b"\n"
    files["claims/verdicts.json"] = pretty(list(view.verdicts))
    for m in claim_maps(view):
        files[narrative_path(m["narrative_id"])] = pretty(m)
    files["artifacts.json"] = pretty(_artifacts(latest))
    files["receipts.json"] = pretty(_receipts(view))
    files["verification.json"] = pretty(_verification(latest))
    answers = view.answer_checks()
    if answers:  # SPEC 8: the answers checked before display (digests, never their words)
        files["answers.json"] = pretty(answers)
    if view.events:
        files["events.jsonl"] = b"".join(canonical(e) + b"\n" for e in view.events)
    files[MANIFEST] = pretty(_manifest(view, files))
    return files


def _artifacts(latest: Record) -> dict[str, Any]:
    return {
        "revision_id": latest["revision_id"],
        "candidate_snapshot": latest["candidate_snapshot"],
        "artifacts": [
            {
                "path": a["path"],
                "change": a["change"],
                "digest": a["digest"],
                "verification_sensitive": a["verification_sensitive"],
            }
            for a in latest["artifacts"]
        ],
    }


def _receipts(view: RunView) -> dict[str, Any]:
    """Receipt references of every revision's checks and effects, with the event that
    carried each when the bundle holds the events."""
    checks: dict[str, dict[str, Any]] = {}
    effects: dict[tuple[str, str], dict[str, Any]] = {}
    for body in view.revisions:
        for c in body["checks"]:
            if c.get("check_id"):
                checks.setdefault(
                    c["check_id"],
                    {"check_id": c["check_id"], "label": c["label"], "event_id": None},
                )
        for e in body["effects"]:
            for receipt_id in e["receipts"]:
                effects.setdefault(
                    (e["intent_id"], receipt_id),
                    {"intent_id": e["intent_id"], "receipt_id": receipt_id, "event_id": None},
                )
    for event in view.events:
        if event.get("type") == "verification.receipt" and event.get("check_id") in checks:
            ref = checks[event["check_id"]]
            ref.update(_fields(event, "result", "tests_executed", "candidate_snapshot", "scope"))
            ref["event_id"] = ref["event_id"] or event["event_id"]
        key = (event.get("intent_id"), event.get("receipt_id"))
        if event.get("type") == "effect.receipt" and key in effects:
            ref = effects[key]
            ref.update(_fields(event, "origin", "observed", "authoritative", "attempt_id"))
            ref["event_id"] = ref["event_id"] or event["event_id"]
    return {
        "verification_receipts": [checks[k] for k in sorted(checks)],
        "effect_receipts": [effects[k] for k in sorted(effects)],
    }


def _fields(event: Record, *names: str) -> dict[str, Any]:
    return {n: event.get(n) for n in names}


def _verification(latest: Record) -> dict[str, Any]:
    """What the latest revision's verification rests on: each check with its predicate."""
    predicates = {p["id"]: p for p in latest["predicates"]}
    return {
        "revision_id": latest["revision_id"],
        "candidate_snapshot": latest["candidate_snapshot"],
        "verification": latest["dimensions"]["verification"],
        "checks": [
            {
                **{k: c.get(k) for k in sorted(c)},
                "predicate": predicates.get(f"check:{c['label']}"),
            }
            for c in latest["checks"]
        ],
    }


def _manifest(view: RunView, files: Files) -> dict[str, Any]:
    latest = view.latest
    redactions = []
    if "narrative" in view.redacted:
        redactions.append(
            {
                "what": "narrative text",
                "fields": [
                    "narrative.submitted text (events.jsonl)",
                    "narrative text (narratives/*.json)",
                    "claim_verdict span_text (claims/verdicts.json, narratives/*.json)",
                ],
                "treatment": "left out; its SHA-256 kept beside it (text_sha256, span_text_sha256)",
            }
        )
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "run_id": view.run_id,
        "latest_revision": int(latest["revision"]),
        "latest_revision_id": latest["revision_id"],
        "status": latest["status"],
        "observation_cutoff": latest["observation_cutoff"],
        "state_revision": latest["state_revision"],
        "revisions": [revision_path(int(r["revision"])) for r in view.revisions],
        "events_included": bool(view.events),
        "redactions": redactions,
        "files": {
            name: {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
            for name, data in sorted(files.items())
        },
    }
