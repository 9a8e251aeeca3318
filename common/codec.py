"""Avro codec: canonical JSON <-> Avro bytes, framing, validation, container files.

Schemas (`schemas/*.avsc`) are parsed once per process; from each one the codec builds,
once, converters that map canonical JSON (SPEC section 2, docs/records.md: RFC 3339
timestamps, base64 bytes, dotted enum strings) to Avro values and back, validating as
they go. Per message the work is: read the header, one fastavro call, and the
conversion the caller asked for.

Wire formats (the decoder reads both):

- Avro single-object encoding (default): ``C3 01`` + 8-byte little-endian CRC-64-AVRO
  fingerprint of the writer schema's Parsing Canonical Form + body. A topic can carry
  several record types; the reader finds the writer schema by fingerprint in its
  :class:`SchemaStore`, and resolves it against the current (reader) schema.
- Confluent Schema Registry framing (when ``Settings.schema_registry_url`` is set):
  ``00`` + 4-byte big-endian schema id + body. Schemas are registered under
  ``<topic>-<record full name>`` (TopicRecordNameStrategy), since a topic carries
  several record types.

Decoding failures are :class:`common.errors.CodecError` with a dead-letter reason;
:meth:`Codec.decode_or_dead_letter` turns any failure into a dead-letter record, so a
consumer never stops on bad input.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from functools import cache, partial
from io import BytesIO
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol, cast

import fastavro
import orjson
from fastavro.read import SchemaResolutionError
from fastavro.schema import fingerprint as _fastavro_fingerprint
from fastavro.schema import to_parsing_canonical_form

import schemas
from common.avro_fast import (
    FastConverters,
    FastReaders,
    FastWriters,
    Reader,
    Writer,
    with_fallback,
)
from common.errors import (
    SCHEMA_VIOLATION,
    TOO_LARGE,
    UNDECODABLE,
    UNKNOWN_SCHEMA,
    CodecError,
    SchemaRegistryUnavailable,
)
from reducers.catalog import EVENT_TOPICS
from reducers.limits import Limits
from reducers.records import OutputRecord, dead_letter

if TYPE_CHECKING:
    from common.settings import Settings
    from streams.replay import SourceItem

log = logging.getLogger(__name__)

# Largest record of any kind the codec decodes (outputs; inputs have their own limit).
MAX_RECORD_BYTES = 16 * 1024 * 1024
SOE_MAGIC: Final = b"\xc3\x01"
SOE_HEADER_BYTES: Final = 10
REGISTRY_MAGIC: Final = 0
REGISTRY_HEADER_BYTES: Final = 5

Json = dict[str, Any]
Converter = Callable[[Any], Any]

# ---------------------------------------------------------------------------
# Timestamps: RFC 3339 strings <-> int microseconds since the epoch (UTC).

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MICRO: Final = timedelta(microseconds=1)
MIN_MICROS: Final = (datetime(1, 1, 1, tzinfo=UTC) - _EPOCH) // _MICRO
MAX_MICROS: Final = (datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC) - _EPOCH) // _MICRO
_RFC3339: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))"
)


def parse_timestamp(text: str) -> int:
    """RFC 3339 with a zone (``2026-11-30T10:00:00.000Z``) -> int microseconds (UTC).

    More than 6 fractional digits are accepted only if the extra ones are zeros:
    Avro `timestamp-micros` cannot hold them, and the codec never loses data silently.
    """
    # Fast path: the canonical form this project writes (`format_timestamp`), which
    # every output timestamp has. `fromisoformat` (C) reads it exactly; anything it
    # refuses, or any other shape, takes the general path below.
    if len(text) == 27 and text[26] == "Z" and text[10] == "T" and text[19] == ".":
        try:
            return (datetime.fromisoformat(text) - _EPOCH) // _MICRO
        except ValueError:
            pass
    return _parse_timestamp_general(text)


def _parse_timestamp_general(text: str) -> int:
    match = _RFC3339.fullmatch(text)
    if match is None:
        raise ValueError(f"not an RFC 3339 timestamp with a zone: {text!r}")
    year, month, day, hour, minute, second = (int(g) for g in match.group(1, 2, 3, 4, 5, 6))
    fraction = match.group(7) or ""
    if len(fraction) > 6 and fraction[6:].strip("0"):
        raise ValueError(f"timestamp finer than microseconds: {text!r}")
    micros = int(fraction[:6].ljust(6, "0")) if fraction else 0
    if match.group(8):
        zone: timezone = UTC
    else:
        offset = timedelta(hours=int(match.group(10)), minutes=int(match.group(11)))
        zone = timezone(-offset if match.group(9) == "-" else offset)
    moment = datetime(year, month, day, hour, minute, second, tzinfo=zone)
    return (moment - _EPOCH) // _MICRO + micros


def format_timestamp(micros: int) -> str:
    """int microseconds (UTC) -> ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` (docs/records.md)."""
    t = _EPOCH + timedelta(microseconds=micros)
    return (
        f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:"
        f"{t.second:02d}.{t.microsecond:06d}Z"
    )


def timestamp_micros(value: Any) -> int:
    """Accept an RFC 3339 string, an aware datetime or int micros; give int micros."""
    if isinstance(value, str):
        micros = parse_timestamp(value)
    elif isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError("datetime without a time zone")
        micros = (value - _EPOCH) // _MICRO
    elif isinstance(value, int) and not isinstance(value, bool):
        micros = value
    else:
        raise ValueError(f"expected an RFC 3339 timestamp string, got {_kind(value)}")
    if not MIN_MICROS <= micros <= MAX_MICROS:
        raise ValueError(f"timestamp out of range (years 1..9999): {value!r}")
    return micros


# ---------------------------------------------------------------------------
# Schema-driven converters, built once per named type.


class _Violation(Exception):
    """Internal: a value does not fit the schema; `path` grows as it unwinds."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.path: list[str] = []

    def location(self) -> str:
        out = ""
        for segment in reversed(self.path):
            out += segment if segment.startswith("[") else (f".{segment}" if out else segment)
        return out or "<record>"


def _kind(value: Any) -> str:
    return type(value).__name__ if value is not None else "null"


def _to_boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _Violation(f"expected a boolean, got {_kind(value)}")
    return value


def _int_converter(bits: int) -> Converter:
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1

    def convert(value: Any) -> int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise _Violation(f"expected an integer, got {_kind(value)}")
        if not low <= value <= high:
            raise _Violation(f"integer {value} out of range for a {bits}-bit Avro number")
        return value

    return convert


def _to_double(value: Any) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise _Violation(f"expected a number, got {_kind(value)}")
    number = float(value)
    if not math.isfinite(number):
        raise _Violation(f"number must be finite, got {number}")
    return number


def _to_string(value: Any) -> str:
    if not isinstance(value, str):
        raise _Violation(f"expected a string, got {_kind(value)}")
    return value


def _to_bytes(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if not isinstance(value, str):
        raise _Violation(f"expected a base64 string, got {_kind(value)}")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise _Violation(f"invalid base64: {exc}") from None


def _to_timestamp(value: Any) -> int:
    try:
        return timestamp_micros(value)
    except (ValueError, OverflowError) as exc:
        raise _Violation(str(exc)) from None


def _from_timestamp(value: Any) -> str:
    if isinstance(value, datetime):  # container files written with logical types
        value = (value - _EPOCH) // _MICRO
    return format_timestamp(value)


def _from_bytes(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


class _Converters:
    """Builds and caches converters for the named types of one set of definitions.

    - `to_avro`: canonical JSON (or already-Avro values) -> Avro value, validating;
    - `canonical`: Avro value -> canonical JSON (timestamps, bytes, dotted enums);
    - `fast`: Avro value -> hot-path form (only dotted enums mapped; timestamps stay int).
    `canonical`/`fast` return None for a subtree that needs no change, so a record
    only touches the fields that do.
    """

    def __init__(self, definitions: Mapping[str, Mapping[str, Any]]) -> None:
        self._defs = definitions
        self._to: dict[str, Converter] = {}
        self._from: dict[tuple[str, bool], Converter | None] = {}

    def _named(self, node: Any, namespace: str | None) -> tuple[str, Mapping[str, Any]] | None:
        if isinstance(node, str) and node not in schemas.PRIMITIVES:
            name = schemas.full_name(node, namespace)
            return name, self._defs[name]
        if isinstance(node, Mapping) and node.get("type") in schemas.NAMED_KINDS:
            return schemas.full_name(node["name"], node.get("namespace", namespace)), node
        return None

    # -- canonical JSON -> Avro --------------------------------------------------------

    def to_avro(self, node: Any, namespace: str | None) -> Converter:
        named = self._named(node, namespace)
        if named is not None:
            name, definition = named
            if name not in self._to:
                self._to[name] = self._build_to(definition, name.rpartition(".")[0] or None)
            return self._to[name]
        return self._build_to(node, namespace)

    def _build_to(self, node: Any, namespace: str | None) -> Converter:
        if isinstance(node, list):
            return self._union_to(node, namespace)
        kind = node if isinstance(node, str) else node["type"]
        logical = node.get("logicalType") if isinstance(node, Mapping) else None
        if isinstance(kind, list | Mapping):
            return self.to_avro(kind, namespace)
        if logical == "timestamp-micros" and kind == "long":
            return _to_timestamp
        simple: dict[str, Converter] = {
            "boolean": _to_boolean,
            "int": _int_converter(32),
            "long": _int_converter(64),
            "double": _to_double,
            "float": _to_double,
            "string": _to_string,
            "bytes": _to_bytes,
        }
        if kind in simple:
            return simple[kind]
        if kind == "null":
            return _expect_null
        if kind == "enum":
            return _enum_to(node)
        if kind == "array":
            return _array_to(self.to_avro(node["items"], namespace))
        if kind in ("record", "error"):
            return self._record_to(node, namespace)
        raise schemas.SchemaFileError(f"codec does not support Avro type {kind!r}")

    def _union_to(self, branches: list[Any], namespace: str | None) -> Converter:
        others = [b for b in branches if b != "null"]
        if len(others) != 1:
            raise schemas.SchemaFileError("codec supports unions of null and one type only")
        inner = self.to_avro(others[0], namespace)
        nullable = "null" in branches

        def convert(value: Any) -> Any:
            if value is None and nullable:
                return None
            return inner(value)

        return convert

    def _record_to(self, node: Mapping[str, Any], namespace: str | None) -> Converter:
        # Filled after the field converters exist, so a self-reference resolves.
        fields: list[tuple[str, Converter, bool, Any]] = []
        names = frozenset(f["name"] for f in node["fields"])
        record_name = node["name"]

        def convert(value: Any) -> Json:
            if not isinstance(value, Mapping):
                raise _Violation(f"expected an object ({record_name}), got {_kind(value)}")
            unknown = value.keys() - names
            if unknown:
                raise _Violation(f"unknown field(s) {sorted(map(str, unknown))}")
            out: Json = {}
            for name, field_convert, has_default, default in fields:
                if name in value:
                    try:
                        out[name] = field_convert(value[name])
                    except _Violation as exc:
                        exc.path.append(name)
                        raise
                elif has_default:
                    out[name] = default
                else:
                    missing = _Violation("missing required field")
                    missing.path.append(name)
                    raise missing
            return out

        for field in node["fields"]:
            fields.append(
                (
                    field["name"],
                    self.to_avro(field["type"], namespace),
                    "default" in field,
                    field.get("default"),
                )
            )
        return convert

    # -- Avro -> canonical JSON / hot-path form ------------------------------------------

    def from_avro(self, node: Any, namespace: str | None, canonical: bool) -> Converter | None:
        named = self._named(node, namespace)
        if named is not None:
            name, definition = named
            key = (name, canonical)
            if key not in self._from:
                self._from[key] = self._build_from(
                    definition, name.rpartition(".")[0] or None, canonical
                )
            return self._from[key]
        return self._build_from(node, namespace, canonical)

    def _build_from(self, node: Any, namespace: str | None, canonical: bool) -> Converter | None:
        if isinstance(node, list):
            inner = [self.from_avro(b, namespace, canonical) for b in node if b != "null"]
            only = inner[0] if len(inner) == 1 else None
            if only is None:
                return None
            return lambda value: None if value is None else only(value)
        kind = node if isinstance(node, str) else node["type"]
        if isinstance(kind, list | Mapping):
            return self.from_avro(kind, namespace, canonical)
        logical = node.get("logicalType") if isinstance(node, Mapping) else None
        if kind == "long" and logical == "timestamp-micros":
            return _from_timestamp if canonical else None
        if kind == "bytes":
            return _from_bytes if canonical else None
        if kind == "enum":
            mapping = dict(node.get("canonicalValues", {}))
            if not mapping:
                return None
            return lambda symbol: mapping.get(symbol, symbol)
        if kind == "array":
            item = self.from_avro(node["items"], namespace, canonical)
            if item is None:
                return None
            return lambda values: [item(v) for v in values]
        if kind in ("record", "error"):
            changing = [
                (f["name"], conv)
                for f in node["fields"]
                if (conv := self.from_avro(f["type"], namespace, canonical)) is not None
            ]
            if not changing:
                return None

            def convert(value: Json) -> Json:
                for name, field_convert in changing:
                    value[name] = field_convert(value[name])
                return value  # fresh from the decoder: ours to change in place

            return convert
        return None


def _expect_null(value: Any) -> None:
    if value is not None:
        raise _Violation(f"expected null, got {_kind(value)}")


def _enum_to(node: Mapping[str, Any]) -> Converter:
    # `canonicalValues` maps a symbol to its canonical JSON string where they differ
    # (Avro symbols cannot contain '.', e.g. account_final <-> account.final).
    canonical = dict(node.get("canonicalValues", {}))
    by_value = {canonical.get(symbol, symbol): symbol for symbol in node["symbols"]}
    allowed = list(by_value)

    def convert(value: Any) -> str:
        symbol = by_value.get(value) if isinstance(value, str) else None
        if symbol is None:
            raise _Violation(f"expected one of {allowed}, got {value!r}")
        return symbol

    return convert


def _array_to(item: Converter) -> Converter:
    def convert(value: Any) -> list[Any]:
        if not isinstance(value, list | tuple):
            raise _Violation(f"expected a list, got {_kind(value)}")
        out = []
        for index, element in enumerate(value):
            try:
                out.append(item(element))
            except _Violation as exc:
                exc.path.append(f"[{index}]")
                raise
        return out

    return convert


# ---------------------------------------------------------------------------
# Schema catalog (current schemas, parsed once) and the writer-schema store.


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


class SchemaStore:
    """Fingerprint -> writer schema. Knows the current schemas; more can be added.

    Add older or newer versions of a record (same full name) so data written with them
    is resolved against the current reader schema (Avro schema resolution).
    """

    def __init__(self) -> None:
        self._by_fingerprint: dict[bytes, WriterSchema] = {}
        for record in _catalog().by_name.values():
            self.add(record.schema)

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


# ---------------------------------------------------------------------------
# Schema Registry (optional).


class RegistryClient(Protocol):
    """The two Schema Registry calls the codec needs (register, look up by id)."""

    def register(self, subject: str, schema_str: str) -> int: ...

    def lookup(self, schema_id: int) -> str: ...


class ConfluentRegistry:
    """:class:`RegistryClient` over confluent-kafka's `schema_registry` client.

    Needs `confluent-kafka[schemaregistry]` (httpx, authlib, ...); imported on first use.
    """

    def __init__(self, url: str) -> None:
        try:
            from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
        except ImportError as exc:
            raise SchemaRegistryUnavailable(
                f"schema registry {url} configured, but its client is missing ({exc}): "
                "install confluent-kafka[schemaregistry]"
            ) from None
        self._schema_type = Schema
        self._client = SchemaRegistryClient({"url": url})

    def register(self, subject: str, schema_str: str) -> int:
        return int(self._client.register_schema(subject, self._schema_type(schema_str, "AVRO")))

    def lookup(self, schema_id: int) -> str:
        return str(self._client.get_schema(schema_id).schema_str)


# ---------------------------------------------------------------------------
# The codec.


@dataclass(frozen=True, slots=True)
class Decoded:
    """A decoded record: its Avro full name, kind and canonical JSON value."""

    schema_name: str
    kind: str  # event type or output kind
    value: Json

    @property
    def is_event(self) -> bool:
        return self.kind in EVENT_TOPICS


@dataclass(frozen=True, slots=True)
class _Plan:
    record: RecordSchema
    writer: Any
    reader: Any  # None when the writer is the current schema (no resolution)
    walk_above: int  # walk for string/list limits only above this many body bytes
    # The generated reader when there is no resolution; on a refusal, fastavro reads.
    fast_read: Reader | None


class Codec:
    """Encode and decode every record of the contract. One per process is enough.

    `settings` gives the size limits and, if set, the Schema Registry URL. Tests may
    pass `registry` (a :class:`RegistryClient`) and `store` directly.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        registry: RegistryClient | None = None,
        store: SchemaStore | None = None,
    ) -> None:
        self._catalog = _catalog()
        self.limits: Limits = settings.limits if settings is not None else Limits()
        self.store = store if store is not None else SchemaStore()
        if registry is None and settings is not None and settings.schema_registry_url:
            registry = ConfluentRegistry(settings.schema_registry_url)
        self.registry = registry
        self._plans: dict[bytes, _Plan] = {}
        self._id_plans: dict[int, _Plan] = {}
        self._ids: dict[tuple[str, str], int] = {}
        self._max_event_bytes = self.limits.max_event_bytes
        # 10-byte SOE header -> plan, for current event schemas that need no conversion.
        self._fast_plans: dict[bytes, _Plan] = {}
        self._soe_headers = {
            r.name: SOE_MAGIC + r.fingerprint for r in self._catalog.by_name.values()
        }

    # -- encoding --------------------------------------------------------------------------

    def event_from_json(self, event: Any) -> Json:
        """Validate a canonical JSON event; give it in the hot-path form.

        The result has every field (omitted optionals as None), `occurred_at` as int
        microseconds and enums as their canonical strings: the same form as
        :meth:`decode_event_fast`, so replay and the stream feed the core alike.
        """
        record = self._event_schema(event)
        value = self._to_avro(record, event)
        self._check_limits(value, record, None)
        return record.to_fast(value) if record.to_fast is not None else value

    def encode_event(self, event: Mapping[str, Any]) -> bytes:
        """Canonical JSON event -> framed Avro bytes (schema picked by `type`)."""
        record = self._event_schema(event)
        value = self._to_avro(record, event)
        body = record.write(value)
        header = self._header(record, EVENT_TOPICS[record.kind])
        if len(header) + len(body) > self.limits.max_event_bytes:
            raise CodecError(
                TOO_LARGE,
                f"{record.kind}: encoded event is {len(header) + len(body)} bytes, "
                f"limit {self.limits.max_event_bytes}",
                run_id=value["run_id"],
                event_id=value["event_id"],
            )
        self._check_limits(value, record, len(body))
        return header + body

    def encode_output(self, record: OutputRecord) -> bytes:
        """An output record (canonical JSON body) -> framed Avro bytes."""
        schema = self._catalog.outputs.get(record.kind)
        if schema is None:
            raise CodecError(SCHEMA_VIOLATION, f"unknown output kind {record.kind!r}")
        value = self._to_avro(schema, record.body)
        return self._header(schema, record.topic) + schema.write(value)

    def _event_schema(self, event: Any) -> RecordSchema:
        if not isinstance(event, Mapping):
            raise CodecError(
                SCHEMA_VIOLATION, f"an event must be a JSON object, got {_kind(event)}"
            )
        event_type = event.get("type")
        record = self._catalog.events.get(event_type) if isinstance(event_type, str) else None
        if record is None:
            raise CodecError(
                SCHEMA_VIOLATION,
                f"unknown event type {event_type!r}",
                run_id=_str_or_none(event.get("run_id")),
                event_id=_str_or_none(event.get("event_id")),
            )
        return record

    @staticmethod
    def _to_avro(record: RecordSchema, value: Mapping[str, Any]) -> Json:
        try:
            out: Json = record.to_avro(value)
            return out
        except _Violation as exc:
            raise CodecError(
                SCHEMA_VIOLATION,
                f"{record.kind}: {exc.location()}: {exc.message}",
                run_id=_str_or_none(value.get("run_id")),
                event_id=_str_or_none(value.get("event_id")),
            ) from None

    def _header(self, record: RecordSchema, topic: str) -> bytes:
        if self.registry is None:
            return self._soe_headers[record.name]
        key = (topic, record.name)
        schema_id = self._ids.get(key)
        if schema_id is None:
            schema_id = self.registry.register(f"{topic}-{record.name}", json.dumps(record.schema))
            self._ids[key] = schema_id
            self._id_plans.setdefault(schema_id, self._plan_for(record, record.parsed, None))
        return bytes([REGISTRY_MAGIC]) + schema_id.to_bytes(4, "big")

    # -- decoding --------------------------------------------------------------------------

    def decode_event_fast(self, data: bytes) -> Json:
        """Hot path: framed bytes -> event dict with `occurred_at` as int microseconds.

        Enum values are canonical strings; every field is present. Raises CodecError.
        """
        # Common case inline: a known single-object header of a current event schema.
        plan = self._fast_plans.get(data[:SOE_HEADER_BYTES])
        size = len(data)
        if plan is None or size > self._max_event_bytes:
            return self._decode_event_checked(data)
        read = plan.fast_read
        assert read is not None  # a fast plan has no schema resolution
        try:
            value, end = read(data, SOE_HEADER_BYTES)
        except Exception:  # let the checked path classify the failure
            return self._decode_event_checked(data)
        if (
            end != size
            or size - SOE_HEADER_BYTES > plan.walk_above
            or value["type"] != plan.record.kind
            or not MIN_MICROS <= value["occurred_at"] <= MAX_MICROS
        ):
            return self._decode_event_checked(data)
        return value

    def _decode_event_checked(self, data: bytes) -> Json:
        plan, value = self._read(data)
        record = plan.record
        if not record.is_event:
            raise CodecError(SCHEMA_VIOLATION, f"{record.name} is not an event record")
        self._check_event(record, value)
        if plan.reader is None and not record.to_fast and data[:2] == SOE_MAGIC:
            self._fast_plans[bytes(data[:SOE_HEADER_BYTES])] = plan
        return record.to_fast(value) if record.to_fast is not None else value

    def decode(self, data: bytes) -> Decoded:
        """Framed bytes (any record) -> canonical JSON value. Raises CodecError."""
        plan, value = self._read(data)
        record = plan.record
        if record.is_event:
            self._check_event(record, value)
        if record.to_canonical is not None:
            try:
                value = record.to_canonical(value)
            except (ValueError, OverflowError) as exc:
                raise CodecError(
                    SCHEMA_VIOLATION, f"{record.kind}: value out of range: {exc}"
                ) from None
        return Decoded(record.name, record.kind, value)

    def decode_or_dead_letter(
        self,
        data: bytes,
        topic: str | None = None,
        partition: int | None = None,
        offset: int | None = None,
        *,
        canonical: bool = False,
    ) -> Json | OutputRecord:
        """An input event (as :meth:`decode_event_fast`, or canonical JSON) or a dead letter.

        Never raises: undecodable bytes, unknown schemas, schema violations and oversize
        input all become a `dead_letter` record carrying the raw bytes and the origin.
        """
        try:
            if canonical:
                decoded = self.decode(data)
                if not decoded.is_event:
                    raise CodecError(SCHEMA_VIOLATION, f"{decoded.schema_name} is not an event")
                return decoded.value
            return self.decode_event_fast(data)
        except CodecError as exc:
            return dead_letter(
                reason=exc.reason,
                message=exc.message,
                raw=bytes(data),
                origin_topic=topic,
                origin_partition=partition,
                origin_offset=offset,
                run_id=exc.run_id,
                event_id=exc.event_id,
            )
        except Exception as exc:  # a codec bug must not stop a consumer: dead-letter it
            log.exception("codec failure on %s:%s:%s", topic, partition, offset)
            return dead_letter(
                reason=UNDECODABLE,
                message=f"codec failure: {type(exc).__name__}: {exc}",
                raw=bytes(data),
                origin_topic=topic,
                origin_partition=partition,
                origin_offset=offset,
            )

    def _read(self, data: bytes) -> tuple[_Plan, Json]:
        size = len(data)
        if size > MAX_RECORD_BYTES:
            raise CodecError(TOO_LARGE, f"message is {size} bytes, limit {MAX_RECORD_BYTES}")
        if data[:2] == SOE_MAGIC:
            plan = self._plans.get(data[2:10]) or self._plan_for_fingerprint(data)
            start = SOE_HEADER_BYTES
        elif size >= REGISTRY_HEADER_BYTES and data[0] == REGISTRY_MAGIC:
            schema_id = int.from_bytes(data[1:5], "big")
            plan = self._id_plans.get(schema_id) or self._plan_for_id(schema_id)
            start = REGISTRY_HEADER_BYTES
        else:
            raise CodecError(
                UNDECODABLE,
                "no Avro header: expected single-object encoding (C3 01) or "
                f"Schema Registry framing (00), got {bytes(data[:2]).hex() or 'empty'}",
            )
        # SPEC section 2's limits are input limits: outputs (an account revision can fold
        # a whole run; a dead letter carries the rejected bytes) are bounded by their
        # topics' max.message.bytes instead (streams/topics.py), under MAX_RECORD_BYTES.
        is_event = plan.record.is_event
        if is_event and size > self.limits.max_event_bytes:
            raise CodecError(
                TOO_LARGE, f"message is {size} bytes, limit {self.limits.max_event_bytes}"
            )
        value = self._read_body(plan, data, start)
        if is_event and size - start > plan.walk_above:
            self._check_limits(value, plan.record, None)
        return plan, value

    @staticmethod
    def _read_body(plan: _Plan, data: bytes, start: int) -> Json:
        """The record after its header: by the generated reader if the plan has one and it
        takes the bytes, else by fastavro, which decodes them or says why not."""
        size = len(data)
        if plan.fast_read is not None:
            try:
                value, end = plan.fast_read(data, start)
            except Exception:  # not swallowed: fastavro reads the same bytes below
                end = -1
            if end == size:
                return cast(Json, value)
        buffer = BytesIO(data)
        buffer.seek(start)
        try:
            value = fastavro.schemaless_reader(buffer, plan.writer, plan.reader)
        except SchemaResolutionError as exc:
            raise CodecError(
                SCHEMA_VIOLATION, f"{plan.record.name}: writer schema does not resolve: {exc}"
            ) from None
        except Exception as exc:  # fastavro raises many types on corrupt input
            raise CodecError(
                UNDECODABLE,
                f"{plan.record.name}: body does not decode: {type(exc).__name__}: {exc}",
            ) from None
        if buffer.tell() != size:
            raise CodecError(
                UNDECODABLE,
                f"{plan.record.name}: {size - buffer.tell()} trailing byte(s) after the record",
            )
        return cast(Json, value)

    def _check_event(self, record: RecordSchema, value: Json) -> None:
        if value["type"] != record.kind:
            raise CodecError(
                SCHEMA_VIOLATION,
                f"{record.name} carries type {value['type']!r}, expected {record.kind!r}",
                run_id=value["run_id"],
                event_id=value["event_id"],
            )
        occurred = value["occurred_at"]
        if isinstance(occurred, int) and not MIN_MICROS <= occurred <= MAX_MICROS:
            raise CodecError(
                SCHEMA_VIOLATION,
                f"{record.kind}: occurred_at out of range: {occurred}",
                run_id=value["run_id"],
                event_id=value["event_id"],
            )

    def _plan_for(self, record: RecordSchema, writer: Any, smallest_item: int | None) -> _Plan:
        reader = None if writer is record.parsed else record.parsed
        if smallest_item is None:
            smallest_item = record.smallest_array_item
        limit = self.limits
        # A string over the limit needs more body bytes than the limit; a list over the
        # limit needs at least (items x smallest item) bytes. Below both, skip the walk.
        walk_above = min(limit.max_string_bytes, limit.max_list_items * smallest_item)
        return _Plan(record, writer, reader, walk_above, record.read if reader is None else None)

    def _plan_for_fingerprint(self, data: bytes) -> _Plan:
        if len(data) < SOE_HEADER_BYTES:
            raise CodecError(UNDECODABLE, f"truncated single-object header ({len(data)} bytes)")
        fp = bytes(data[2:10])
        writer = self.store.get(fp)
        if writer is None:
            raise CodecError(
                UNKNOWN_SCHEMA,
                f"unknown writer schema fingerprint {fp.hex()}: add it to the schema store",
            )
        plan = self._plan_for_writer(writer)
        self._plans[fp] = plan
        return plan

    def _plan_for_writer(self, writer: WriterSchema) -> _Plan:
        record = self._catalog.by_name.get(writer.name)
        if record is None:
            raise CodecError(
                UNKNOWN_SCHEMA, f"writer schema {writer.name} has no current reader schema"
            )
        parsed = record.parsed if writer.fingerprint == record.fingerprint else writer.parsed
        return self._plan_for(record, parsed, writer.smallest_array_item)

    def _plan_for_id(self, schema_id: int) -> _Plan:
        if self.registry is None:
            raise CodecError(
                UNKNOWN_SCHEMA,
                f"Schema Registry id {schema_id}, but no schema registry is configured "
                "(OUTCOMES_SCHEMA_REGISTRY_URL)",
            )
        try:
            schema_str = self.registry.lookup(schema_id)
            fp = self.store.add(schema_str)
        except Exception as exc:  # registry down, id unknown or a schema we cannot parse
            raise CodecError(
                UNKNOWN_SCHEMA, f"Schema Registry id {schema_id}: {type(exc).__name__}: {exc}"
            ) from None
        writer = self.store.get(fp)
        assert writer is not None
        plan = self._plan_for_writer(writer)
        self._id_plans[schema_id] = plan
        return plan

    # -- limits ----------------------------------------------------------------------------

    def _check_limits(self, value: Any, record: RecordSchema, body_size: int | None) -> None:
        """Strings over max_string_bytes or lists over max_list_items -> too_large."""
        if body_size is not None and body_size <= min(
            self.limits.max_string_bytes,
            self.limits.max_list_items * record.smallest_array_item,
        ):
            return
        problem = _oversize(value, self.limits.max_string_bytes, self.limits.max_list_items)
        if problem is not None:
            raise CodecError(
                TOO_LARGE,
                f"{record.kind}: {problem}",
                run_id=_str_or_none(value.get("run_id")),
                event_id=_str_or_none(value.get("event_id")),
            )


def _oversize(value: Any, max_string: int, max_items: int, path: str = "") -> str | None:
    if isinstance(value, str):
        if len(value) * 4 > max_string:  # cheap pre-check: UTF-8 is at most 4 bytes/char
            size = len(value.encode("utf-8", "surrogatepass"))
            if size > max_string:
                return f"{path or 'string'} is {size} bytes, limit {max_string}"
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            found = _oversize(item, max_string, max_items, f"{path}.{key}" if path else key)
            if found is not None:
                return found
        return None
    if isinstance(value, list):
        if len(value) > max_items:
            return f"{path or 'list'} has {len(value)} items, limit {max_items}"
        for index, item in enumerate(value):
            found = _oversize(item, max_string, max_items, f"{path}[{index}]")
            if found is not None:
                return found
    return None


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


# ---------------------------------------------------------------------------
# JSON lines and Avro object container files.


def parse_json_event(line: bytes | str) -> Any:
    """One JSONL line -> the JSON value; CodecError(`undecodable`) if it is not JSON."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise CodecError(UNDECODABLE, f"not JSON: {exc}") from None


@dataclass(frozen=True, slots=True)
class ContainerFailure:
    """A record of a container file that could not be read (0-based `index`)."""

    index: int
    reason: str
    message: str

    def dead_letter(self, path: str | Path) -> OutputRecord:
        """As a dead letter whose origin is `file:<path>:<index + 1>`."""
        return dead_letter(
            reason=self.reason,
            message=self.message,
            raw=b"",
            origin_file=str(path),
            origin_line=self.index + 1,
        )


def write_container(
    path: str | Path,
    events: Iterable[Mapping[str, Any]],
    *,
    codec: Codec | None = None,
    compression: str = "deflate",
) -> int:
    """Write canonical JSON events to an Avro container file (union of event records).

    Raises CodecError for an invalid event (nothing half-valid is written for it).
    Returns the number of events written.
    """
    codec = codec or Codec()
    catalog = codec._catalog
    count = 0

    def records() -> Iterator[tuple[str, Json]]:
        nonlocal count
        for event in events:
            record = codec._event_schema(event)
            yield record.name, codec._to_avro(record, event)
            count += 1

    with open(path, "wb") as out:
        fastavro.writer(
            out, fastavro.parse_schema(catalog.container_schema), records(), codec=compression
        )
    return count


def iter_container_events(
    path: str | Path, *, codec: Codec | None = None
) -> Iterator[Json | ContainerFailure]:
    """Canonical JSON events from an Avro container file, in file order.

    A record that breaks the contract yields a ContainerFailure and reading goes on; a
    corrupt file yields one ContainerFailure at the position where reading stopped.
    The file's writer schema (a union of event records, or one event record; older or
    newer versions) is resolved against the current schemas.
    """
    codec = codec or Codec()
    catalog = codec._catalog
    index = 0
    try:
        with open(path, "rb") as stream:
            header = fastavro.reader(stream)
            writer_json = json.loads(header.metadata["avro.schema"])
            if isinstance(writer_json, dict):
                single = schemas.full_name(writer_json["name"], writer_json.get("namespace"))
                target = catalog.by_name.get(single)
                if target is None or not target.is_event:
                    yield ContainerFailure(0, UNKNOWN_SCHEMA, f"{path}: {single} is not an event")
                    return
                reader_schema = target.schema
            else:
                single = None
                reader_schema = catalog.container_schema
            stream.seek(0)
            rows = fastavro.reader(
                stream, reader_schema=fastavro.parse_schema(reader_schema), return_record_name=True
            )
            for row in rows:
                if single is None:
                    name, value = cast(tuple[str, Json], row)
                else:
                    name, value = single, cast(Json, row)
                yield _container_event(codec, catalog.by_name[name], value, index)
                index += 1
    except OSError:
        raise
    except Exception as exc:  # a corrupt block: report where, then stop (cannot resync)
        yield ContainerFailure(
            index, UNDECODABLE, f"{path}: record {index + 1}: {type(exc).__name__}: {exc}"
        )


def _container_event(codec: Codec, record: RecordSchema, value: Json, index: int) -> Any:
    try:
        codec._check_limits(value, record, None)
        codec._check_event(record, _with_micros(value))
        return record.to_canonical(value) if record.to_canonical is not None else value
    except CodecError as exc:
        return ContainerFailure(index, exc.reason, exc.message)


def _with_micros(value: Json) -> Json:
    occurred = value["occurred_at"]
    if isinstance(occurred, datetime):
        return {**value, "occurred_at": (occurred - _EPOCH) // _MICRO}
    return value


def iter_container_items(path: str | Path, limits: Limits | None = None) -> Iterator[SourceItem]:
    """:func:`iter_container_events` as `outcomes replay` source items.

    `origin_line` is the 1-based record index; `raw` is the record as canonical JSON
    (empty for a record that could not be read), so a dead letter still shows it.
    """
    from common.settings import Settings
    from streams.replay import SourceItem

    codec = Codec(Settings(limits=limits or Limits()))
    name = str(path)
    for index, item in enumerate(iter_container_events(path, codec=codec)):
        if isinstance(item, ContainerFailure):
            error = CodecError(item.reason, item.message)
            yield SourceItem(name, item.index + 1, b"", error=error)
        else:
            yield SourceItem(name, index + 1, orjson.dumps(item), value=item)
