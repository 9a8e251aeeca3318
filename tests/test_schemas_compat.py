"""Schema changes must stay compatible with the committed v1 baseline (schemas/baseline/).

Backward: the current schema reads data written with the baseline. Forward: the baseline
reads data written with the current schema (old consumers keep working). Checked twice:
by the Apache `avro` reference compatibility checker, and by actually resolving written
data in fastavro. The checker is proven to refuse incompatible variants.
"""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Callable, Mapping
from typing import Any

import fastavro
import pytest
from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType
from avro.schema import parse as avro_parse

from outcomes import schemas
from outcomes.common.codec import strip_logical_types
from tests.codec_support import sample

BASELINE = schemas.load_definitions(schemas.BASELINE_DIR)
CURRENT = schemas.current_definitions()
ROOTS = [*schemas.EVENT_SCHEMAS.values(), *schemas.OUTPUT_SCHEMAS.values()]

# Enum symbols added on purpose although a baseline reader (whose enum has no default)
# cannot resolve them: full enum name -> symbols. Each is documented in schemas/README.md
# ("Changing a schema") and docs/decisions.md, and its enum now has a default, so the
# next symbol does not break the readers of this release. Every other difference from
# the baseline must stay compatible both ways.
ACCEPTED_SYMBOLS: Mapping[str, frozenset[str]] = {
    f"{schemas.NAMESPACE}.ClaimVerdictValue": frozenset({"needs_review"}),
}


def _avro_problems(reader: Any, writer: Any) -> list[str]:
    result = ReaderWriterCompatibilityChecker().get_compatibility(
        avro_parse(json.dumps(reader)), avro_parse(json.dumps(writer))
    )
    if result.compatibility is SchemaCompatibilityType.compatible:
        return []
    return sorted(
        f"{m} at {loc}" for m, loc in zip(result.messages, result.locations, strict=False)
    )


def _data_problems(reader: Any, writer: Any) -> list[str]:
    """Write full and minimal samples with `writer`; read them with `reader` in fastavro."""
    problems = []
    writer_parsed = fastavro.parse_schema(strip_logical_types(writer))
    reader_parsed = fastavro.parse_schema(strip_logical_types(reader))
    for full in (True, False):
        value = _avro_value(sample(writer, full=full), writer)
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, writer_parsed, value)
        buffer.seek(0)
        try:
            fastavro.schemaless_reader(buffer, writer_parsed, reader_parsed)
        except Exception as exc:  # resolution failure is the finding this test reports
            problems.append(f"fastavro: {type(exc).__name__}: {exc}")
    return problems


def _avro_value(value: Any, schema: Any) -> Any:
    """The sample in Avro form (timestamps as micros, enum symbols, bytes)."""
    from outcomes.common.codec import _Converters

    definitions = {}
    for node in _named_nodes(schema):
        definitions[schemas.full_name(node["name"], node.get("namespace"))] = node
    return _Converters(definitions).to_avro(schema, None)(value)


def _named_nodes(node: Any) -> list[Mapping[str, Any]]:
    found: list[Mapping[str, Any]] = []
    if isinstance(node, list):
        for branch in node:
            found += _named_nodes(branch)
    elif isinstance(node, dict):
        if node.get("type") in schemas.NAMED_KINDS:
            found.append(node)
        for key in ("fields", "items", "values", "type"):
            child = node.get(key)
            if key == "fields":
                for field in child or []:
                    found += _named_nodes(field["type"])
            elif isinstance(child, dict | list):
                found += _named_nodes(child)
    return found


def incompatibilities(old: Any, new: Any) -> list[str]:
    """Why `new` cannot replace `old` (empty: compatible both ways)."""
    problems = [f"backward: {p}" for p in _avro_problems(new, old) + _data_problems(new, old)]
    problems += [f"forward: {p}" for p in _avro_problems(old, new) + _data_problems(old, new)]
    return problems


def _without_accepted_symbols(d: dict[str, dict[str, Any]]) -> None:
    for enum, symbols in ACCEPTED_SYMBOLS.items():
        d[enum]["symbols"] = [s for s in d[enum]["symbols"] if s not in symbols]
        if d[enum].get("default") in symbols:
            del d[enum]["default"]


@pytest.mark.parametrize("name", ROOTS)
def test_current_schema_is_compatible_with_the_baseline(name: str) -> None:
    assert name in BASELINE, f"{name} missing from schemas/baseline/: copy it there once"
    old = schemas.expand(name, BASELINE)
    assert incompatibilities(old, _variant(name, _without_accepted_symbols)) == []
    # With them: new readers still read all old data; old readers fail only on them.
    problems = incompatibilities(old, schemas.expand(name, CURRENT))
    accepted = set().union(*ACCEPTED_SYMBOLS.values())
    assert [
        p for p in problems if not p.startswith("forward: ") or not any(s in p for s in accepted)
    ] == []


@pytest.mark.parametrize("enum", sorted(ACCEPTED_SYMBOLS))
def test_an_enum_that_gained_a_symbol_has_a_default_and_kept_the_old_order(enum: str) -> None:
    node = CURRENT[enum]
    assert node.get("default") in node["symbols"]
    kept = [s for s in node["symbols"] if s not in ACCEPTED_SYMBOLS[enum]]
    assert kept == BASELINE[enum]["symbols"] == node["symbols"][: len(kept)]


def _variant(name: str, change: Callable[[dict[str, dict[str, Any]]], None]) -> Any:
    definitions = copy.deepcopy({k: dict(v) for k, v in CURRENT.items()})
    change(definitions)
    return schemas.expand(name, definitions)


GOAL = schemas.EVENT_SCHEMAS["goal.revised"]


def _add_field(field: dict[str, Any]) -> Callable[[dict[str, dict[str, Any]]], None]:
    return lambda d: d[GOAL]["fields"].append(field)


def _drop_symbol(d: dict[str, dict[str, Any]]) -> None:
    d[f"{schemas.NAMESPACE}.AuthoredBy"]["symbols"].remove("product_rule")


def _retype(d: dict[str, dict[str, Any]]) -> None:
    for field in d[GOAL]["fields"]:
        if field["name"] == "goal_revision":
            field["type"] = "string"


def _drop_required(d: dict[str, dict[str, Any]]) -> None:
    d[GOAL]["fields"] = [f for f in d[GOAL]["fields"] if f["name"] != "deliverables"]


@pytest.mark.parametrize(
    "change",
    [
        _add_field({"name": "priority", "type": "int"}),
        _drop_symbol,
        _retype,
        _drop_required,
    ],
    ids=["new-required-field", "removed-enum-symbol", "changed-type", "removed-required-field"],
)
def test_checker_refuses_incompatible_changes(
    change: Callable[[dict[str, dict[str, Any]]], None],
) -> None:
    old = schemas.expand(GOAL, BASELINE)
    assert incompatibilities(old, _variant(GOAL, change)) != []


def test_checker_accepts_a_new_optional_field() -> None:
    old = schemas.expand(GOAL, BASELINE)
    new = _variant(GOAL, _add_field({"name": "priority", "type": ["null", "int"], "default": None}))
    assert incompatibilities(old, new) == []
