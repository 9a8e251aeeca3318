"""Output records: immutable values in the canonical JSON form of docs/records.md."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from outcomes.reducers.catalog import OUTPUT_TOPICS


@dataclass(frozen=True, slots=True)
class OutputRecord:
    """One output: its kind, Kafka key (`run_id`), deterministic id and canonical body.

    `body` is the canonical JSON object of docs/records.md (timestamps as RFC 3339
    strings, bytes as base64 strings). Treat it as read-only: it is shared, not copied.
    """

    kind: str
    key: str
    id: str
    body: Mapping[str, Any]

    @property
    def topic(self) -> str:
        return OUTPUT_TOPICS[self.kind]

    def to_json_line(self) -> bytes:
        """The replay output line: the body plus `"record": kind`, sorted keys."""
        return orjson.dumps({"record": self.kind, **self.body}, option=orjson.OPT_SORT_KEYS)


def dead_letter(
    *,
    reason: str,
    message: str,
    raw: bytes,
    origin_topic: str | None = None,
    origin_partition: int | None = None,
    origin_offset: int | None = None,
    origin_file: str | None = None,
    origin_line: int | None = None,
    run_id: str | None = None,
    event_id: str | None = None,
) -> OutputRecord:
    """A dead letter for input that could not be applied, with where it came from."""
    if origin_topic is not None:
        dl_id = f"{origin_topic}:{origin_partition}:{origin_offset}"
    else:
        dl_id = f"file:{origin_file}:{origin_line}"
    body = {
        "dead_letter_id": dl_id,
        "reason": reason,
        "message": message,
        "raw": base64.b64encode(raw).decode("ascii"),
        "origin_topic": origin_topic,
        "origin_partition": origin_partition,
        "origin_offset": origin_offset,
        "origin_file": origin_file,
        "origin_line": origin_line,
        "run_id": run_id,
        "event_id": event_id,
    }
    return OutputRecord("dead_letter", run_id or "", dl_id, body)
