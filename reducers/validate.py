"""Validating parser from canonical JSON (or decoded Avro) mappings to event values.

Parsers are derived once per event class from its annotations, so the dataclasses in
`outcomes.reducers.events` stay the one description of the contract. Any violation raises
`InvalidEvent` with the SPEC's reason (`schema_violation`, `too_large`) and a message
that names the field. Whatever a parser accepts, the fold can apply: a value of the
wrong type or out of range (an enum given as a list, a timestamp past year 9999) is
refused here, never left to fail inside the reducers.

This is the one rule set for an event: ingest (`streams/ingest.py`), replay and the
producer SDK (`streams/sdk/producer.py`, at the call) all apply `parse_event`.

Strings (docs/decisions.md, "Identifiers"):

- every string is Unicode text: a lone surrogate (which Python allows and UTF-8 cannot
  encode) is refused;
- a string field is an *identifier* unless it is listed in :data:`TEXT_FIELDS` (free
  text: narrative text, commands, reasons, paths, targets). An identifier holds no
  control character (Unicode Cc), format character (Cf: bidi embeddings, overrides and
  isolates, zero-width characters), line or paragraph separator (Zl, Zp) or lone
  surrogate (Cs): such a character makes two ids that print alike differ, or makes a
  printed id rewrite the terminal or the line it is on. `event_id` and `run_id` are
  also 1..128 characters.
"""

from __future__ import annotations

import dataclasses
import math
import re
import types
import typing
import unicodedata
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from outcomes.reducers.errors import InvalidEvent
from outcomes.reducers.events import EVENT_CLASSES, Event
from outcomes.reducers.limits import Limits
from outcomes.reducers.timefmt import MAX_MICROS, MIN_MICROS, parse_rfc3339

Converter = Callable[[Any, str], Any]

_INT32 = (-(2**31), 2**31 - 1)
_ID_FIELDS = frozenset({"event_id", "run_id"})
_ID_MAX_CHARS = 128
_MINIMUM = {
    "goal_revision": 1,
    "tests_executed": 0,
    # answer.checked (SPEC 8): attempts count from 1, claim counts from 0.
    "attempt": 1,
    **dict.fromkeys(("supported", "contradicted", "unverifiable", "needs_review", "omitted"), 0),
}

# Free-text string fields: any Unicode text (within the size limit). Every other string
# field is an identifier (module docstring), so a field added later is one by default.
TEXT_FIELDS = frozenset(
    {
        "text",  # narrative.submitted: the model's Markdown
        "task",  # run.started: the request as its requester worded it
        "command",  # verification.receipt: a shell command line
        "reason",  # effect.transition, run.cancelled, run.interrupted: public reasons
        "withhold_reason",
        "error_class",
        "target",  # effect.intent: a handle such as a URL or an object key
        "path",  # artifact paths: a file name may hold any character but NUL and /
        "renamed_from",
        "deliverables",
        "expected_artifacts",
    }
)
# Unicode categories an identifier may not hold (module docstring).
IDENTIFIER_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_CATEGORY_NAMES = {
    "Cc": "control character",
    "Cf": "format character",
    "Cs": "lone surrogate",
    "Zl": "line separator",
    "Zp": "paragraph separator",
}
_SURROGATE = re.compile("[\ud800-\udfff]")


def identifier_problem(value: str) -> str | None:
    """Why `value` cannot be an identifier (its first refused character), or None."""
    # str.isprintable() is false for every refused category (and for a few allowed
    # ones, such as a no-break space): a printable value, the usual case, is fine.
    if value.isprintable():
        return None
    for index, char in enumerate(value):
        category = unicodedata.category(char)
        if category in IDENTIFIER_REFUSED_CATEGORIES:
            return (
                f"{_CATEGORY_NAMES[category]} U+{ord(char):04X} at index {index} "
                "(an identifier holds no control, format or separator character)"
            )
    return None


def text_problem(value: str) -> str | None:
    """Why `value` is not Unicode text (it holds a lone surrogate), or None."""
    if value.isascii():
        return None
    found = _SURROGATE.search(value)
    if found is None:
        return None
    return f"lone surrogate U+{ord(found.group()):04X} at index {found.start()} (not Unicode text)"


def _violation(path: str, message: str) -> InvalidEvent:
    return InvalidEvent("schema_violation", f"{path}: {message}")


def _string(limits: Limits) -> Converter:
    max_bytes = limits.max_string_bytes

    def convert(value: Any, path: str) -> str:
        if type(value) is not str:
            raise _violation(path, f"expected a string, got {type(value).__name__}")
        # A UTF-8 character takes at most 4 bytes: encode only when it could matter.
        if len(value) * 4 > max_bytes:
            size = len(value.encode("utf-8", "surrogatepass"))  # the size even if not text
            if size > max_bytes:
                raise InvalidEvent(
                    "too_large", f"{path}: string of {size} bytes exceeds {max_bytes}"
                )
        problem = text_problem(value)
        if problem is not None:
            raise _violation(path, problem)
        return value

    return convert


def _name(limits: Limits) -> Converter:
    """An identifier other than the envelope's ids: a string without a refused character."""
    text = _string(limits)

    def convert(value: Any, path: str) -> str:
        checked: str = text(value, path)
        problem = identifier_problem(checked)
        if problem is not None:
            raise _violation(path, problem)
        return checked

    return convert


def _identifier(value: Any, path: str) -> str:
    if type(value) is not str:
        raise _violation(path, f"expected a string, got {type(value).__name__}")
    if not 1 <= len(value) <= _ID_MAX_CHARS:
        raise _violation(path, f"must be 1..{_ID_MAX_CHARS} characters, got {len(value)}")
    problem = identifier_problem(value)
    if problem is not None:
        raise _violation(path, problem)
    return value


def _integer(name: str) -> Converter:
    low = _MINIMUM.get(name, _INT32[0])

    def convert(value: Any, path: str) -> int:
        if type(value) is not int:
            raise _violation(path, f"expected an integer, got {type(value).__name__}")
        if not low <= value <= _INT32[1]:
            raise _violation(path, f"{_shown(value)} is outside {low}..{_INT32[1]}")
        return value

    return convert


def _double(value: Any, path: str) -> float:
    if type(value) not in (float, int):
        raise _violation(path, f"expected a number, got {type(value).__name__}")
    try:
        number = float(value)
    except OverflowError:  # an int past the largest double (Python ints are unbounded)
        raise _violation(path, f"{_shown(value)} is out of range for a double") from None
    if not math.isfinite(number):
        raise _violation(path, "must be a finite number")
    return number


def _boolean(value: Any, path: str) -> bool:
    if type(value) is not bool:
        raise _violation(path, f"expected true or false, got {type(value).__name__}")
    return value


def _timestamp(value: Any, path: str) -> int:
    if type(value) is int:  # decoded Avro timestamp-micros
        if not MIN_MICROS <= value <= MAX_MICROS:
            raise _violation(path, f"{_shown(value)} microseconds is outside years 1..9999")
        return value
    if type(value) is not str:
        raise _violation(path, "expected an RFC 3339 timestamp string")
    try:
        return parse_rfc3339(value)
    except ValueError as exc:
        raise _violation(path, str(exc)) from None


def _enum(symbols: tuple[str, ...]) -> Converter:
    allowed = frozenset(symbols)

    def convert(value: Any, path: str) -> str:
        # The type first: a list or an object is not hashable, so `in` would raise.
        if type(value) is not str or value not in allowed:
            raise _violation(path, f"{_shown(value)} is not one of {', '.join(symbols)}")
        return str(value)

    return convert


def _shown(value: Any) -> str:
    """A refused value in a message: its repr (which escapes control characters), cut."""
    if type(value) is int and value.bit_length() > 128:  # repr of a huge int is slow or
        return f"an integer of {value.bit_length()} bits"  # refused (over 4300 digits)
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def _optional(inner: Converter) -> Converter:
    def convert(value: Any, path: str) -> Any:
        return None if value is None else inner(value, path)

    return convert


def _sequence(inner: Converter, limits: Limits) -> Converter:
    max_items = limits.max_list_items

    def convert(value: Any, path: str) -> tuple[Any, ...]:
        if type(value) is not list and type(value) is not tuple:
            raise _violation(path, f"expected a list, got {type(value).__name__}")
        if len(value) > max_items:
            raise InvalidEvent(
                "too_large", f"{path}: list of {len(value)} items exceeds {max_items}"
            )
        try:
            return tuple([inner(item, path) for item in value])
        except InvalidEvent:
            pass
        # Converters are pure: convert again with each item's own path, for the message.
        return tuple([inner(item, f"{path}[{index}]") for index, item in enumerate(value)])

    return convert


def _converter(name: str, hint: Any, limits: Limits) -> Converter:
    origin = typing.get_origin(hint)
    if origin is types.UnionType or origin is typing.Union:
        members = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        return _optional(_converter(name, members[0], limits))
    if origin is typing.Literal:
        return _enum(typing.get_args(hint))
    if origin is tuple:
        return _sequence(_converter(name, typing.get_args(hint)[0], limits), limits)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _record(hint, limits)
    if name == "occurred_at":
        return _timestamp
    if name in _ID_FIELDS:
        return _identifier
    simple: dict[Any, Converter] = {
        str: _string(limits) if name in TEXT_FIELDS else _name(limits),
        int: _integer(name),
        float: _double,
        bool: _boolean,
    }
    if hint in simple:
        return simple[hint]
    raise TypeError(f"no converter for {name}: {hint!r}")


_MISSING = object()


def _fast_check(name: str, hint: Any, limits: Limits, consts: dict[str, Any], slot: str) -> str:
    """A Python expression over `v` that is true when `v` is already valid as is.

    False means "take the slow path" (the converter), which either accepts the value
    (e.g. an int for a double) or raises with a precise message.
    """
    origin = typing.get_origin(hint)
    if origin is types.UnionType or origin is typing.Union:
        members = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        inner = _fast_check(name, members[0], limits, consts, slot)
        return f"(v is None or {inner})"
    if origin is typing.Literal:
        consts[f"{slot}_allowed"] = frozenset(typing.get_args(hint))
        return f"(type(v) is str and v in {slot}_allowed)"
    # Strings: a printable identifier (str.isprintable() is false for every refused
    # character), or an ASCII or printable text (no surrogate), is valid as is.
    chars = limits.max_string_bytes // 4
    clean = "({0}.isascii() or {0}.isprintable())" if name in TEXT_FIELDS else "{0}.isprintable()"
    item = "(type({0}) is str and len({0}) <= " + str(chars) + " and " + clean + ")"
    if origin is tuple and typing.get_args(hint)[0] is str:
        items = f"all({item.format('x')} for x in v)"
        return f"(type(v) is list and len(v) <= {limits.max_list_items} and {items})"
    if name == "occurred_at":
        return f"(type(v) is int and {MIN_MICROS} <= v <= {MAX_MICROS})"
    if name in _ID_FIELDS:
        return f"(type(v) is str and 0 < len(v) <= {_ID_MAX_CHARS} and v.isprintable())"
    if hint is str:
        return item.format("v")
    if hint is int:
        low = _MINIMUM.get(name, _INT32[0])
        return f"(type(v) is int and {low} <= v <= {_INT32[1]})"
    if hint is bool:
        return "type(v) is bool"
    return "False"


def _record(cls: type[Any], limits: Limits, skip: frozenset[str] = frozenset()) -> Converter:
    """A generated parser for one dataclass: inline checks, converters only on the slow path."""
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls) if f.name not in skip]
    known = frozenset(names) | skip
    consts: dict[str, Any] = {
        "cls": cls,
        "new": object.__new__,
        "known": known,
        "all_missing": dict.fromkeys(known, _MISSING),
        "unknown_fields": _unknown_fields,
        "not_an_object": _not_an_object,
        "parse_timestamp": parse_rfc3339,
    }
    lines = [
        "def convert(value, path):",
        "    if type(value) is not dict and not isinstance(value, Mapping):",
        "        raise not_an_object(value, path)",
        "    if len(value) > len(known) or not known.issuperset(value):",
        "        raise unknown_fields(value, known, path)",
        # Absent fields (rare) read as MISSING, which only the slow path accepts or names.
        "    if len(value) != len(known):",
        "        value = {**all_missing, **value}",
    ]
    args = []
    for index, name in enumerate(names):
        slot = f"f{index}"
        hint = hints[name]
        optional = type(None) in typing.get_args(hint)
        consts[f"{slot}_slow"] = _slow(name, _converter(name, hint, limits), optional)
        check = _fast_check(name, hint, limits, consts, slot)
        lines.append(f"    v = value[{name!r}]")
        if check != "False":
            lines.append(f"    if not {check}:")
            if name == "occurred_at":
                # The common case, an RFC 3339 string, is parsed here; only an error (or
                # anything that is not a string) takes the slow path, for its message.
                lines.append("        if type(v) is str:")
                lines.append("            try:")
                lines.append("                v = parse_timestamp(v)")
                lines.append("            except ValueError:")
                lines.append(f"                v = {slot}_slow(v, path)")
                lines.append("        else:")
                lines.append(f"            v = {slot}_slow(v, path)")
            else:
                lines.append(f"        v = {slot}_slow(v, path)")
        else:
            lines.append(f"    v = {slot}_slow(v, path)")
        if typing.get_origin(hint) is tuple and check != "False":
            lines.append("    else:")
            lines.append("        v = tuple(v)")
        lines.append(f"    {slot} = v")
        args.append(slot)
    lines.extend(_construct(cls, names, args, consts))
    namespace: dict[str, Any] = {"Mapping": Mapping, **consts}
    # The source is generated from our own annotations, never from input.
    exec("\n".join(lines), namespace)
    convert: Converter = namespace["convert"]
    return convert


def _construct(
    cls: type[Any], names: list[str], args: list[str], consts: dict[str, Any]
) -> list[str]:
    """Source lines that return the instance. A frozen dataclass's `__init__` assigns each
    field through `object.__setattr__`; for a slotted one, with no `__post_init__`, the
    parser sets the (already validated) slots directly, which is the same object for half
    the cost."""
    params = dataclasses.fields(cls)
    direct = (
        "__slots__" in cls.__dict__
        and not hasattr(cls, "__post_init__")
        and [f.name for f in params] == names
        and all(f.init for f in params)
    )
    if not direct:
        return [f"    return cls({', '.join(args)})"]
    lines = ["    o = new(cls)"]
    for name, arg in zip(names, args, strict=True):
        consts[f"{arg}_set"] = getattr(cls, name).__set__
        lines.append(f"    {arg}_set(o, {arg})")
    lines.append("    return o")
    return lines


def _slow(name: str, convert: Converter, optional: bool) -> Converter:
    """The slow path for one field: absence, conversions, and precise errors."""

    def slow(value: Any, path: str) -> Any:
        field_path = f"{path}.{name}" if path else name
        if value is _MISSING:
            if optional:
                return None
            raise _violation(field_path, "missing")
        return convert(value, field_path)

    return slow


def _not_an_object(value: Any, path: str) -> InvalidEvent:
    return _violation(path or "event", f"expected an object, got {type(value).__name__}")


def _unknown_fields(value: Mapping[str, Any], known: frozenset[str], path: str) -> InvalidEvent:
    unknown = sorted(
        _shown(key) if not str(key).isprintable() else str(key) for key in set(value) - known
    )
    return _violation(path or "event", f"unknown field(s) {', '.join(unknown)}")


@cache
def _event_parsers(limits: Limits) -> dict[str, Converter]:
    return {
        type_name: _record(cls, limits, skip=frozenset({"type"}))
        for type_name, cls in EVENT_CLASSES.items()
    }


_DEFAULT_LIMITS = Limits()
_DEFAULT_PARSERS = _event_parsers(_DEFAULT_LIMITS)


def parse_event(value: Any, limits: Limits = _DEFAULT_LIMITS) -> Event:
    """The event value for a canonical JSON object (or decoded Avro record).

    Raises `InvalidEvent` naming the reason and the offending field.
    """
    parsers = _DEFAULT_PARSERS if limits is _DEFAULT_LIMITS else _event_parsers(limits)
    return _parse(value, parsers)


def event_parser(limits: Limits = _DEFAULT_LIMITS) -> Callable[[Any], Event]:
    """`parse_event` with its limits resolved once, for a loop over many events."""
    parsers = _event_parsers(limits)
    parser_of = parsers.get

    def parse(value: Any) -> Event:
        if type(value) is dict:  # the common case, dispatched inline
            type_name = value.get("type")
            if type(type_name) is str:
                parser = parser_of(type_name)
                if parser is not None:
                    event: Event = parser(value, "")
                    return event
        return _parse(value, parsers)  # anything else, with its precise error

    return parse


def _parse(value: Any, parsers: dict[str, Converter]) -> Event:
    if type(value) is not dict and not isinstance(value, Mapping):
        raise _violation("event", f"expected an object, got {type(value).__name__}")
    type_name = value.get("type")
    parser = parsers.get(type_name) if type(type_name) is str else None
    if parser is None:
        raise _violation("type", f"unknown event type {type_name!r}")
    event: Event = parser(value, "")
    return event
