"""The codec: canonical JSON <-> framed Avro bytes, validation, limits, dead letters.

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

Decoding failures are :class:`outcomes.common.errors.CodecError` with a dead-letter reason;
:meth:`Codec.decode_or_dead_letter` turns any failure into a dead-letter record, so a
consumer never stops on bad input.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from io import BytesIO
from typing import Any, Final, cast

import fastavro
from fastavro.read import SchemaResolutionError

from outcomes.common.codec.catalog import RecordSchema, SchemaStore, WriterSchema, _catalog
from outcomes.common.codec.convert import Json, _kind, _Violation
from outcomes.common.codec.fast import Reader
from outcomes.common.codec.registry import ConfluentRegistry, RegistryClient
from outcomes.common.errors import (
    SCHEMA_VIOLATION,
    TOO_LARGE,
    UNDECODABLE,
    UNKNOWN_SCHEMA,
    CodecError,
)
from outcomes.common.settings import Settings
from outcomes.reducers.catalog import EVENT_TOPICS
from outcomes.reducers.limits import Limits
from outcomes.reducers.records import OutputRecord, dead_letter
from outcomes.reducers.timefmt import MAX_MICROS, MIN_MICROS

log = logging.getLogger(__name__)

# Largest record of any kind the codec decodes (outputs; inputs have their own limit).
MAX_RECORD_BYTES = 16 * 1024 * 1024
SOE_MAGIC: Final = b"\xc3\x01"
SOE_HEADER_BYTES: Final = 10
REGISTRY_MAGIC: Final = 0
REGISTRY_HEADER_BYTES: Final = 5


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
