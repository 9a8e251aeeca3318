"""Output records -> table rows: a pure function of each record (no I/O, no clock).

Rows come out in the column order of sinks/schema.py. Every row's identity (its
ORDER BY key and `row_id`) derives from the record's deterministic id, so the same
record always yields the same rows: the basis of exactly-once in sinks/writer.py.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator, Mapping
from functools import lru_cache
from typing import Any

import orjson

from outcomes.reducers.records import OutputRecord
from outcomes.reducers.timefmt import parse_rfc3339
from outcomes.sinks import tables
from outcomes.sinks.exceptions import MalformedRecord, UnknownRecordKind

Row = tuple[Any, ...]
TableRows = Iterator[tuple[str, Row]]


@lru_cache(maxsize=65_536)
def ts(value: str) -> int:
    """An RFC 3339 timestamp string (docs/records.md) as microseconds since the epoch.

    DateTime64(6) takes the integer as is, which is exact and skips per-row datetime
    conversion in the driver. Revisions share one cutoff across all their child rows,
    hence the cache. The rules are reducers/timefmt.py's (ValueError otherwise).
    """
    return parse_rfc3339(value)


def revision_row(body: Mapping[str, Any]) -> Row:
    """An account revision's one row of `account_revision_rows`: the headline columns,
    the canonical account JSON, then its predicates, contradictions and effects as the
    parallel arrays of its Nested columns (sinks/schema.py, migration 13)."""
    dims = body["dimensions"]
    predicates = body["predicates"]
    contradictions = body["contradictions"]
    effects = body["effects"]
    pids = [p["id"] for p in predicates]
    evidence = [c["evidence"] for c in contradictions]
    return (
        body["run_id"],
        body["revision"],
        body["supersedes"],
        body["revision_id"],
        body["status"],
        body["workflow_status"],
        ts(body["observation_cutoff"]),
        body["trigger_event_id"],
        body["state_revision"],
        body["goal_revision"],
        body["candidate_snapshot"],
        body["schema_version"],
        body["assembler_version"],
        dims["response_completion"],
        dims["requested_action_outcome"],
        dims["verification"],
        dims["review"],
        dims["durability"],
        list(body["changes"]),
        orjson.dumps(body, option=orjson.OPT_SORT_KEYS).decode(),
        pids,
        [pid.split(":", 1)[0] for pid in pids],
        [p["required"] for p in predicates],
        [p["state"] for p in predicates],
        [p["reason"] for p in predicates],
        [list(p["evidence"]) for p in predicates],
        [c["subject"] for c in contradictions],
        [c["kind"] for c in contradictions],
        [[e["event_id"] for e in ev] for ev in evidence],
        [[str(e["value"]) for e in ev] for ev in evidence],
        [[ts(e["occurred_at"]) for e in ev] for ev in evidence],
        [e["intent_id"] for e in effects],
        [e["effect_class"] for e in effects],
        [e["state"] for e in effects],
        [list(e["receipts"]) for e in effects],
        [e["unresolved"] for e in effects],
    )


def _account(body: Mapping[str, Any]) -> TableRows:
    yield tables.ACCOUNT_REVISION_ROWS.name, revision_row(body)


def _default(kind: str) -> Any:
    """The value a column of `output_rows` holds in rows of another record table."""
    if kind.startswith("Array("):
        return []
    if "Nullable(" in kind:
        return None
    if "String" in kind:
        return ""
    if kind == "Bool":
        return False
    if kind.startswith("Float"):
        return 0.0
    return 0  # integers, and DateTime64 as microseconds


def output_row_packer(
    record_table: str, target: tables.Table = tables.OUTPUT_ROWS
) -> Callable[..., Row]:
    """A function from the values of a row in the columns of the table `record_table`
    (an old table, or `answer_checks`; as the builders below give them) to its row of
    `output_rows` (`target`: its layout of a given migration, the current by default)."""
    names = target.column_names
    template = [_default(kind) for kind in target.column_types]
    template[0] = record_table
    shown = tables.OUTPUT_ROW_TABLES_BY_NAME[record_table]
    slots = [names.index(n) for n in shown.column_names]

    def pack(*row: Any) -> Row:
        out = template.copy()
        for slot, value in zip(slots, row, strict=True):
            out[slot] = value
        return tuple(out)

    return pack


_PACK = {t.name: output_row_packer(t.name) for t in tables.OUTPUT_ROW_TABLES}
_OUTPUT_ROWS = tables.OUTPUT_ROWS.name


def _notification(body: Mapping[str, Any]) -> TableRows:
    yield (
        _OUTPUT_ROWS,
        _PACK["notifications"](
            body["run_id"],
            body["revision"],
            body["notification_id"],
            body["kind"],
            body["supersedes"],
            body["status"],
            body["previous_status"],
            body["completion_automation"],
            ts(body["observation_cutoff"]),
        ),
    )


def _provenance(body: Mapping[str, Any]) -> TableRows:
    row_type = body["row_type"]
    run_id = body["run_id"]
    row_id = body["row_id"]
    occurred_at = ts(body["occurred_at"])
    if row_type == "retrieval_candidate":
        r = body["retrieval"]
        yield (
            _OUTPUT_ROWS,
            _PACK["journal_retrieval_events"](
                run_id,
                r["retrieval_id"],
                r["candidate_id"],
                row_id,
                body["event_id"],
                occurred_at,
                r["job_id"],
                r["query_hash"],
                r["algorithm"],
                r["config_hash"],
                r["source_type"],
                r["source_event_id"],
                r["rank"],
                float(r["score"]),
                r["eligible"],
                r["decision"],
                r["withhold_reason"],
            ),
        )
    elif row_type == "context_injection":
        i = body["injection"]
        yield (
            _OUTPUT_ROWS,
            _PACK["journal_context_injections"](
                run_id,
                i["injection_id"],
                body["event_id"],
                row_id,
                occurred_at,
                i["model_call_id"],
                i["retrieval_id"],
                list(i["candidate_ids"]),
                i["block_hash"],
                i["block_bytes"],
                i["location"],
                i["range_start"],
                i["range_end"],
                i["confirmed"],
                i["removed_before_inference"],
            ),
        )
    elif row_type == "finding":
        f = body["finding"]
        yield (
            _OUTPUT_ROWS,
            _PACK["provenance_findings"](
                run_id,
                f["kind"],
                f["subject"],
                f["revision"],
                row_id,
                f["change"],
                list(f["evidence"]),
                body["event_id"],
                occurred_at,
            ),
        )
    else:
        raise MalformedRecord(f"provenance row {row_id}: unknown row_type {row_type!r}")


def _verdict_index(body: Mapping[str, Any]) -> int:
    """A claim's position among its narrative's claims (its key); 0 for an omission.
    Records from before settlements (no claim_id) count from their id's last part."""
    claim = body["claim_id"]
    if claim is None:
        return int(body["verdict_id"].rsplit(":", 1)[1])
    key = claim[len(body["run_id"]) + len(body["narrative_id"]) + 2 :]
    return int(key) if key.isdigit() else 0


def _claim_verdict(body: Mapping[str, Any]) -> TableRows:
    yield (
        "claim_verdicts",
        (
            body["run_id"],
            body["narrative_id"],
            _verdict_index(body),
            body["verdict_id"],
            body["event_id"],
            body["account_revision"],
            body["claim_kind"],
            body["verdict"],
            body["subject"],
            body["span_start"],
            body["span_end"],
            body["span_text"],
            body["reason"],
            body["claim_id"] or "",
            body["settlement"],
            body["supersedes"],
            body["withdrawn"],
            body.get("supported"),  # absent in records written before it existed
        ),
    )


def _claim_notification(body: Mapping[str, Any]) -> TableRows:
    yield (
        _OUTPUT_ROWS,
        _PACK["claim_notifications"](
            body["run_id"],
            body["revision"],
            body["trigger_event_id"],
            body["notification_id"],
            body["status"],
            ts(body["observation_cutoff"]),
            list(body["narrative_ids"]),
            list(body["verdict_ids"]),
            body["superseded"],
            body["withdrawn"],
        ),
    )


def _answer_check(body: Mapping[str, Any]) -> TableRows:
    yield (
        _OUTPUT_ROWS,
        _PACK["answer_checks"](
            body["run_id"],
            body["answer_chain_id"],
            body["attempt"],
            body["check_id"],
            body["event_id"],
            ts(body["occurred_at"]),
            body["source"],
            body["decision"],
            body["account_revision"],
            body["text_digest"],
            body["supported"],
            body["contradicted"],
            body["unverifiable"],
            body["needs_review"],
            body["omitted"],
        ),
    )


def _dead_letter(body: Mapping[str, Any], recorded_by: str = "pipeline") -> TableRows:
    origin_topic = body["origin_topic"]
    yield (
        "dead_letters",
        (
            body["dead_letter_id"],
            recorded_by,
            body["reason"],
            body["message"],
            base64.b64decode(body["raw"]),
            origin_topic,
            body["origin_partition"],
            body["origin_offset"],
            body["origin_file"],
            body["origin_line"],
            body["run_id"],
            body["event_id"],
        ),
    )


_BUILDERS: dict[str, Callable[[Mapping[str, Any]], TableRows]] = {
    "account_revision": _account,
    "notification": _notification,
    "provenance_row": _provenance,
    "claim_verdict": _claim_verdict,
    "claim_notification": _claim_notification,
    "dead_letter": _dead_letter,
    "answer_check": _answer_check,
}


def sink_dead_letter_rows(record: OutputRecord) -> list[tuple[str, Row]]:
    """Rows of a dead letter the sink itself made (an output it could not decode)."""
    return list(_dead_letter(record.body, recorded_by="sink"))


def rows_for(record: OutputRecord) -> list[tuple[str, Row]]:
    """Every (table, row) an output record lands as; raises MalformedRecord if broken."""
    builder = _BUILDERS.get(record.kind)
    if builder is None:
        raise UnknownRecordKind(f"record {record.id}: unknown kind {record.kind!r}")
    try:
        return list(builder(record.body))
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise MalformedRecord(
            f"{record.kind} {record.id}: does not match docs/records.md ({exc!r})"
        ) from exc
