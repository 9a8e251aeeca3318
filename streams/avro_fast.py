"""Generated code for the codec's hot paths: canonical JSON -> Avro converters, and
Avro binary writers (`FastWriters`, below).

The codec's generic converters (streams/codec.py `_Converters.to_avro`) walk a tree of
closures, one call per value, and explain any violation with its path. Encoding an
account revision that way took ~90 µs, more than folding the event that caused it. This
module generates one Python function per named record instead: the fields are built in
one dict display, with type checks inline (`type(x) is str`), enums as dict lookups and
timestamps parsed through a cache.

The generated functions only ever *accept* what the generic converters accept, and give
the same result; anything else (a failed check, a missing field, a Mapping that is not a
dict) raises, and the caller then runs the generic converter, which either converts the
value after all or raises the violation with its path. So nothing is accepted here that
the contract refuses, and every error message still comes from one place.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

import schemas

Converter = Callable[[Any], Any]

_INT_RANGES = {"int": (-(1 << 31), (1 << 31) - 1), "long": (-(1 << 63), (1 << 63) - 1)}


class _Refused(Exception):
    """Internal: the generated path does not take this value; use the generic one."""


def _refuse() -> Any:
    raise _Refused


def _finite(value: Any) -> float:
    if type(value) is bool or not isinstance(value, int | float) or not math.isfinite(value):
        raise _Refused
    return float(value)


class FastConverters:
    """Compiles `to_avro` functions for named records of one set of definitions."""

    def __init__(
        self,
        definitions: Mapping[str, Mapping[str, Any]],
        timestamp: Callable[[Any], int],
        to_bytes: Callable[[Any], bytes],
    ) -> None:
        self._defs = definitions
        cached = lru_cache(maxsize=1 << 16)(timestamp)

        def fast_timestamp(value: Any) -> int:
            # Strings repeat across a run's revisions (evidence times): parse each once.
            return cached(value) if type(value) is str else timestamp(value)

        self._env: dict[str, Any] = {
            "_refuse": _refuse,
            "_finite": _finite,
            "_ts": fast_timestamp,
            "_bytes": to_bytes,
        }
        self._functions: dict[str, str] = {}  # full name -> generated function name
        self._source: list[str] = []
        self._temps = 0

    def compile(self, name: str) -> Converter:
        """The generated converter of the named record `name` (and of what it uses)."""
        function = self._record(name)
        code = compile("\n".join(self._source), f"<avro_fast {name}>", "exec")
        exec(code, self._env)
        self._source.clear()
        converter: Converter = self._env[function]
        return converter

    # -- code generation ---------------------------------------------------------------

    def _temp(self) -> str:
        self._temps += 1
        return f"t{self._temps}"

    def _constant(self, value: Any) -> str:
        name = f"c{len(self._env)}"
        self._env[name] = value
        return name

    def _record(self, name: str) -> str:
        if name in self._functions:
            return self._functions[name]
        function = f"r{len(self._functions)}_{name.rpartition('.')[2]}"
        self._functions[name] = function  # before the fields: a self-reference resolves
        node = self._defs[name]
        namespace = name.rpartition(".")[0] or None
        names = self._constant(frozenset(f["name"] for f in node["fields"]))
        items = []
        for field in node["fields"]:
            key = repr(field["name"])
            if "default" in field:
                value = self._expr(field["type"], namespace, f"v[{key}]")
                default = self._constant(field["default"])
                items.append(f"{key}: ({value} if {key} in v else {default})")
            else:
                items.append(f"{key}: {self._expr(field['type'], namespace, f'v[{key}]')}")
        body = ",\n        ".join(items)
        self._source.append(
            f"def {function}(v):\n"
            f"    if type(v) is not dict or not v.keys() <= {names}:\n"
            f"        _refuse()\n"
            f"    return {{\n        {body}\n    }}\n"
        )
        return function

    def _expr(self, node: Any, namespace: str | None, src: str) -> str:
        """A Python expression that converts the value of expression `src` (evaluated
        once) or raises."""
        if isinstance(node, list):
            others = [b for b in node if b != "null"]
            if len(others) != 1:
                raise schemas.SchemaFileError("codec supports unions of null and one type only")
            if "null" not in node:
                return self._expr(others[0], namespace, src)
            t = self._temp()
            return f"(None if ({t} := {src}) is None else {self._expr(others[0], namespace, t)})"
        if isinstance(node, str) and node not in schemas.PRIMITIVES:
            full = schemas.full_name(node, namespace)
            return self._named(full, src)
        if isinstance(node, Mapping) and node.get("type") in schemas.NAMED_KINDS:
            full = schemas.full_name(node["name"], node.get("namespace", namespace))
            return self._named(full, src)
        kind = node if isinstance(node, str) else node["type"]
        if isinstance(kind, list | Mapping):
            return self._expr(kind, namespace, src)
        logical = node.get("logicalType") if isinstance(node, Mapping) else None
        t = self._temp()
        if logical == "timestamp-micros" and kind == "long":
            return f"_ts({src})"
        if kind == "string":
            return f"({t} if type({t} := {src}) is str else _refuse())"
        if kind == "boolean":
            return f"({t} if type({t} := {src}) is bool else _refuse())"
        if kind in _INT_RANGES:
            low, high = _INT_RANGES[kind]
            return f"({t} if type({t} := {src}) is int and {low} <= {t} <= {high} else _refuse())"
        if kind in ("double", "float"):
            return f"_finite({src})"
        if kind == "bytes":
            return f"_bytes({src})"
        if kind == "null":
            return f"(None if {src} is None else _refuse())"
        if kind == "array":
            item = self._temp()
            convert = self._expr(node["items"], namespace, item)
            return (
                f"([{convert} for {item} in {t}] "
                f"if type({t} := {src}) is list or type({t}) is tuple else _refuse())"
            )
        raise schemas.SchemaFileError(f"codec does not support Avro type {kind!r}")

    def _named(self, full: str, src: str) -> str:
        definition = self._defs[full]
        if definition["type"] == "enum":
            canonical = dict(definition.get("canonicalValues", {}))
            symbols = {canonical.get(s, s): s for s in definition["symbols"]}
            return f"{self._constant(symbols)}[{src}]"
        if definition["type"] in ("record", "error"):
            return f"{self._record(full)}({src})"
        return self._expr(definition, full.rpartition(".")[0] or None, src)


def with_fallback(fast: Converter, generic: Converter) -> Converter:
    """`fast`, and `generic` for whatever `fast` does not take (see the module doc)."""

    def convert(value: Any) -> Any:
        try:
            return fast(value)
        except Exception:  # not swallowed: `generic` converts the value or explains it
            return generic(value)

    return convert


# -- writing -----------------------------------------------------------------------------

Writer = Callable[[Any], bytes]

# Zigzag varints of the small values most ints are (lengths, counts, ranks, indexes).
_SMALL_RANGE = 64
_SMALL: dict[int, bytes] = {
    n: bytes([(n << 1) ^ (n >> 63)]) for n in range(-_SMALL_RANGE, _SMALL_RANGE)
}


def _varint(n: int) -> bytes:
    """Avro `int`/`long`: zigzag, then 7 bits a byte, low bits first."""
    small = _SMALL.get(n)
    if small is not None:
        return small
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


class FastWriters:
    """Compiles Avro binary writers for named records of one set of definitions.

    A writer takes the Avro form of a value (what a `to_avro` converter returns: already
    checked against the schema, timestamps as int micros, enums as symbols) and gives
    the same bytes as `fastavro.schemaless_writer`. fastavro walks the schema's dicts at
    every value and, for each union, validates the value against every branch: writing
    an account revision (~100 values) took it ~50 µs, more than the fold behind it. The
    generated function is a straight sequence of appends to one bytearray.
    """

    def __init__(self, definitions: Mapping[str, Mapping[str, Any]]) -> None:
        self._defs = definitions
        self._env: dict[str, Any] = {
            "_varint": _varint,
            "_small": _SMALL,
            "_double": struct.Struct("<d").pack,
            "_float": struct.Struct("<f").pack,
        }
        self._functions: dict[str, str] = {}
        self._source: list[str] = []
        self._temps = 0

    def compile(self, name: str) -> Writer:
        """The writer of the named record `name`: Avro value -> bytes."""
        function = self._record(name)
        source = "\n".join(self._source)
        source += f"\ndef write_{function}(v):\n    b = bytearray()\n    {function}(v, b)\n"
        source += "    return bytes(b)\n"
        exec(compile(source, f"<avro_fast writer {name}>", "exec"), self._env)
        self._source.clear()
        writer: Writer = self._env[f"write_{function}"]
        return writer

    def _length(self, expr: str) -> list[str]:
        """Append the varint of a length or count (most are below 64: one byte, no call)."""
        n = self._temp()
        return [f"{n} = {expr}", f"b += _small[{n}] if {n} < 64 else _varint({n})"]

    def _temp(self) -> str:
        self._temps += 1
        return f"t{self._temps}"

    def _constant(self, value: Any) -> str:
        name = f"c{len(self._env)}"
        self._env[name] = value
        return name

    def _record(self, name: str) -> str:
        if name in self._functions:
            return self._functions[name]
        function = f"w{len(self._functions)}_{name.rpartition('.')[2]}"
        self._functions[name] = function
        node = self._defs[name]
        namespace = name.rpartition(".")[0] or None
        lines: list[str] = []
        for field in node["fields"]:
            lines += self._write(field["type"], namespace, f"v[{field['name']!r}]")
        body = "\n".join(f"    {line}" for line in lines) or "    pass"
        self._source.append(f"def {function}(v, b):\n{body}\n")
        return function

    def _write(self, node: Any, namespace: str | None, src: str) -> list[str]:
        """Statements that append the encoding of expression `src` to bytearray `b`."""
        if isinstance(node, list):
            return self._union(node, namespace, src)
        if isinstance(node, str) and node not in schemas.PRIMITIVES:
            return self._named(schemas.full_name(node, namespace), src)
        if isinstance(node, Mapping) and node.get("type") in schemas.NAMED_KINDS:
            full = schemas.full_name(node["name"], node.get("namespace", namespace))
            return self._named(full, src)
        kind = node if isinstance(node, str) else node["type"]
        if isinstance(kind, list | Mapping):
            return self._write(kind, namespace, src)
        t = self._temp()
        if kind == "string":
            return [f"{t} = {src}.encode()", *self._length(f"len({t})"), f"b += {t}"]
        if kind == "bytes":
            return [f"{t} = {src}", *self._length(f"len({t})"), f"b += {t}"]
        if kind in ("int", "long"):  # timestamp-micros included: a long of micros
            return [f"{t} = {src}", f"b += _small[{t}] if -64 <= {t} < 64 else _varint({t})"]
        if kind == "boolean":
            return [f"b += b'\\x01' if {src} else b'\\x00'"]
        if kind == "double":
            return [f"b += _double({src})"]
        if kind == "float":
            return [f"b += _float({src})"]
        if kind == "null":
            return []
        if kind == "array":
            item = self._temp()
            inner = self._write(node["items"], namespace, item)
            return [
                f"{t} = {src}",
                f"if {t}:",
                *(f"    {line}" for line in self._length(f"len({t})")),
                f"    for {item} in {t}:",
                *(f"        {line}" for line in inner or ["pass"]),
                "b += b'\\x00'",
            ]
        raise schemas.SchemaFileError(f"codec does not support Avro type {kind!r}")

    def _union(self, node: list[Any], namespace: str | None, src: str) -> list[str]:
        others = [b for b in node if b != "null"]
        if len(others) != 1:
            raise schemas.SchemaFileError("codec supports unions of null and one type only")
        if "null" not in node:
            return ["b += b'\\x00'", *self._write(others[0], namespace, src)]
        t = self._temp()
        null_index, other_index = _varint(node.index("null")), _varint(node.index(others[0]))
        inner = self._write(others[0], namespace, t) or ["pass"]
        return [
            f"{t} = {src}",
            f"if {t} is None:",
            f"    b += {null_index!r}",
            "else:",
            f"    b += {other_index!r}",
            *(f"    {line}" for line in inner),
        ]

    def _named(self, full: str, src: str) -> list[str]:
        definition = self._defs[full]
        if definition["type"] == "enum":
            indexes = {s: _varint(i) for i, s in enumerate(definition["symbols"])}
            return [f"b += {self._constant(indexes)}[{src}]"]
        if definition["type"] in ("record", "error"):
            return [f"{self._record(full)}({src}, b)"]
        return self._write(definition, full.rpartition(".")[0] or None, src)


def writer_with_fallback(fast: Writer, generic: Writer) -> Writer:
    """`fast`, and `generic` (fastavro) for a value `fast` fails on.

    Values reach a writer checked by their `to_avro` converter, so `fast` is not expected
    to fail; if it does, fastavro writes the value or raises its own error (not swallowed).
    """

    def write(value: Any) -> bytes:
        try:
            return fast(value)
        except Exception:  # not swallowed: `generic` writes the value or raises
            return generic(value)

    return write


# -- reading -----------------------------------------------------------------------------

Reader = Callable[[bytes, int], tuple[Any, int]]


def _varint_tail(data: bytes, pos: int, first: int) -> tuple[int, int]:
    """The rest of a varint whose first byte `first` had its high bit set: (raw, pos)."""
    value, shift = first & 0x7F, 7
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise _Refused  # longer than any long: fastavro decides what it is


class FastReaders:
    """Compiles Avro binary readers for named records of one set of definitions.

    A reader takes bytes and a start position and returns the value exactly as
    `fastavro.schemaless_reader` gives it with the same schema as writer and reader
    (records as dicts in field order, enums as symbols, timestamps as int micros), and
    the position after it. Like fastavro's writer, its reader walks the schema's dicts
    at every value: an account revision took it ~45 µs to read.

    A generated reader refuses (raises) anything it does not fully understand: a byte
    past the end, a union branch or boolean byte out of range, an enum index out of
    range, a negative length, bytes that are not UTF-8. The caller then reads the same
    bytes with fastavro, which decodes them or raises its own error, so corrupt input is
    judged in one place. The caller also checks the returned position against the end.
    """

    def __init__(self, definitions: Mapping[str, Mapping[str, Any]]) -> None:
        self._defs = definitions
        self._env: dict[str, Any] = {
            "_tail": _varint_tail,
            "_refuse": _refuse,
            "_double": struct.Struct("<d").unpack_from,
            "_float": struct.Struct("<f").unpack_from,
        }
        self._functions: dict[str, str] = {}
        self._source: list[str] = []
        self._temps = 0

    def compile(self, name: str) -> Reader:
        """The reader of the named record `name`: (bytes, start) -> (value, end)."""
        function = self._record(name)
        exec(compile("\n".join(self._source), f"<avro_fast reader {name}>", "exec"), self._env)
        self._source.clear()
        reader: Reader = self._env[function]
        return reader

    def _temp(self) -> str:
        self._temps += 1
        return f"t{self._temps}"

    def _constant(self, value: Any) -> str:
        name = f"c{len(self._env)}"
        self._env[name] = value
        return name

    def _record(self, name: str) -> str:
        if name in self._functions:
            return self._functions[name]
        function = f"rd{len(self._functions)}_{name.rpartition('.')[2]}"
        self._functions[name] = function
        node = self._defs[name]
        namespace = name.rpartition(".")[0] or None
        lines: list[str] = []
        items: list[str] = []
        for field in node["fields"]:
            target = self._temp()
            lines += self._read(field["type"], namespace, target)
            items.append(f"{field['name']!r}: {target}")
        body = "\n".join(f"    {line}" for line in lines)
        self._source.append(
            f"def {function}(d, p):\n{body}\n    return {{{', '.join(items)}}}, p\n"
        )
        return function

    @staticmethod
    def _varint(target: str) -> list[str]:
        """Statements reading one zigzag varint into `target`."""
        return [
            f"{target} = d[p]",
            "p += 1",
            f"if {target} > 127:",
            f"    {target}, p = _tail(d, p, {target})",
            f"{target} = ({target} >> 1) ^ -({target} & 1)",
        ]

    def _read(self, node: Any, namespace: str | None, target: str) -> list[str]:
        """Statements that read one value of `node` at `p` into `target`, moving `p`."""
        if isinstance(node, list):
            return self._union(node, namespace, target)
        if isinstance(node, str) and node not in schemas.PRIMITIVES:
            return self._named(schemas.full_name(node, namespace), target)
        if isinstance(node, Mapping) and node.get("type") in schemas.NAMED_KINDS:
            full = schemas.full_name(node["name"], node.get("namespace", namespace))
            return self._named(full, target)
        kind = node if isinstance(node, str) else node["type"]
        if isinstance(kind, list | Mapping):
            return self._read(kind, namespace, target)
        if kind in ("string", "bytes"):
            end = self._temp()
            take = f"d[p:{end}].decode()" if kind == "string" else f"bytes(d[p:{end}])"
            return [
                *self._varint(end),
                f"if {end} < 0:",
                "    _refuse()",
                f"{end} += p",
                f"{target} = {take}",
                f"p = {end}",
            ]
        if kind in ("int", "long"):  # timestamp-micros included: a long of micros
            return self._varint(target)
        if kind == "boolean":
            return [
                f"{target} = d[p]",
                "p += 1",
                f"if {target} > 1:",
                "    _refuse()",
                f"{target} = {target} == 1",
            ]
        if kind in ("double", "float"):
            size = 8 if kind == "double" else 4
            return [f"{target} = _{kind}(d, p)[0]", f"p += {size}"]
        if kind == "null":
            return [f"{target} = None"]
        if kind == "array":
            count, item = self._temp(), self._temp()
            inner = self._read(node["items"], namespace, item)
            return [
                f"{target} = []",
                *self._varint(count),
                f"while {count}:",
                f"    if {count} < 0:",  # a block with its byte size: skip the size
                f"        {count} = -{count}",
                *(f"        {line}" for line in self._varint(item)),
                f"    for _ in range({count}):",
                *(f"        {line}" for line in inner),
                f"        {target}.append({item})",
                *(f"    {line}" for line in self._varint(count)),
            ]
        raise schemas.SchemaFileError(f"codec does not support Avro type {kind!r}")

    def _union(self, node: list[Any], namespace: str | None, target: str) -> list[str]:
        others = [b for b in node if b != "null"]
        if len(others) != 1:
            raise schemas.SchemaFileError("codec supports unions of null and one type only")
        branch = self._temp()
        lines = [f"{branch} = d[p]", "p += 1"]
        other = _varint(node.index(others[0]))[0]
        inner = self._read(others[0], namespace, target)
        if "null" in node:
            null = _varint(node.index("null"))[0]
            lines += [
                f"if {branch} == {null}:",
                f"    {target} = None",
                f"elif {branch} == {other}:",
            ]
        else:
            lines += [f"if {branch} == {other}:"]
        return [*lines, *(f"    {line}" for line in inner), "else:", "    _refuse()"]

    def _named(self, full: str, target: str) -> list[str]:
        definition = self._defs[full]
        if definition["type"] == "enum":
            symbols = self._constant(dict(enumerate(definition["symbols"])))
            return [*self._varint(target), f"{target} = {symbols}[{target}]"]
        if definition["type"] in ("record", "error"):
            return [f"{target}, p = {self._record(full)}(d, p)"]
        return self._read(definition, full.rpartition(".")[0] or None, target)
