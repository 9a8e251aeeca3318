"""The record of a check of an answer before display (SPEC 8 "Record"): `answer.checked`.

`answer_checked_event` builds the canonical JSON event the worker publishes after each
check, and that a caller publishes when the gate gave it no answer in time (`unchecked`).
Pure: the caller gives the time. The event id is derived from the run, the answer chain
and the attempt, so recording the same check twice (a retried publish, a worker that
restarts between the check and its record) is one event: the fold drops the copy, and
the sink keeps one `answer_check` row per attempt (docs/records.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from hashlib import sha256
from typing import Any, Final, Literal, get_args

from outcomes.reducers.events import AnswerDecision
from outcomes.reducers.timefmt import format_rfc3339

# The claim counts an `answer.checked` event carries, in its field order.
COUNT_FIELDS: Final = ("supported", "contradicted", "unverifiable", "needs_review", "omitted")
DECISIONS: Final = get_args(AnswerDecision)


def text_digest(text: str) -> str:
    """sha256 of the text's UTF-8, lowercase hex: what `answer.checked` keeps of it."""
    return sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def answer_check_id(run_id: str, answer_chain_id: str, attempt: int) -> str:
    """The id of an attempt's `answer_check` row: `<run_id>:answer:<chain>:<attempt>`."""
    return f"{run_id}:answer:{answer_chain_id}:{attempt}"


def answer_check_event_id(run_id: str, answer_chain_id: str, attempt: int) -> str:
    """`answer:<sha256 hex of run, chain and attempt>`: one id per attempt of a chain."""
    key = "\x00".join((run_id, answer_chain_id, str(attempt)))
    return "answer:" + sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def answer_checked_event(
    *,
    run_id: str,
    answer_chain_id: str,
    attempt: int,
    decision: AnswerDecision | Literal["stale"],
    text: str,
    counts: Mapping[str, int] | None,
    account_revision: int | None,
    occurred_at: int,
    source: str,
) -> dict[str, Any]:
    """The canonical JSON `answer.checked` event of one check.

    `decision` is the gate's (`pass`, `repair`, `contain`), or `unchecked` when the
    caller got no usable answer in time; a `stale` answer is recorded as `unchecked`
    (SPEC 8: no verdict was given). `counts` is the check's claims by verdict
    (`GateResult.counts()`: keys of :data:`COUNT_FIELDS`, a missing one is 0), None for
    an unchecked answer (all 0). `text` is the candidate answer: only its digest is
    kept. `occurred_at` is microseconds since the epoch (UTC), `source` the recorder.

    Raises ValueError for an attempt below 1, an unknown decision or count key, or a
    negative count: a bug of the caller's, never a record.
    """
    if decision == "stale":
        decision = "unchecked"
    if decision not in DECISIONS:
        raise ValueError(
            f"decision must be one of {', '.join(DECISIONS)} (or stale), not {decision!r}"
        )
    if type(attempt) is not int or attempt < 1:
        raise ValueError(f"attempt counts from 1, got {attempt!r}")
    given = dict(counts or {})
    unknown = set(given) - set(COUNT_FIELDS)
    if unknown:
        raise ValueError(f"unknown count {sorted(unknown)}: counts are {', '.join(COUNT_FIELDS)}")
    tally = {name: given.get(name, 0) for name in COUNT_FIELDS}
    for name, value in tally.items():
        if type(value) is not int or value < 0:
            raise ValueError(f"count {name} must be an integer >= 0, got {value!r}")
    return {
        "event_id": answer_check_event_id(run_id, answer_chain_id, attempt),
        "run_id": run_id,
        "type": "answer.checked",
        "occurred_at": format_rfc3339(occurred_at),
        "source": source,
        "answer_chain_id": answer_chain_id,
        "attempt": attempt,
        "decision": decision,
        "account_revision": account_revision,
        "text_digest": text_digest(text),
        **tally,
    }
