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


def _account(body: Mapping[str, Any]) -> TableRows:
    run_id = body["run_id"]
    revision = body["revision"]
    revision_id = body["revision_id"]
    created_at = ts(body["observation_cutoff"])
    dims = body["dimensions"]
    yield (
        "account_revisions",
        (
            run_id,
            revision,
            body["supersedes"],
            revision_id,
            body["status"],
            body["workflow_status"],
            created_at,
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
        ),
    )
    for p in body["predicates"]:
        pid = p["id"]
        yield (
            "predicate_results",
            (
                run_id,
                revision,
                pid,
                f"{revision_id}:{pid}",
                pid.split(":", 1)[0],
                p["required"],
                p["state"],
                p["reason"],
                list(p["evidence"]),
                created_at,
            ),
        )
    for c in body["contradictions"]:
        evidence = c["evidence"]
        yield (
            "contradictions",
            (
                run_id,
                revision,
                c["subject"],
                c["kind"],
                f"{revision_id}:{c['subject']}:{c['kind']}",
                [e["event_id"] for e in evidence],
                [str(e["value"]) for e in evidence],
                [ts(e["occurred_at"]) for e in evidence],
                created_at,
            ),
        )
    for e in body["effects"]:
        yield (
            "effect_states",
            (
                run_id,
                revision,
                e["intent_id"],
                f"{revision_id}:{e['intent_id']}",
                e["effect_class"],
                e["state"],
                list(e["receipts"]),
                e["unresolved"],
                created_at,
            ),
        )


def _notification(body: Mapping[str, Any]) -> TableRows:
    yield (
        "notifications",
        (
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
            "journal_retrieval_events",
            (
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
            "journal_context_injections",
            (
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
            "provenance_findings",
            (
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
        "claim_notifications",
        (
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
