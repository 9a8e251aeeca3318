"""Offline checks of an export bundle (`outcomes verify-bundle`; docs/reports.md).

`problems(files)` reads a bundle (relative path -> bytes) and returns one line per
problem, none when it holds together: every file's digest and size against the manifest
(and no file the manifest does not list); the revision chain (1..n, each superseding the
one before, of the manifest's run); the latest revision named by the manifest and both
reports is the account's; every event id the account cites (predicate evidence,
contradiction evidence, trigger events) is in the bundle's events or receipts; every
receipt the account names is in receipts.json; every claim of a narrative's claim map is
a verdict of the bundle judged on a revision it holds, about an entry that revision has;
every `#link` of the HTML report has its target. Nothing is fetched: facts the bundle
captured are checked against the bundle.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from html import unescape
from typing import Any

import orjson

from outcomes.reports.bundle import FORMAT, MANIFEST, revision_path

Files = Mapping[str, bytes]

_HREF = re.compile(r'href="#([^"]+)"')
_ID = re.compile(r'\bid="([^"]+)"')
_HTML_REVISION = re.compile(r'<meta name="outcomes-revision" content="([^"]+)">')
# The report's first line. The run id is not matched: it is data (any characters, as
# the renderer escaped them), and the numbers after it are what is checked.
_MD_REVISION = re.compile(r"\A# Run .*?: revision (\d+) of (\d+)$", re.MULTILINE | re.DOTALL)


def _json(files: Files, name: str, found: list[str]) -> Any:
    data = files.get(name)
    if data is None:
        found.append(f"{name}: missing from the bundle")
        return None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        found.append(f"{name}: not JSON ({exc})")
        return None


def problems(files: Files) -> list[str]:
    """Every problem found in the bundle, one line each, in a fixed order."""
    found: list[str] = []
    manifest = _json(files, MANIFEST, found)
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        found.append(f"{MANIFEST}: not an {FORMAT} manifest")
        return found
    _digests(files, manifest, found)
    run_id = str(manifest.get("run_id"))
    revisions = _chain(files, manifest, run_id, found)
    if not revisions:
        return found
    latest = revisions[max(revisions)]
    _reports(files, manifest, latest, found)
    events = _events(files, found)
    receipts = _json(files, "receipts.json", found) or {}
    _evidence(revisions, events, receipts, bool(manifest.get("events_included")), found)
    _receipt_refs(revisions, receipts, found)
    _claims(files, revisions, events, bool(manifest.get("events_included")), found)
    _links(files, found)
    return found


def _digests(files: Files, manifest: Mapping[str, Any], found: list[str]) -> None:
    listed = manifest.get("files") or {}
    for name in sorted(listed):
        data = files.get(name)
        if data is None:
            found.append(f"{name}: listed in the manifest but missing from the bundle")
            continue
        want = listed[name]
        got = hashlib.sha256(data).hexdigest()
        if got != want.get("sha256"):
            found.append(
                f"{name}: SHA-256 {got} does not match the manifest's {want.get('sha256')}"
            )
        elif len(data) != want.get("bytes"):
            found.append(f"{name}: {len(data)} bytes, the manifest says {want.get('bytes')}")
    for name in sorted(set(files) - set(listed) - {MANIFEST}):
        found.append(f"{name}: in the bundle but not in the manifest")


def _chain(
    files: Files, manifest: Mapping[str, Any], run_id: str, found: list[str]
) -> dict[int, Mapping[str, Any]]:
    revisions: dict[int, Mapping[str, Any]] = {}
    for name in manifest.get("revisions") or []:
        body = _json(files, name, found)
        if not isinstance(body, dict):
            continue
        number = body.get("revision")
        if not isinstance(number, int) or name != revision_path(number):
            found.append(f"{name}: holds revision {number!r}, not the one its name says")
            continue
        if body.get("run_id") != run_id:
            found.append(f"{name}: revision of run {body.get('run_id')!r}, not {run_id!r}")
        if body.get("revision_id") != f"{run_id}:{number}":
            found.append(
                f"{name}: revision_id {body.get('revision_id')!r} is not {run_id}:{number}"
            )
        revisions[number] = body
    stray = sorted(
        n for n in files if n.startswith("account/") and n not in (manifest.get("revisions") or [])
    )
    for name in stray:
        found.append(f"{name}: a revision file the manifest does not name")
    if not revisions:
        found.append("account: the bundle holds no account revision")
        return revisions
    numbers = sorted(revisions)
    gaps = sorted(set(range(1, numbers[-1] + 1)) - set(numbers))
    if gaps:
        found.append(
            f"account: the revision chain is not contiguous: revision(s) "
            f"{', '.join(map(str, gaps))} missing before {numbers[-1]}"
        )
    for n in numbers:
        want = None if n == 1 else n - 1
        if revisions[n].get("supersedes") != want:
            found.append(
                f"{revision_path(n)}: supersedes {revisions[n].get('supersedes')!r}, "
                f"expected {want!r}"
            )
    return revisions


def _reports(
    files: Files, manifest: Mapping[str, Any], latest: Mapping[str, Any], found: list[str]
) -> None:
    number, revision_id = latest["revision"], latest["revision_id"]
    if manifest.get("latest_revision") != number:
        found.append(
            f"{MANIFEST}: names revision {manifest.get('latest_revision')!r} as the latest; "
            f"the account's latest is {number}"
        )
    if manifest.get("latest_revision_id") != revision_id:
        found.append(
            f"{MANIFEST}: names {manifest.get('latest_revision_id')!r} as the latest; "
            f"the account's latest is {revision_id}"
        )
    md = files.get("report.md", b"").decode(errors="replace")
    head = _MD_REVISION.search(md)
    if head is None:
        found.append("report.md: names no revision (no '# Run …: revision N of M' heading)")
    elif (int(head.group(1)), int(head.group(2))) != (number, number):
        found.append(
            f"report.md: reports revision {head.group(1)} of {head.group(2)}; "
            f"the account's latest is {number}"
        )
    html = files.get("report.html", b"").decode(errors="replace")
    meta = _HTML_REVISION.search(html)
    if meta is None:
        found.append("report.html: names no revision (meta outcomes-revision)")
    elif unescape(meta.group(1)) != revision_id:  # the attribute is HTML-escaped
        found.append(
            f"report.html: reports {unescape(meta.group(1))}; the account's latest is {revision_id}"
        )


def _events(files: Files, found: list[str]) -> dict[str, Mapping[str, Any]]:
    data = files.get("events.jsonl")
    events: dict[str, Mapping[str, Any]] = {}
    if data is None:
        return events
    for number, line in enumerate(data.splitlines(), start=1):
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            found.append(f"events.jsonl:{number}: not JSON ({exc})")
            continue
        events[str(event.get("event_id"))] = event
    return events


def _cited(body: Mapping[str, Any]) -> Iterable[tuple[str, str]]:
    """(where, event id) of every event the revision cites."""
    yield "trigger_event_id", body["trigger_event_id"]
    for p in body.get("predicates") or ():
        for event_id in p["evidence"]:
            yield f"predicate {p['id']}", event_id
    for c in body.get("contradictions") or ():
        for e in c["evidence"]:
            yield f"contradiction {c['subject']} {c['kind']}", e["event_id"]
    for f in body.get("provenance_findings") or ():
        for event_id in f["evidence"]:
            yield f"finding {f['kind']} {f['subject']}", event_id


def _evidence(
    revisions: Mapping[int, Mapping[str, Any]],
    events: Mapping[str, Any],
    receipts: Mapping[str, Any],
    included: bool,
    found: list[str],
) -> None:
    if not included:
        return  # declared in the manifest: nothing to check the ids against
    known = set(events)
    for group in ("verification_receipts", "effect_receipts"):
        known |= {r["event_id"] for r in receipts.get(group) or () if r.get("event_id")}
    for n in sorted(revisions):
        for where, event_id in _cited(revisions[n]):
            if event_id not in known:
                found.append(
                    f"{revision_path(n)}: {where} cites event {event_id}, which is not in "
                    "the bundle's events or receipts"
                )


def _receipt_refs(
    revisions: Mapping[int, Mapping[str, Any]], receipts: Mapping[str, Any], found: list[str]
) -> None:
    checks = {r.get("check_id") for r in receipts.get("verification_receipts") or ()}
    effects = {
        (r.get("intent_id"), r.get("receipt_id")) for r in receipts.get("effect_receipts") or ()
    }
    for n in sorted(revisions):
        body = revisions[n]
        for c in body.get("checks") or ():
            if c.get("check_id") and c["check_id"] not in checks:
                found.append(
                    f"{revision_path(n)}: check receipt {c['check_id']} not in receipts.json"
                )
        for e in body.get("effects") or ():
            for receipt_id in e["receipts"]:
                if (e["intent_id"], receipt_id) not in effects:
                    found.append(
                        f"{revision_path(n)}: receipt {receipt_id} of effect {e['intent_id']} "
                        "not in receipts.json"
                    )


def _entries(body: Mapping[str, Any]) -> set[str]:
    """The subjects a verdict judged on this revision may name."""
    out = {p["id"] for p in body.get("predicates") or ()}
    out |= {f"check:{c['label']}" for c in body.get("checks") or ()}
    out |= {f"effect:{e['intent_id']}" for e in body.get("effects") or ()}
    out |= {f"artifact:{a['path']}" for a in body.get("artifacts") or ()}
    out |= {f"action:{a['action_id']}" for a in body.get("actions") or ()}
    out |= {c["subject"] for c in body.get("contradictions") or ()}
    return out


def _claims(
    files: Files,
    revisions: Mapping[int, Mapping[str, Any]],
    events: Mapping[str, Any],
    included: bool,
    found: list[str],
) -> None:
    verdicts = _json(files, "claims/verdicts.json", found) or []
    by_id = {v["verdict_id"]: v for v in verdicts}
    by_revision_id = {body["revision_id"]: body for body in revisions.values()}
    for v in verdicts:
        n = v.get("account_revision")
        if n is not None and n not in revisions:
            found.append(
                f"claims/verdicts.json: {v['verdict_id']} was judged on revision {n}, "
                "which the bundle does not hold"
            )
        if included and v["event_id"] not in events:
            found.append(
                f"claims/verdicts.json: {v['verdict_id']} is about narrative event "
                f"{v['event_id']}, which is not in the bundle's events"
            )
    for name in sorted(n for n in files if n.startswith("narratives/")):
        m = _json(files, name, found)
        if not isinstance(m, dict):
            continue
        for claim in m.get("claims") or ():
            for s in claim.get("settlements") or ():
                if s["verdict_id"] not in by_id:
                    found.append(
                        f"{name}: claim {claim['claim_id']} settlement {s['settlement']} "
                        f"({s['verdict_id']}) is not a verdict in claims/verdicts.json"
                    )
            on = claim.get("judged_on") or {}
            revision_id, subject = on.get("revision_id"), on.get("subject")
            if revision_id is None:
                continue
            body = by_revision_id.get(revision_id)
            if body is None:
                found.append(
                    f"{name}: claim {claim['claim_id']} was judged on {revision_id}, which the "
                    "bundle does not hold"
                )
            elif subject is not None and subject not in _entries(body):
                found.append(
                    f"{name}: claim {claim['claim_id']} is about {subject}, which {revision_id} "
                    "does not have"
                )


def _links(files: Files, found: list[str]) -> None:
    html = files.get("report.html")
    if html is None:
        return
    text = html.decode(errors="replace")
    targets = set(_ID.findall(text))
    for href in sorted(set(_HREF.findall(text))):
        if href not in targets:
            found.append(f"report.html: the link #{href} has no target in the page")
