"""Converters between canonical JSON and Avro values, built once per named type.

Canonical JSON (SPEC section 2, docs/records.md) has RFC 3339 timestamps, base64 bytes
and dotted enum strings; Avro values have int microseconds, bytes and enum symbols.
`_Converters` builds, from a schema's definitions, the converters that map one to the
other, validating on the way in: a value that does not fit raises `_Violation`, which
names the path to the offending field. Timestamps follow reducers/timefmt.py's rules.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from outcomes import schemas
from outcomes.reducers.timefmt import (
    MAX_MICROS,
    MIN_MICROS,
    datetime_micros,
    format_rfc3339,
    parse_rfc3339,
)

Json = dict[str, Any]
Converter = Callable[[Any], Any]


def timestamp_micros(value: Any) -> int:
    """Accept an RFC 3339 string, an aware datetime or int micros; give int micros.

    Strings follow reducers/timefmt.py's rules; every form must lie in years 1..9999.
    """
    if isinstance(value, str):
        return parse_rfc3339(value)  # checks the range itself
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError("datetime without a time zone")
        micros = datetime_micros(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        micros = value
    else:
        raise ValueError(f"expected an RFC 3339 timestamp string, got {_kind(value)}")
    if not MIN_MICROS <= micros <= MAX_MICROS:
        raise ValueError(f"timestamp out of range (years 1..9999): {value!r}")
    return micros


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


def _integer(value: int) -> str:
    """An int for a message: written out up to 128 bits, by its size beyond (str()
    refuses an int of over 4300 digits, and a long one says nothing more)."""
    bits = value.bit_length()
    return f"integer {value}" if bits <= 128 else f"integer of {bits} bits"


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
            raise _Violation(f"{_integer(value)} out of range for a {bits}-bit Avro number")
        return value

    return convert


def _to_double(value: Any) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise _Violation(f"expected a number, got {_kind(value)}")
    try:
        number = float(value)
    except OverflowError:  # an int past the largest double (Python ints are unbounded)
        raise _Violation(f"{_integer(int(value))} out of range for a double") from None
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
        value = datetime_micros(value)
    return format_rfc3339(value)


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
