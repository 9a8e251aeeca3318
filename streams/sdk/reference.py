"""The producer SDK reference (docs/sdk.md), generated so it cannot drift.

`python -m outcomes.streams.sdk.reference > docs/sdk.md` writes it from the typed methods'
signatures and docstrings, the SDK's record and enum types, the event catalog and the
Avro schemas (field docs, wire types); tests/test_sdk_docs.py checks the committed file
equals this output.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Iterator, Mapping
from typing import Any

from outcomes import schemas
from outcomes.reducers.catalog import EVENT_TOPICS, EVENT_TYPES
from outcomes.streams.sdk import producer
from outcomes.streams.sdk.producer import CallOptions, OutcomesProducer

# What each shared keyword means (CallOptions keeps its types; Python keeps no comments).
CALL_OPTION_DOCS = {
    "event_id": "default: a new time-ordered UUIDv7; pass the same id to republish the "
    "same fact (redelivery is a no-op downstream)",
    "occurred_at": "an aware `datetime`, an RFC 3339 string or int microseconds (UTC); "
    "default: now, UTC",
    "source": "default: the producer's `source`",
    "on_delivery": "called with the event's `DeliveryReport` once the broker answers",
}
RECORDS = (producer.RequiredCheck, producer.Artifact, producer.Candidate)
# Listed once, under "Arguments every method takes", not in each method's table.
SHARED = frozenset({"self", "run_id", *CallOptions.__annotations__})


def _code(text: str) -> str:
    return f"`{text}`"


def _literals() -> dict[str, tuple[str, ...]]:
    """The SDK's enum types, by the name the signatures use."""
    return {
        name: typing.get_args(value)
        for name, value in vars(producer).items()
        if typing.get_origin(value) is typing.Literal
    }


def _annotation(annotation: Any) -> str:
    if isinstance(annotation, str):  # postponed: the text as written in the signature
        return annotation
    if isinstance(annotation, typing.ForwardRef):  # a TypedDict's postponed annotation
        return annotation.__forward_arg__
    return inspect.formatannotation(annotation)


def _avro_type(node: Any) -> str:
    if isinstance(node, list):
        return " | ".join(_avro_type(branch) for branch in node)
    if isinstance(node, str):
        return node.rpartition(".")[2]
    if node.get("logicalType"):
        return f"{node['type']} ({node['logicalType']})"
    if node["type"] == "array":
        return f"array<{_avro_type(node['items'])}>"
    return str(node.get("name", node["type"]))


def _fields(name: str, definitions: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {f["name"]: f for f in definitions[name]["fields"]}


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _method_section(event_type: str, definitions: Mapping[str, Any]) -> Iterator[str]:
    name = event_type.replace(".", "_")
    method = getattr(OutcomesProducer, name)
    fields = _fields(schemas.EVENT_SCHEMAS[event_type], definitions)
    doc = inspect.getdoc(method) or ""
    yield f"### `{name}`"
    yield ""
    yield f"{doc} Topic `{EVENT_TOPICS[event_type]}`; schema `{schemas.EVENT_SCHEMAS[event_type]}`."
    yield ""
    yield "| argument | type | required | Avro type |"
    yield "|---|---|---|---|"
    for parameter in inspect.signature(method).parameters.values():
        if parameter.name in SHARED:
            continue
        field = fields[parameter.name]
        required = (
            "yes"
            if parameter.default is inspect.Parameter.empty
            else f"no: `{parameter.default!r}`"
        )
        yield (
            f"| `{parameter.name}` | {_code(_cell(_annotation(parameter.annotation)))} "
            f"| {required} | {_code(_cell(_avro_type(field['type'])))} |"
        )
    yield ""


def _record_section(record: type, definitions: Mapping[str, Any]) -> Iterator[str]:
    name = record.__name__
    fields = _fields(f"{schemas.NAMESPACE}.{name}", definitions)
    optional = record.__optional_keys__  # type: ignore[attr-defined]
    yield f"### `{name}`"
    yield ""
    yield f"{inspect.getdoc(record)} A `dict` with these keys (no others):"
    yield ""
    yield "| key | type | required | Avro type |"
    yield "|---|---|---|---|"
    annotations = _record_annotations(record)
    for key in fields:
        annotation = annotations[key]
        required = "no: `None`" if key in optional else "yes"
        yield (
            f"| `{key}` | {_code(_cell(_annotation(annotation)))} | {required} "
            f"| {_code(_cell(_avro_type(fields[key]['type'])))} |"
        )
    yield ""


def _record_annotations(record: type) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for base in reversed(record.__mro__):
        merged.update(getattr(base, "__annotations__", {}))
    return merged


def render() -> str:
    """The text of docs/sdk.md."""
    definitions = schemas.current_definitions()
    envelope = _fields(schemas.EVENT_SCHEMAS[EVENT_TYPES[0]], definitions)
    lines = [
        "# Producer SDK reference",
        "",
        "<!-- Generated by `python -m outcomes.streams.sdk.reference > docs/sdk.md` from the typed",
        "     methods, the SDK's types and the Avro schemas; tests/test_sdk_docs.py checks",
        "     this file equals that output. Do not edit it by hand. -->",
        "",
        "`outcomes.streams.sdk.producer.OutcomesProducer` has one typed method per event type; the",
        "method name is the event type with `_` for `.`. Every argument is keyword-only and",
        "every method returns the event's `event_id`. See the README for an example and",
        "[`records.md`](records.md) for what each field means to the pipeline.",
        "",
        "## Types and errors",
        "",
        "Arguments reach the Avro codec as given; nothing is coerced. A list argument",
        "(`Sequence[...]`) takes a `list` or a `tuple`, never a `str` or a `dict`; a record",
        "(`RequiredCheck`, `Artifact`, `Candidate`) is a `dict` with the keys listed below;",
        "an enum is one of its strings; `int` is not `bool`, a number (`float`) may be an",
        "`int`. A value of the wrong type raises `outcomes.common.errors.CodecError` at the call,",
        "before anything is queued, naming the event type, the field, what was expected",
        "and what was given, e.g.:",
        "",
        "```",
        "goal.revised: deliverables: expected a list, got str"
        " (OutcomesProducer.goal_revised() takes deliverables: Sequence[str])",
        "```",
        "",
        "## Arguments every method takes",
        "",
        "| argument | type | required | meaning |",
        "|---|---|---|---|",
        f"| `run_id` | `str` | yes | {envelope['run_id']['doc']} |",
    ]
    for name, kind in CallOptions.__annotations__.items():
        lines.append(
            f"| `{name}` | {_code(_cell(_annotation(kind)))} | no | {CALL_OPTION_DOCS[name]} |"
        )
    lines += ["", "## Methods", ""]
    for event_type in EVENT_TYPES:
        lines.extend(_method_section(event_type, definitions))
    lines += ["## Records", ""]
    for record in RECORDS:
        lines.extend(_record_section(record, definitions))
    lines += ["## Enums", "", "| type | values |", "|---|---|"]
    for name, values in sorted(_literals().items()):
        lines.append(f"| `{name}` | {', '.join(_code(v) for v in values)} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    print(render(), end="")


if __name__ == "__main__":
    main()
