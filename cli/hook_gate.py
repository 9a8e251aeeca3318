"""The Claude Code Stop hook's question to the pre-display gate (SPEC 8).

At a Stop, once the session's events (all but the final message's narrative) are
acknowledged by the broker, the hook asks the gate whether the run's account supports
the final message, with the ids of those events as its position, within a budget:

- `pass`: the stop goes through; the narrative is published; what the answer left out
  (the appendix) is shown to the user as a system message;
- `repair`: the stop is blocked with `{"decision": "block", "reason": ...}`, the reason
  naming each contradiction beside the account's fact; the narrative is not published,
  and the answer chain is kept in the session folder (`gate.json`) as repaired once;
- `contain`: the re-check of a repaired answer (or a check made when the stop cannot be
  blocked again: `stop_hook_active`) still contradicts. The stop goes through, the
  account's own summary is shown to the user as a system message, and the narrative
  of what Claude showed is published, so its verdicts say what the user read.
- no answer in time (no worker, an unreachable or refusing gate, an account that has not
  reached the position, events the broker did not acknowledge): the stop goes through,
  one line on standard error, and the narrative is published as it is: unchecked,
  never reported as passed.

Each check is an `answer.checked` event of the run: the worker records the checks it
judged; an answer shown unchecked is recorded by the hook with its narrative. Each is
also a line of the session folder's `checks.jsonl` (the chain, the attempt, the decision,
the counts).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson

from outcomes.reducers.answers import answer_checked_event
from outcomes.streams.sdk.gate import GateClient, GateRefused, GateUnavailable
from outcomes.streams.sdk.uuid7 import uuid7

DEFAULT_GATE_BUDGET = 3.0  # seconds; Claude Code's own hook timeout is 30
MAX_REASON_CHARS = 8_000  # what a block's reason (the model's next instruction) may hold
MAX_MESSAGE_CHARS = 4_000  # what a system message shown to the user may hold
MAX_POSITION = 10_000  # ids sent as the position (the gate reads at most this many)
CHAIN_FILE = "gate.json"
CHECKS_FILE = "checks.jsonl"

Shown = Literal["pass", "repair", "contain", "unchecked"]


@dataclass(frozen=True, slots=True)
class GateConfig:
    """Where the hook asks, with what token, and how long a Stop may wait."""

    url: str
    token: str | None
    budget: float = DEFAULT_GATE_BUDGET


@dataclass(slots=True)
class Gated:
    """What one Stop's check decided: `decision`; `publish` whether the final message's
    narrative goes out now (every decision but repair); `stdout` the JSON the hook
    prints for Claude Code; `note` the line for standard error."""

    decision: Shown
    chain_id: str
    attempt: int
    publish: bool = True
    stdout: dict[str, Any] | None = None
    note: str | None = None
    counts: Mapping[str, int] = field(default_factory=dict)


def bounded(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: limit - 40].rstrip() + f"\n[{len(text) - limit + 40} characters left out]"


def _chain(folder: Path) -> dict[str, Any] | None:
    path = folder / CHAIN_FILE
    try:
        value = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, orjson.JSONDecodeError):  # a damaged file: a new chain starts
        return None
    return value if isinstance(value, dict) and isinstance(value.get("chain_id"), str) else None


def new_answer(folder: Path) -> None:
    """A new prompt (or session) starts a new answer chain: the repaired one is done."""
    (folder / CHAIN_FILE).unlink(missing_ok=True)


def check_at_stop(
    folder: Path,
    run_id: str,
    text: str,
    stop_hook_active: bool,
    position: Sequence[str],
    gate: GateConfig,
    acknowledged: bool,
) -> Gated:
    """Ask the gate about the final message `text` and decide what the Stop does.

    `acknowledged` is False when some of the session's events are still unsent: the
    account cannot hold the position, so the answer is not checked. With a repaired
    chain or `stop_hook_active`, the check is the chain's last (attempt 2): the stop is
    not blocked again whatever it says."""
    chain = _chain(folder)
    chain_id = str(chain["chain_id"]) if chain else str(uuid7())
    last = chain is not None or stop_hook_active
    attempt = max(2, int(chain.get("attempt") or 2)) if chain else (2 if last else 1)
    gated = _ask(run_id, text, position, gate, acknowledged, chain_id, attempt)
    if gated.decision == "repair":
        (folder / CHAIN_FILE).write_bytes(orjson.dumps({"chain_id": chain_id, "attempt": 2}))
    else:
        new_answer(folder)
    _record(folder, gated)
    return gated


def _ask(
    run_id: str,
    text: str,
    position: Sequence[str],
    gate: GateConfig,
    acknowledged: bool,
    chain_id: str,
    attempt: int,
) -> Gated:
    def unchecked(why: str) -> Gated:
        return Gated("unchecked", chain_id, attempt, note=f"the answer is shown unchecked: {why}")

    if not acknowledged:
        return unchecked("the broker has not acknowledged the session's events")
    try:
        client = GateClient(gate.url, token=gate.token, budget=gate.budget)
        checked = client.check_answer(
            run_id,
            text,
            position=list(position)[-MAX_POSITION:],
            attempt=attempt,
            chain_id=chain_id,
        )
    except ValueError as exc:  # a gate URL that is not one
        return unchecked(str(exc))
    except GateUnavailable as exc:
        return unchecked(str(exc))
    except GateRefused as exc:
        return unchecked(f"the gate refused the check ({exc.status}: {exc.message})")
    counts = dict(checked.body.get("counts") or {})
    if checked.decision == "stale":
        where = checked.body.get("position") or {}
        return unchecked(
            f"the run's account had reached {where.get('reached', '?')} of the "
            f"{where.get('wanted', '?')} events published when the gate's budget ran out"
        )
    if checked.decision == "pass":
        appendix = checked.appendix
        stdout = {"systemMessage": bounded(appendix, MAX_MESSAGE_CHARS)} if appendix else None
        return Gated("pass", chain_id, attempt, stdout=stdout, counts=counts)
    if checked.decision == "contain":
        contained = checked.contained or "The answer could not be confirmed by the run's record."
        stdout = {"systemMessage": bounded(contained, MAX_MESSAGE_CHARS)}
        return Gated("contain", chain_id, attempt, stdout=stdout, counts=counts)
    if attempt > 1:  # the gate asks for a second repair: not SPEC 8's, never loop on it
        return unchecked("the gate asked to repair an answer already repaired")
    reason = "outcomes: " + (checked.instruction or _listed(checked.contradicted))
    stdout = {"decision": "block", "reason": bounded(reason, MAX_REASON_CHARS)}
    return Gated("repair", chain_id, attempt, publish=False, stdout=stdout, counts=counts)


def _listed(contradicted: Sequence[Mapping[str, Any]]) -> str:
    """A reason from the claims alone, when the gate sent no instruction."""
    lines = ["The answer contradicts the run's account. Rewrite it once:"]
    for claim in contradicted:
        fact = claim.get("supported") or claim.get("reason") or "the account does not hold it"
        lines.append(f'- "{claim.get("text")}" is contradicted: {fact}.')
    return "\n".join(lines)


def unchecked_record(run_id: str, gated: Gated, text: str) -> dict[str, Any]:
    """The `answer.checked` event of an answer shown unchecked (SPEC 8, "Fail open"):
    published with its narrative. A check the gate judged is recorded by the worker that
    judged it; this one names its chain `<chain>:unchecked`, so that a late answer the
    worker recorded and the hook's own record are two events, never a conflict."""
    return answer_checked_event(
        run_id=run_id,
        answer_chain_id=f"{gated.chain_id}:unchecked",
        attempt=gated.attempt,
        decision="unchecked",
        text=text,
        counts=None,
        account_revision=None,
        occurred_at=time.time_ns() // 1000,
        source="outcomes-hook",
    )


def _record(folder: Path, gated: Gated) -> None:
    """One line per check in the session folder (`checks.jsonl`), for the person reading
    the session's state; the run's record is its `answer.checked` events (the worker's
    for a judged check, `unchecked_record` for one shown unchecked)."""
    row = {
        "at": time.time_ns() // 1000,
        "chain_id": gated.chain_id,
        "attempt": gated.attempt,
        "decision": gated.decision,
        "counts": dict(gated.counts),
        "why": gated.note,
    }
    with (folder / CHECKS_FILE).open("ab") as out:
        out.write(orjson.dumps(row) + b"\n")
