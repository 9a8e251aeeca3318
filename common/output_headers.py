"""Kafka headers beside an output record's Avro value: what the sink needs without decoding.

The worker (either engine) publishes every output with these headers; `outcomes sink`
reads them and hands the canonical JSON to ClickHouse as it came (sinks/json_insert.py),
so its Python never decodes the Avro value nor builds rows for such a record. A record
without them (an older worker's) is decoded as before: the Avro value stays the record
of truth on the topic, and the headers carry the same record in the canonical JSON form
of docs/records.md (the form `outcomes replay` writes and the `account` column holds).

- `outcomes-kind`: the output kind (reducers/catalog.py `OUTPUT_KINDS`);
- `outcomes-id`: the record's deterministic id (its kind's id field, docs/records.md);
- `outcomes-json`: the body as canonical JSON: UTF-8, keys sorted, no whitespace.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

import orjson

from outcomes.reducers.records import OutputRecord

KIND_HEADER: Final = "outcomes-kind"
ID_HEADER: Final = "outcomes-id"
JSON_HEADER: Final = "outcomes-json"

Headers = list[tuple[str, bytes]]
# A header's value as confluent-kafka gives it.
HeaderValue = str | bytes | None


def canonical_json(record: OutputRecord) -> bytes:
    """The record's body as canonical JSON (sorted keys, no whitespace)."""
    return orjson.dumps(record.body, option=orjson.OPT_SORT_KEYS)


def output_headers(record: OutputRecord) -> Headers:
    """The headers to publish with `record`'s Avro value (module docstring)."""
    return [
        (KIND_HEADER, record.kind.encode()),
        (ID_HEADER, record.id.encode()),
        (JSON_HEADER, canonical_json(record)),
    ]


def read_output_headers(
    headers: Sequence[tuple[str, HeaderValue]] | Mapping[str, HeaderValue] | None,
) -> tuple[str, str, bytes] | None:
    """(kind, id, canonical JSON) from a message's headers, or None if any is missing,
    empty or not bytes (then the record is decoded from its Avro value)."""
    if not headers:
        return None
    kind = record_id = body = None
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    for name, value in pairs:
        if not isinstance(value, bytes):
            continue
        if name == JSON_HEADER:
            body = value
        elif name == ID_HEADER:
            record_id = value
        elif name == KIND_HEADER:
            kind = value
    if not kind or not record_id or not body:
        return None
    try:
        return kind.decode(), record_id.decode(), body
    except UnicodeDecodeError:
        return None
