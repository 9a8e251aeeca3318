"""The whole report of a run, beyond its status block: the revision timeline (what each
supersession changed) and each narrative's claim map (every claim's span, verdicts and
the account entries it was judged on). Data first, then the Markdown form; the HTML page
(`reports/html.py`) and the export bundle read the same data."""

from __future__ import annotations

from typing import Any

from outcomes.common.text import markdown_code, markdown_lines, markdown_text
from outcomes.reports.model import Record, RunView
from outcomes.reports.status import (
    Block,
    differences,
    quote,
    render,
    status_block,
    verdict_copy,
)

# A verdict's subject names an account entry by family (docs/claims.md).
SUBJECT_FAMILIES = ("check", "effect", "artifact", "action", "snapshot")


def timeline(view: RunView) -> list[dict[str, Any]]:
    """Every revision with what it changed against the one it superseded."""
    out: list[dict[str, Any]] = []
    previous: Block | None = None
    for body in view.revisions:
        block = status_block(view, int(body["revision"]))
        out.append(
            {
                "revision": block["revision"],
                "revision_id": block["revision_id"],
                "supersedes": block["supersedes"],
                "status": block["status"],
                "status_label": block["status_label"],
                "tone": block["tone"],
                "trigger_event_id": block["trigger_event_id"],
                "observation_cutoff": block["observation_cutoff"],
                "changes": list(body["changes"]),
                "differences": differences(previous, block) if previous is not None else [],
            }
        )
        previous = block
    return out


def entry_of(run_id: str, verdict: Record) -> dict[str, Any]:
    """The account entry a verdict was judged on: the revision, and the item its subject
    names there (none for a claim about the whole run's status)."""
    revision = verdict["account_revision"]
    return {
        "revision_id": f"{run_id}:{revision}" if revision is not None else None,
        "subject": verdict["subject"],
    }


def claim_maps(view: RunView) -> list[dict[str, Any]]:
    """One map per narrative (those with verdicts, and those in the events): its text
    when the events hold it, and every claim with each of its settlements."""
    texts = {n.narrative_id: n for n in view.narratives()}
    claims: dict[str, dict[str, list[Record]]] = {}
    for v in view.verdicts:
        of_narrative = claims.setdefault(str(v["narrative_id"]), {})
        of_narrative.setdefault(str(v.get("claim_id") or v["verdict_id"]), []).append(v)
    current = {str(v.get("claim_id") or v["verdict_id"]) for v in view.verdicts_at(_latest(view))}
    out = []
    for narrative_id in sorted(claims.keys() | texts.keys()):
        n = texts.get(narrative_id)
        entries = []
        for claim_id, chain in claims.get(narrative_id, {}).items():
            last, first = chain[-1], chain[0]
            entries.append(
                {
                    "claim_id": claim_id,
                    "claim_kind": last["claim_kind"],
                    "span_start": last["span_start"],
                    "span_end": last["span_end"],
                    "span_text": last["span_text"],
                    "current": claim_id in current,
                    "verdict": last["verdict"],
                    "reason": last["reason"],
                    "subject": last["subject"],
                    "supported": last.get("supported"),
                    "withdrawn": bool(last.get("withdrawn")),
                    "judged_on": entry_of(view.run_id, last),
                    "first_verdict": first["verdict"],
                    "first_supported": first.get("supported"),
                    "first_judged_on": entry_of(view.run_id, first),
                    "settlements": [
                        {
                            "verdict_id": v["verdict_id"],
                            "settlement": int(v.get("settlement") or 1),
                            "verdict": v["verdict"],
                            "reason": v["reason"],
                            "account_revision": v["account_revision"],
                            "withdrawn": bool(v.get("withdrawn")),
                            "supported": v.get("supported"),
                        }
                        for v in chain
                    ],
                }
            )
        out.append(
            {
                "narrative_id": narrative_id,
                "event_id": n.event_id if n is not None else _event_of(claims[narrative_id]),
                "account_revision": n.account_revision if n is not None else None,
                "channel": n.channel if n is not None else None,
                "text": n.text if n is not None else None,
                "claims": entries,
            }
        )
    return out


def _latest(view: RunView) -> int:
    return int(view.latest["revision"])


def _event_of(chains: dict[str, list[Record]]) -> str:
    return str(next(iter(chains.values()))[0]["event_id"])


def markdown(view: RunView) -> str:
    """The human report in Markdown: the status block, the timeline, the claim maps.

    Data is written to render as itself (`common/text.py`): ids in code spans, other
    values and the narrative's text escaped, so the narrative's HTML or a
    `javascript:` link in it is shown as text, as the HTML page shows it.
    """
    lines = [render(status_block(view), "markdown").rstrip("\n"), "", "## Revision timeline", ""]
    for link in timeline(view):
        head = f"### Revision {link['revision']}: {markdown_text(link['status_label'])}"
        lines += [head, ""]
        lines.append(
            f"Triggered by {markdown_code(link['trigger_event_id'])}; observation cutoff "
            f"{markdown_text(link['observation_cutoff'])}."
            + (f" Supersedes revision {link['supersedes']}." if link["supersedes"] else "")
        )
        lines.append("")
        for d in link["differences"]:
            item, then, now = (markdown_text(str(d[k])) for k in ("item", "then", "now"))
            lines.append(f"- {item}: {then} → {now}")
        if link["differences"]:
            lines.append("")
    lines += ["## Narratives", ""]
    maps = claim_maps(view)
    if not maps:
        lines += ["none", ""]
    for m in maps:
        ids = f"{markdown_code(m['narrative_id'])} (event {markdown_code(m['event_id'])})"
        lines += [f"### Narrative {ids}", ""]
        if "narrative" in view.redacted:
            lines += ["The narrative text is redacted from this report.", ""]
        elif m["text"] is None:
            lines += ["The narrative text is not in this report's source.", ""]
        else:
            text = m["text"].replace("\r\n", "\n")
            lines += [f"> {line}" if line else ">" for line in markdown_lines(text)] + [""]
        lines += [
            "| claim | kind | verdict now | judged on | first verdict | the account supports |",
            "|---|---|---|---|---|---|",
        ]
        for c in m["claims"]:
            said = quote(c)
            # The verdict in the words every report uses ("needs review", not the value).
            now = verdict_copy(c["verdict"])[0] + (" (withdrawn)" if c["withdrawn"] else "")
            on = c["judged_on"]
            where = f"{on['revision_id']} {on['subject'] or 'status'}"
            first_words = verdict_copy(c["first_verdict"])[0]
            first = f"{first_words} at {c['first_judged_on']['revision_id']}"
            if c["first_supported"] and c["first_supported"] != c["supported"]:
                first += f": {c['first_supported']}"
            cells = [said, c["claim_kind"], now, where, first, c["supported"] or "—"]
            lines.append("| " + " | ".join(_cell(x) for x in cells) + " |")
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def _cell(value: str) -> str:
    return markdown_text(value)  # a | or a newline of the data cannot break the row
