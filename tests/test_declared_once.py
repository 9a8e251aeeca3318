"""A record's shape is declared once, in its Avro schema (issue 36, "Declared once").

The event dataclasses and the producer SDK's typed surface are generated from the schemas
(`python -m outcomes.schemas.generate`): the committed modules must be what the schemas
give, and an optional field added to a copy of a schema must reach every surface.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import json
import re
import shutil
import sys
import types
import typing
from pathlib import Path

import pytest

from outcomes import schemas
from outcomes.reducers import enums_generated, events
from outcomes.reducers.catalog import EVENT_TYPES
from outcomes.schemas import generate
from outcomes.sinks import tables
from outcomes.streams.sdk import consumer
from outcomes.streams.sdk.producer import OutcomesProducer


def test_the_committed_modules_are_what_the_schemas_give() -> None:
    assert generate.stale() == [], "run python -m outcomes.schemas.generate"


def test_the_check_command_reports_drift(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert generate.main(["--check"]) == 0
    for path, text in generate.render().items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text.replace("    agent: str\n", "    agent: bytes\n"))
    assert generate.stale(tmp_path) == [generate.EVENTS_MODULE]


def test_run_started_model_and_task_come_from_the_schema() -> None:
    """The hand-made change of b5ecd7c, reproduced: optional, defaulting to None, so code
    that builds a run.started without them still runs."""
    fields = {f.name: f for f in dataclasses.fields(events.RunStarted)}
    assert fields["model"].default is None and fields["task"].default is None
    assert fields["agent"].default is dataclasses.MISSING
    params = inspect.signature(OutcomesProducer.run_started).parameters
    assert params["model"].default is None and params["model"].annotation == "str | None"


def _schema_fields(name: str) -> list[str]:
    record = schemas.current_definitions()[name]
    return [f["name"] for f in record["fields"]]


@pytest.mark.parametrize("event_type", EVENT_TYPES)
def test_every_surface_has_the_schemas_fields(event_type: str) -> None:
    names = _schema_fields(schemas.EVENT_SCHEMAS[event_type])
    own = [n for n in names if n not in generate.ENVELOPE]
    cls = events.EVENT_CLASSES[event_type]
    assert [f.name for f in dataclasses.fields(cls)] == [n for n in names if n != "type"], (
        "the dataclass holds the schema's fields in its order"
    )
    method = getattr(OutcomesProducer, event_type.replace(".", "_"))
    params = inspect.signature(method).parameters
    assert set(own) <= set(params), "the SDK method takes every field"


def _add_field(directory: Path, record: str, field: dict[str, object]) -> None:
    path = directory / f"{schemas.NAMESPACE}.{record}.avsc"
    schema = json.loads(path.read_text())
    schema["fields"].append(field)
    path.write_text(json.dumps(schema, indent=2))


def _load(name: str, text: str, monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    module = types.ModuleType(name)
    monkeypatch.setitem(sys.modules, name, module)
    exec(compile(text, name, "exec"), module.__dict__)
    return module


def test_one_edit_to_a_schema_reaches_every_surface(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An optional field added to a copy of the schemas, through the generator: the
    event dataclass, the record it holds, the SDK method and the SDK record type all take
    it, and code written before it still builds the event."""
    copy = tmp_path / "schemas"
    shutil.copytree(schemas.SCHEMA_DIR, copy, ignore=shutil.ignore_patterns("baseline", "h*"))
    optional = {"name": "tenant", "type": ["null", "string"], "default": None}
    _add_field(copy, "ToolStarted", optional)
    _add_field(copy, "ToolStarted", {"name": "retries", "type": "int", "default": 0})
    _add_field(copy, "Candidate", {**optional, "name": "note"})
    modules = generate.render(copy, schemas.BASELINE_DIR)

    core = _load("outcomes.reducers.events", modules[generate.EVENTS_MODULE], monkeypatch)
    started = core.EVENT_CLASSES["tool.started"]
    hints = typing.get_type_hints(started)
    assert hints["tenant"] == str | None
    assert started("e", "r", 1, "s", "a", "bash").tenant is None  # built as before the edit
    assert started("e", "r", 1, "s", "a", "bash").retries == 0
    assert started("e", "r", 1, "s", "a", "bash", "acme").tenant == "acme"
    assert "note" in {f.name for f in dataclasses.fields(core.Candidate)}

    sdk = _load("outcomes.streams.sdk.generated_copy", modules[generate.SDK_MODULE], monkeypatch)
    params = inspect.signature(sdk.EventMethods.tool_started).parameters
    assert params["tenant"].default is None and params["tenant"].annotation == "str | None"
    assert params["retries"].default == 0 and params["retries"].annotation == "int"
    assert "note" in sdk.Candidate.__optional_keys__

    sent: list[tuple[str, dict[str, object]]] = []

    class Recorder(sdk.EventMethods):  # type: ignore[name-defined,misc]
        def _emit(self, event_type: str, run_id: str, options: object, fields: dict) -> str:  # type: ignore[type-arg]
            sent.append((event_type, dict(fields)))
            return "id"

    Recorder().tool_started(run_id="r", action_id="a", tool="bash", tenant="acme")
    assert sent == [
        ("tool.started", {"action_id": "a", "tool": "bash", "tenant": "acme", "retries": 0})
    ]


def test_a_required_field_after_an_optional_one_is_refused(tmp_path: Path) -> None:
    """A new field without a default cannot join v1 data; the generator says so rather
    than emitting a dataclass Python would refuse."""
    copy = tmp_path / "schemas"
    shutil.copytree(schemas.SCHEMA_DIR, copy, ignore=shutil.ignore_patterns("baseline", "h*"))
    _add_field(copy, "RunStarted", {"name": "team", "type": "string"})
    with pytest.raises(generate.GenerateError, match=r"RunStarted\.team"):
        generate.render(copy, schemas.BASELINE_DIR)


# -- ClickHouse columns --------------------------------------------------------------------


def _definitions_with(
    record: str, change: typing.Callable[[list[dict[str, object]]], object]
) -> dict[str, typing.Any]:
    definitions = copy.deepcopy(dict(schemas.current_definitions()))
    full = f"{schemas.NAMESPACE}.{record}"
    definitions[full] = copy.deepcopy(dict(definitions[full]))
    change(definitions[full]["fields"])
    return definitions


def test_the_tables_columns_fit_the_schemas() -> None:
    assert tables.column_drift() == []
    assert all(tables.new_columns(t) == () for t in (*tables.LEGACY_TABLES, tables.ANSWER_CHECKS))


def test_a_field_added_to_an_output_schema_gives_its_column() -> None:
    """One edit to the schema: the check names the table that lacks the field, and the
    migration takes its column (name and type) from `new_columns`."""
    definitions = _definitions_with(
        "AnswerCheck",
        lambda fields: fields.append(
            {"name": "reviewer", "type": ["null", "string"], "default": None}
        ),
    )
    assert tables.column_drift(definitions) == [
        "answer_checks: field reviewer of answer_check has no column"
    ]
    assert tables.new_columns(tables.ANSWER_CHECKS, definitions) == (
        ("reviewer", "Nullable(String)"),
    )
    definitions = _definitions_with(
        "Predicate",
        lambda fields: fields.append(
            {"name": "labels", "type": {"type": "array", "items": "string"}}
        ),
    )
    assert tables.new_columns(tables.PREDICATE_RESULTS, definitions) == (
        ("labels", "Array(String)"),
    )


def test_a_column_that_no_longer_fits_its_field_is_named() -> None:
    def retype(fields: list[dict[str, object]]) -> None:
        next(f for f in fields if f["name"] == "attempt")["type"] = "string"
        next(f for f in fields if f["name"] == "text_digest")["name"] = "digest"

    problems = tables.column_drift(_definitions_with("AnswerCheck", retype))
    assert "answer_checks.attempt: UInt32 does not fit the field attempt" in problems
    assert "answer_checks.text_digest: no field text_digest in answer_check" in problems
    # An optional field needs a column that can hold its null.
    optional = _definitions_with(
        "Notification",
        lambda fields: next(f for f in fields if f["name"] == "revision").update(
            type=["null", "int"], default=None
        ),
    )
    assert tables.column_drift(optional) == [
        "notifications.revision: UInt32 does not fit the field revision"
    ]


# -- the consumer SDK's items ------------------------------------------------------------

# Item -> (record kind, item field -> record field where the names differ).
ITEMS: dict[type, tuple[str, dict[str, str]]] = {
    consumer.Notification: ("notification", {"notification_kind": "kind"}),
    consumer.ClaimNotification: ("claim_notification", {}),
    consumer.AccountRevision: ("account_revision", {}),
    consumer.ClaimVerdict: ("claim_verdict", {}),
}
_ITEM_BASE = frozenset({"id", "run_id", "origin", "body"})
_JSON_SCALARS = {"string": str, "int": int, "long": int, "boolean": bool, "double": float}


def _json_type(node: typing.Any) -> typing.Any:
    """The Python type of a field's value in a record's canonical JSON (the item's body)."""
    if isinstance(node, list):
        (inner,) = [branch for branch in node if branch != "null"]
        return _json_type(inner) | None
    if isinstance(node, dict):
        if node.get("logicalType") == "timestamp-micros":
            return str  # RFC 3339 text in canonical JSON
        if node.get("type") == "array":
            return tuple[_json_type(node["items"]), ...]  # type: ignore[misc]
        return _json_type(node["type"])
    if node in _JSON_SCALARS:
        return _JSON_SCALARS[node]
    assert schemas.current_definitions()[f"{schemas.NAMESPACE}.{node}"]["type"] == "enum"
    return getattr(enums_generated, node)


@pytest.mark.parametrize("item", list(ITEMS), ids=lambda cls: cls.__name__)
def test_the_consumer_items_fields_are_the_records_fields(item: type) -> None:
    """The items show a chosen few of their record's fields (all are in `body`); each
    has the type the schema gives, so a changed schema fails here until the item follows."""
    kind, renamed = ITEMS[item]
    fields = {
        f["name"]: f["type"]
        for f in schemas.current_definitions()[schemas.OUTPUT_SCHEMAS[kind]]["fields"]
    }
    hints = typing.get_type_hints(item)
    own = [f.name for f in dataclasses.fields(item) if f.name not in _ITEM_BASE]
    assert own
    for name in own:
        field = renamed.get(name, name)
        assert field in fields, f"{item.__name__}.{name}: no field {field} in {kind}"
        assert hints[name] == _json_type(fields[field]), f"{item.__name__}.{name}"


def _type_tree(kind: str) -> typing.Any:
    """A ClickHouse type as a comparable value: a named Tuple as a dict of its fields."""
    kind = kind.strip()
    if kind.startswith("Array(") and kind.endswith(")"):
        return ("Array", _type_tree(kind[len("Array(") : -1]))
    if not (kind.startswith("Tuple(") and kind.endswith(")")):
        return kind
    fields, depth, current = {}, 0, ""
    for char in kind[len("Tuple(") : -1] + ",":
        if char == "," and depth == 0:
            name, _, inner = current.strip().partition(" ")
            fields[name] = _type_tree(inner)
            current = ""
            continue
        depth += {"(": 1, ")": -1}.get(char, 0)
        current += char
    return fields


def _paths(tree: object, prefix: str = "") -> set[str]:
    """Every dotted field path of a type tree (an array of tuples' fields as `a.f`)."""
    if isinstance(tree, tuple) and tree[0] == "Array":
        return _paths(tree[1], prefix)
    if not isinstance(tree, dict):
        return set()
    out: set[str] = set()
    for name, inner in tree.items():
        out.add(prefix + name)
        out |= _paths(inner, f"{prefix}{name}.")
    return out


@pytest.mark.parametrize("kind", list(schemas.OUTPUT_SCHEMAS))
def test_the_json_the_sink_reads_is_what_the_columns_declare(kind: str) -> None:
    """The JSON insert path (sinks/json_insert.py) reads each record with the shape
    `tables.json_shape` derives from the columns and the schemas, and every field its
    column expressions name plainly is in that shape."""
    from outcomes.sinks import json_insert

    shape = tables.json_shape(kind)
    assert json_insert.structure(kind) == shape[len("Tuple(") : -1]
    assert "LowCardinality" not in shape
    paths = _paths(_type_tree(shape))
    _, variants = json_insert.VARIANTS[kind]
    plain = re.compile(r"^[a-z_]+(\.[a-z_]+)*$")
    named = {e for v in variants for e in v.exprs if plain.match(e) and e != "canonical.json"}
    assert named and named <= paths, sorted(named - paths)
