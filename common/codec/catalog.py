"""The schema catalog: every current (reader) schema, parsed once per process, with its
converters, generated writer and reader; and the store of writer schemas, by fingerprint.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache, partial
from io import BytesIO
from typing import Any

import fastavro
from fastavro.schema import fingerprint as _fastavro_fingerprint
from fastavro.schema import to_parsing_canonical_form

from outcomes import schemas
from outcomes.common.codec.convert import Converter, Json, _Converters, _to_bytes, timestamp_micros
from outcomes.common.codec.fast import (
    FastConverters,
    FastReaders,
    FastWriters,
    Reader,
    Writer,
    with_fallback,
)


def strip_logical_types(node: Any) -> Any:
    """The same schema without `logicalType`s, so fastavro returns raw ints (hot path)."""
    if isinstance(node, list):
        return [strip_logical_types(n) for n in node]
    if isinstance(node, dict):
        if "logicalType" in node and node.get("type") in schemas.PRIMITIVES:
            return node["type"]
        return {k: strip_logical_types(v) for k, v in node.items()}
    return node


def schema_fingerprint(schema: Any) -> bytes:
    """CRC-64-AVRO fingerprint of the Parsing Canonical Form, in wire (little-endian) order."""
    parsed = fastavro.parse_schema(strip_logical_types(schema))
    form = to_parsing_canonical_form(parsed)
    return bytes.fromhex(_fastavro_fingerprint(form, "CRC-64-AVRO"))


def _min_encoded_size(node: Any, named: dict[str, int], namespace: str | None = None) -> int:
    """Fewest bytes a value of this schema can encode to (for the size-limit shortcut)."""
    sizes = {"null": 0, "boolean": 1, "int": 1, "long": 1, "float": 4, "double": 8}
    if isinstance(node, str):
        if node in sizes:
            return sizes[node]
        if node in ("string", "bytes"):
            return 1
        return named.get(schemas.full_name(node, namespace), 0)
    if isinstance(node, list):
        return 1 + min(_min_encoded_size(b, named, namespace) for b in node)
    kind = node["type"]
    if isinstance(kind, list | dict):
        return _min_encoded_size(kind, named, namespace)
    if kind in ("record", "error"):
        namespace = node.get("namespace", namespace)
        name = schemas.full_name(node["name"], namespace)
        named[name] = 0  # provisional, for self-references
        total = sum(_min_encoded_size(f["type"], named, namespace) for f in node["fields"])
        named[name] = total
        return total
    if kind == "enum":
        named[schemas.full_name(node["name"], node.get("namespace", namespace))] = 1
        return 1
    if kind == "fixed":
        size = int(node["size"])
        named[schemas.full_name(node["name"], node.get("namespace", namespace))] = size
        return size
    if kind in ("array", "map"):
        return 1
    return _min_encoded_size(kind, named, namespace)


def _smallest_array_item(node: Any) -> int:
    """Smallest encoded item of any array in the schema (a large number if none)."""
    named: dict[str, int] = {}
    smallest = 1 << 30

    def walk(n: Any, namespace: str | None) -> None:
        nonlocal smallest
        if isinstance(n, list):
            for b in n:
                walk(b, namespace)
        elif isinstance(n, dict):
            kind = n.get("type")
            if kind in ("record", "error"):
                namespace = n.get("namespace", namespace)
                _min_encoded_size(n, named, namespace)
                for f in n["fields"]:
                    walk(f["type"], namespace)
            elif kind == "array":
                smallest = min(smallest, _min_encoded_size(n["items"], named, namespace))
                walk(n["items"], namespace)
            elif kind == "map":
                smallest = min(smallest, 1 + _min_encoded_size(n["values"], named, namespace))
                walk(n["values"], namespace)
            elif isinstance(kind, list | dict):
                walk(kind, namespace)

    walk(node, None)
    return smallest


@dataclass(frozen=True, slots=True)
class RecordSchema:
    """One current (reader) schema with its converters: built once per process."""

    name: str  # full Avro name
    kind: str  # event type (`goal.revised`) or output kind (`notification`)
    is_event: bool
    schema: Any  # self-contained JSON, with logical types
    parsed: Any  # fastavro-parsed, logical types stripped
    fingerprint: bytes
    to_avro: Converter
    to_canonical: Converter | None
    to_fast: Converter | None
    smallest_array_item: int
    write: Writer  # Avro value (as `to_avro` gives it) -> schemaless binary
    read: Reader  # schemaless binary of this very schema -> Avro value (may refuse)


@dataclass(frozen=True, slots=True)
class _Catalog:
    by_name: Mapping[str, RecordSchema]
    events: Mapping[str, RecordSchema]
    outputs: Mapping[str, RecordSchema]
    container_schema: Any  # union of every event record, with logical types


def _fastavro_write(parsed: Any, value: Json) -> bytes:
    buffer = BytesIO()
    fastavro.schemaless_writer(buffer, parsed, value)
    return buffer.getvalue()


@cache
def _catalog() -> _Catalog:
    definitions = schemas.current_definitions()
    converters = _Converters(definitions)
    fast = FastConverters(definitions, timestamp_micros, _to_bytes)
    writers = FastWriters(definitions)
    readers = FastReaders(definitions)
    by_name: dict[str, RecordSchema] = {}
    events: dict[str, RecordSchema] = {}
    outputs: dict[str, RecordSchema] = {}
    roots = [(t, n, True) for t, n in schemas.EVENT_SCHEMAS.items()]
    roots += [(k, n, False) for k, n in schemas.OUTPUT_SCHEMAS.items()]
    for kind, name, is_event in roots:
        schema = schemas.expand(name, definitions)
        parsed = fastavro.parse_schema(strip_logical_types(schema))
        record = RecordSchema(
            name=name,
            kind=kind,
            is_event=is_event,
            schema=schema,
            parsed=parsed,
            fingerprint=schema_fingerprint(schema),
            to_avro=with_fallback(fast.compile(name), converters.to_avro(name, None)),
            to_canonical=converters.from_avro(name, None, canonical=True),
            to_fast=converters.from_avro(name, None, canonical=False),
            smallest_array_item=_smallest_array_item(strip_logical_types(schema)),
            write=with_fallback(writers.compile(name), partial(_fastavro_write, parsed)),
            read=readers.compile(name),
        )
        by_name[name] = record
        (events if is_event else outputs)[kind] = record
    container = schemas.expand(list(schemas.EVENT_SCHEMAS.values()), definitions)
    return _Catalog(by_name, events, outputs, container)


def current_schemas() -> Mapping[str, RecordSchema]:
    """Every current record schema by full Avro name."""
    return _catalog().by_name


@dataclass(frozen=True, slots=True)
class WriterSchema:
    """A schema some producer wrote with: looked up by fingerprint or registry id."""

    name: str
    fingerprint: bytes
    schema: Any  # self-contained JSON as given
    parsed: Any  # fastavro-parsed, logical types stripped
    smallest_array_item: int


@cache
def _history() -> tuple[Any, ...]:
    current = {r.fingerprint for r in _catalog().by_name.values()}
    known = {r.name for r in _catalog().by_name.values()}
    return tuple(
        s
        for s in schemas.history()
        if schemas.full_name(s["name"], s.get("namespace")) in known
        and schema_fingerprint(s) not in current
    )


class SchemaStore:
    """Fingerprint -> writer schema. Knows the current schemas; more can be added.

    Add older or newer versions of a record (same full name) so data written with them
    is resolved against the current reader schema (Avro schema resolution).
    """

    def __init__(self) -> None:
        self._by_fingerprint: dict[bytes, WriterSchema] = {}
        for record in _catalog().by_name.values():
            self.add(record.schema)
        # Every version main has held (schemas/history/), so data an older producer or
        # worker wrote still resolves against the current reader.
        for schema in _history():
            self.add(schema)

    def add(self, schema: str | Mapping[str, Any]) -> bytes:
        """Register a writer schema (JSON text or object); returns its fingerprint."""
        node = json.loads(schema) if isinstance(schema, str) else dict(schema)
        if not isinstance(node, dict) or node.get("type") not in ("record", "error"):
            raise schemas.SchemaFileError("a writer schema must be one self-contained record")
        stripped = strip_logical_types(node)
        fp = schema_fingerprint(node)
        name = schemas.full_name(node["name"], node.get("namespace"))
        self._by_fingerprint[fp] = WriterSchema(
            name, fp, node, fastavro.parse_schema(stripped), _smallest_array_item(stripped)
        )
        return fp

    def get(self, fingerprint: bytes) -> WriterSchema | None:
        return self._by_fingerprint.get(fingerprint)

    def __contains__(self, fingerprint: object) -> bool:
        return fingerprint in self._by_fingerprint

    def __len__(self) -> int:
        return len(self._by_fingerprint)
