"""The Avro codec: canonical JSON <-> Avro bytes, framing, validation, container files.

One module per subject, each importing only those above it in this list:

- `fast`: generated code for the hot paths (converters, binary writers and readers);
- `convert`: converters between canonical JSON and Avro values, with validation;
- `catalog`: the current schemas, parsed once, and the store of writer schemas;
- `registry`: the optional Schema Registry client;
- `core`: :class:`Codec` (framing, encode, decode, limits, dead letters);
- `container`: JSON lines and Avro object container files, and replay's `SourceItem`.

Timestamps follow reducers/timefmt.py, the project's one RFC 3339 parser and formatter.
This module re-exports the names the rest of the project imports from `outcomes.common.codec`.
"""

from __future__ import annotations

from outcomes.common.codec.catalog import (
    SchemaStore,
    current_schemas,
    schema_fingerprint,
    strip_logical_types,
)
from outcomes.common.codec.container import (
    ContainerFailure,
    iter_container_events,
    iter_container_items,
    parse_json_event,
    write_container,
)
from outcomes.common.codec.convert import _Converters, timestamp_micros
from outcomes.common.codec.core import Codec
from outcomes.common.errors import CodecError
from outcomes.reducers.timefmt import MAX_MICROS, MIN_MICROS
from outcomes.reducers.timefmt import format_rfc3339 as format_timestamp
from outcomes.reducers.timefmt import parse_rfc3339 as parse_timestamp

__all__ = [
    "MAX_MICROS",
    "MIN_MICROS",
    "Codec",
    "CodecError",
    "ContainerFailure",
    "SchemaStore",
    "_Converters",  # tests/test_schemas_compat.py compares against the generic converters
    "current_schemas",
    "format_timestamp",
    "iter_container_events",
    "iter_container_items",
    "parse_json_event",
    "parse_timestamp",
    "schema_fingerprint",
    "strip_logical_types",
    "timestamp_micros",
    "write_container",
]
