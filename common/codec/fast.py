"""Generated code for the codec's hot paths: canonical JSON -> Avro converters
(`FastConverters`), and Avro binary writers and readers (`FastWriters`, `FastReaders`).

The codec's generic converters (common/codec/convert.py `_Converters.to_avro`) walk a tree of
closures, one call per value, and explain any violation with its path; fastavro's writer
and reader walk the schema's dicts at every value, and its writer checks each union's
value against every branch. For an account revision (~100 values) that was ~90 µs to
convert, ~55 µs to write and ~45 µs to read: more than folding the event behind it. This
module generates one Python function per named record instead, with the schema's
decisions made once, at generation: type checks inline (`type(x) is str`), enums as dict
lookups, unions as one branch test.

Nothing generated here is the last word on a value:

- a converter only ever *accepts* what the generic converters accept, with the same
  result; anything else (a failed check, a missing field, a Mapping that is not a dict)
  raises, and the caller runs the generic converter, which converts the value after all
  or raises the violation with its path;
- a writer gives `fastavro.schemaless_writer`'s bytes for a value a converter checked;
  should it fail, fastavro writes the value or raises;
- a reader gives `fastavro.schemaless_reader`'s value, and refuses any bytes it does not
  fully understand, which the caller then hands to fastavro.

So nothing is accepted here that the contract or fastavro refuses, and every error
message still comes from one place.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any, NamedTuple, TypeVar

from outcomes import schemas

T = TypeVar("T")
Converter = Callable[[Any], Any]
Writer = Callable[[Any], bytes]
Reader = Callable[[bytes, int], tuple[Any, int]]

_INT_RANGES = {"int": (-(1 << 31), (1 << 31) - 1), "long": (-(1 << 63), (1 << 63) - 1)}


class _Refused(Exception):
    """Internal: the generated path does not take this value; use the generic one."""


def _refuse() -> Any:
    raise _Refused


def _finite(value: Any) -> float:
    if type(value) is bool or not isinstance(value, int | float) or not math.isfinite(value):
        raise _Refused
    return float(value)


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


def _indented(lines: list[str], depth: int = 1) -> list[str]:
    pad = "    " * depth
    return [pad + line for line in lines or ["pass"]]


class _Node(NamedTuple):
    """A schema node with references and wrappers resolved."""

    kind: str  # "union", "record", "enum", "array" or a primitive type name
    node: Any  # the union's list, the named type's definition, or the node itself
    namespace: str | None  # for the names used inside it
    name: str = ""  # a record's or enum's full name
    logical: str | None = None


class _Generator:
    """What the three generators share: the environment the generated code runs in,
    fresh temporaries and constants, one function per named record (registered before
    its body is made, so that a self-reference resolves), and schema nodes resolved to
    their kind."""

    PREFIX = ""  # of the generated functions' names

    def __init__(self, definitions: Mapping[str, Mapping[str, Any]], env: dict[str, Any]) -> None:
        self._defs = definitions
        self._env = env
        self._functions: dict[str, str] = {}  # full name -> generated function name
        self._source: list[str] = []
        self._temps = 0

    def _exec(self, label: str, extra: str = "") -> None:
        """Run the source made since the last call (and `extra`) in the environment."""
        source = "\n".join([*self._source, extra])
        exec(compile(source, f"<outcomes.common.codec.fast {label}>", "exec"), self._env)
        self._source.clear()

    def _temp(self) -> str:
        self._temps += 1
        return f"t{self._temps}"

    def _constant(self, value: Any) -> str:
        name = f"c{len(self._env)}"
        self._env[name] = value
        return name

    def _record(self, name: str) -> str:
        function = self._functions.get(name)
        if function is None:
            function = f"{self.PREFIX}{len(self._functions)}_{name.rpartition('.')[2]}"
            self._functions[name] = function
            namespace = name.rpartition(".")[0] or None
            self._source.append(self._record_source(function, self._defs[name], namespace))
        return function

    def _record_source(
        self, function: str, definition: Mapping[str, Any], namespace: str | None
    ) -> str:
        raise NotImplementedError

    def _resolve(self, node: Any, namespace: str | None) -> _Node:
        if isinstance(node, list):
            return _Node("union", node, namespace)
        if isinstance(node, str):
            if node in schemas.PRIMITIVES:
                return _Node(node, node, namespace)
            return self._named(schemas.full_name(node, namespace))
        if node.get("type") in schemas.NAMED_KINDS:
            return self._named(schemas.full_name(node["name"], node.get("namespace", namespace)))
        if isinstance(node["type"], list | Mapping):
            return self._resolve(node["type"], namespace)
        return _Node(node["type"], node, namespace, logical=node.get("logicalType"))

    def _named(self, full: str) -> _Node:
        definition = self._defs[full]
        namespace = full.rpartition(".")[0] or None
        if definition["type"] in ("record", "error"):
            return _Node("record", definition, namespace, full)
        return _Node(definition["type"], definition, namespace, full)  # enum, fixed

    @staticmethod
    def _branches(union: list[Any]) -> tuple[Any, int | None, int]:
        """(the branch that is not null, the null branch's index or None, its index)."""
        others = [b for b in union if b != "null"]
        if len(others) != 1:
            raise schemas.SchemaFileError("codec supports unions of null and one type only")
        null = union.index("null") if "null" in union else None
        return others[0], null, union.index(others[0])

    @staticmethod
    def _unsupported(kind: str) -> schemas.SchemaFileError:
        return schemas.SchemaFileError(f"codec does not support Avro type {kind!r}")


# -- canonical JSON -> Avro values -------------------------------------------------------


class FastConverters(_Generator):
    """Compiles `to_avro` functions for named records of one set of definitions: the
    fields built in one dict display, timestamps parsed through a cache."""

    PREFIX = "r"

    def __init__(
        self,
        definitions: Mapping[str, Mapping[str, Any]],
        timestamp: Callable[[Any], int],
        to_bytes: Callable[[Any], bytes],
    ) -> None:
        cached = lru_cache(maxsize=1 << 16)(timestamp)

        def fast_timestamp(value: Any) -> int:
            # Strings repeat across a run's revisions (evidence times): parse each once.
            return cached(value) if type(value) is str else timestamp(value)

        env = {"_refuse": _refuse, "_finite": _finite, "_ts": fast_timestamp, "_bytes": to_bytes}
        super().__init__(definitions, env)

    def compile(self, name: str) -> Converter:
        """The generated converter of the named record `name` (and of what it uses)."""
        function = self._record(name)
        self._exec(name)
        converter: Converter = self._env[function]
        return converter

    def _record_source(
        self, function: str, definition: Mapping[str, Any], namespace: str | None
    ) -> str:
        names = self._constant(frozenset(f["name"] for f in definition["fields"]))
        items = []
        for field in definition["fields"]:
            key = repr(field["name"])
            value = self._expr(field["type"], namespace, f"v[{key}]")
            if "default" in field:
                value = f"({value} if {key} in v else {self._constant(field['default'])})"
            items.append(f"{key}: {value}")
        body = ",\n        ".join(items)
        return (
            f"def {function}(v):\n"
            f"    if type(v) is not dict or not v.keys() <= {names}:\n"
            f"        _refuse()\n"
            f"    return {{\n        {body}\n    }}\n"
        )

    def _expr(self, node: Any, namespace: str | None, src: str) -> str:
        """A Python expression that converts the value of expression `src` (evaluated
        once) or raises."""
        n = self._resolve(node, namespace)
        kind, t = n.kind, self._temp()
        if kind == "union":
            other, null, _ = self._branches(n.node)
            if null is None:
                return self._expr(other, n.namespace, src)
            return f"(None if ({t} := {src}) is None else {self._expr(other, n.namespace, t)})"
        if kind == "record":
            return f"{self._record(n.name)}({src})"
        if kind == "enum":
            canonical = dict(n.node.get("canonicalValues", {}))
            symbols = {canonical.get(s, s): s for s in n.node["symbols"]}
            return f"{self._constant(symbols)}[{src}]"
        if n.logical == "timestamp-micros" and kind == "long":
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
            convert = self._expr(n.node["items"], n.namespace, item)
            return (
                f"([{convert} for {item} in {t}] "
                f"if type({t} := {src}) is list or type({t}) is tuple else _refuse())"
            )
        raise self._unsupported(kind)


def with_fallback(fast: Callable[[Any], T], generic: Callable[[Any], T]) -> Callable[[Any], T]:
    """`fast`, and `generic` for whatever `fast` does not take: a converter's refusal,
    or a writer's failure (see the module doc)."""

    def call(value: Any) -> T:
        try:
            return fast(value)
        except Exception:  # not swallowed: `generic` does the work, or raises its own error
            return generic(value)

    return call


# -- Avro values -> binary ---------------------------------------------------------------


class FastWriters(_Generator):
    """Compiles Avro binary writers for named records of one set of definitions.

    A writer takes the Avro form of a value (what a `to_avro` converter returns: checked
    against the schema, timestamps as int micros, enums as symbols) and gives the same
    bytes as `fastavro.schemaless_writer`: a straight sequence of appends to one
    bytearray.
    """

    PREFIX = "w"

    def __init__(self, definitions: Mapping[str, Mapping[str, Any]]) -> None:
        env = {
            "_varint": _varint,
            "_small": _SMALL,
            "_double": struct.Struct("<d").pack,
            "_float": struct.Struct("<f").pack,
        }
        super().__init__(definitions, env)

    def compile(self, name: str) -> Writer:
        """The writer of the named record `name`: Avro value -> bytes."""
        function = self._record(name)
        entry = f"write_{function}"
        self._exec(
            f"writer {name}",
            f"def {entry}(v):\n    b = bytearray()\n    {function}(v, b)\n    return bytes(b)\n",
        )
        writer: Writer = self._env[entry]
        return writer

    def _record_source(
        self, function: str, definition: Mapping[str, Any], namespace: str | None
    ) -> str:
        lines: list[str] = []
        for field in definition["fields"]:
            lines += self._write(field["type"], namespace, f"v[{field['name']!r}]")
        return "\n".join([f"def {function}(v, b):", *_indented(lines)]) + "\n"

    def _length(self, expr: str) -> list[str]:
        """Append the varint of a length or count (most are below 64: one byte, no call)."""
        n = self._temp()
        return [f"{n} = {expr}", f"b += _small[{n}] if {n} < 64 else _varint({n})"]

    def _write(self, node: Any, namespace: str | None, src: str) -> list[str]:
        """Statements that append the encoding of expression `src` to bytearray `b`."""
        n = self._resolve(node, namespace)
        kind, t = n.kind, self._temp()
        if kind == "union":
            other, null, index = self._branches(n.node)
            inner = self._write(other, n.namespace, t)
            if null is None:
                return [f"{t} = {src}", f"b += {_varint(index)!r}", *inner]
            return [
                f"{t} = {src}",
                f"if {t} is None:",
                f"    b += {_varint(null)!r}",
                "else:",
                f"    b += {_varint(index)!r}",
                *_indented(inner),
            ]
        if kind == "record":
            return [f"{self._record(n.name)}({src}, b)"]
        if kind == "enum":
            indexes = {s: _varint(i) for i, s in enumerate(n.node["symbols"])}
            return [f"b += {self._constant(indexes)}[{src}]"]
        if kind == "string":
            return [f"{t} = {src}.encode()", *self._length(f"len({t})"), f"b += {t}"]
        if kind == "bytes":
            return [f"{t} = {src}", *self._length(f"len({t})"), f"b += {t}"]
        if kind in ("int", "long"):  # timestamp-micros included: a long of micros
            return [f"{t} = {src}", f"b += _small[{t}] if -64 <= {t} < 64 else _varint({t})"]
        if kind == "boolean":
            return [f"b += b'\\x01' if {src} else b'\\x00'"]
        if kind in ("double", "float"):
            return [f"b += _{kind}({src})"]
        if kind == "null":
            return []
        if kind == "array":
            item = self._temp()
            return [
                f"{t} = {src}",
                f"if {t}:",
                *_indented(self._length(f"len({t})")),
                f"    for {item} in {t}:",
                *_indented(self._write(n.node["items"], n.namespace, item), 2),
                "b += b'\\x00'",
            ]
        raise self._unsupported(kind)


# -- binary -> Avro values ---------------------------------------------------------------


class FastReaders(_Generator):
    """Compiles Avro binary readers for named records of one set of definitions.

    A reader takes bytes and a start position and returns the value exactly as
    `fastavro.schemaless_reader` gives it with the same schema as writer and reader
    (records as dicts in field order, enums as symbols, timestamps as int micros), and
    the position after it.

    It refuses (raises) anything it does not fully understand: a byte past the end, a
    union branch or boolean byte out of range, an enum index out of range, a negative
    length, bytes that are not UTF-8. The caller then reads the same bytes with
    fastavro, which decodes them or raises its own error, so corrupt input is judged in
    one place. The caller also checks the returned position against the end.
    """

    PREFIX = "rd"

    def __init__(self, definitions: Mapping[str, Mapping[str, Any]]) -> None:
        env = {
            "_tail": _varint_tail,
            "_refuse": _refuse,
            "_double": struct.Struct("<d").unpack_from,
            "_float": struct.Struct("<f").unpack_from,
        }
        super().__init__(definitions, env)

    def compile(self, name: str) -> Reader:
        """The reader of the named record `name`: (bytes, start) -> (value, end)."""
        function = self._record(name)
        self._exec(f"reader {name}")
        reader: Reader = self._env[function]
        return reader

    def _record_source(
        self, function: str, definition: Mapping[str, Any], namespace: str | None
    ) -> str:
        lines: list[str] = []
        items: list[str] = []
        for field in definition["fields"]:
            target = self._temp()
            lines += self._read(field["type"], namespace, target)
            items.append(f"{field['name']!r}: {target}")
        lines.append(f"return {{{', '.join(items)}}}, p")
        return "\n".join([f"def {function}(d, p):", *_indented(lines)]) + "\n"

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
        n = self._resolve(node, namespace)
        kind = n.kind
        if kind == "union":
            other, null, index = self._branches(n.node)
            branch = self._temp()
            lines = [f"{branch} = d[p]", "p += 1"]
            is_other = f"{branch} == {_varint(index)[0]}"
            if null is None:
                lines.append(f"if {is_other}:")
            else:
                null_byte = _varint(null)[0]
                lines += [
                    f"if {branch} == {null_byte}:",
                    f"    {target} = None",
                    f"elif {is_other}:",
                ]
            inner = self._read(other, n.namespace, target)
            return [*lines, *_indented(inner), "else:", "    _refuse()"]
        if kind == "record":
            return [f"{target}, p = {self._record(n.name)}(d, p)"]
        if kind == "enum":
            symbols = self._constant(dict(enumerate(n.node["symbols"])))
            return [*self._varint(target), f"{target} = {symbols}[{target}]"]
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
            return [
                f"{target} = []",
                *self._varint(count),
                f"while {count}:",
                f"    if {count} < 0:",  # a block with its byte size: skip the size
                f"        {count} = -{count}",
                *_indented(self._varint(item), 2),
                f"    for _ in range({count}):",
                *_indented(self._read(n.node["items"], n.namespace, item), 2),
                f"        {target}.append({item})",
                *_indented(self._varint(count)),
            ]
        raise self._unsupported(kind)
