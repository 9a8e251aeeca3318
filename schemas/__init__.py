"""Avro schemas (`*.avsc`): the source of truth for every record on the wire.

One named type per file, named by its full name (`io.outcomes.v1.Artifact.avsc`), all in
the namespace :data:`NAMESPACE`. Files refer to each other's types by name. Two ways to
load them, both giving the same schemas:

- :func:`expand` (used by the codec and by the Apache `avro` package in the tests) inlines
  every referenced type at its first use, giving one self-contained schema per record;
- `fastavro.schema.load_schema(path)` resolves the same references by file name.

`baseline/` holds a frozen copy of the v1 files: the compatibility test checks every
change against it (see README.md). `history/` holds every self-contained record schema
main has ever held, one JSON file per version, so that data written by an older (or a
not yet upgraded) producer or worker still decodes: the codec's store of writer schemas
knows them all (`python -m outcomes.common.codec.history` records the current ones).

The Python surfaces of the schemas (the event dataclasses, the enums as `Literal` types,
the producer SDK's typed methods) are generated from them by
`python -m outcomes.schemas.generate` (README.md, "Declared once").
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

from outcomes.reducers.catalog import EVENT_TYPES, OUTPUT_KINDS

SCHEMA_DIR: Final = Path(__file__).resolve().parent
BASELINE_DIR: Final = SCHEMA_DIR / "baseline"
HISTORY_DIR: Final = SCHEMA_DIR / "history"
NAMESPACE: Final = "io.outcomes.v1"

PRIMITIVES: Final = frozenset(
    {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}
)
NAMED_KINDS: Final = frozenset({"record", "enum", "fixed", "error"})


def _camel(parts: Iterable[str]) -> str:
    return "".join(part[:1].upper() + part[1:] for part in parts)


# Event type -> full name of its record, e.g. goal.revised -> io.outcomes.v1.GoalRevised.
EVENT_SCHEMAS: Final = MappingProxyType(
    {t: f"{NAMESPACE}.{_camel(t.split('.'))}" for t in EVENT_TYPES}
)
# Output kind -> full name of its record, e.g. dead_letter -> io.outcomes.v1.DeadLetter.
OUTPUT_SCHEMAS: Final = MappingProxyType(
    {k: f"{NAMESPACE}.{_camel(k.split('_'))}" for k in OUTPUT_KINDS}
)


class SchemaFileError(ValueError):
    """A schema file is malformed or refers to a type no file defines."""


def full_name(name: str, namespace: str | None) -> str:
    """Avro name resolution: a dotted name is already full; else prefix the namespace."""
    if "." in name or not namespace:
        return name
    return f"{namespace}.{name}"


def load_definitions(directory: Path = SCHEMA_DIR) -> dict[str, dict[str, Any]]:
    """Every named type in `directory`, by full name, as parsed JSON (not expanded)."""
    definitions: dict[str, dict[str, Any]] = {}
    for path in sorted(directory.glob("*.avsc")):
        try:
            schema = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise SchemaFileError(f"{path}: not JSON: {exc}") from exc
        if not isinstance(schema, dict) or schema.get("type") not in NAMED_KINDS:
            raise SchemaFileError(f"{path}: expected one named type (record, enum, fixed)")
        name = full_name(schema["name"], schema.get("namespace"))
        if path.name != f"{name}.avsc":
            raise SchemaFileError(f"{path}: file must be named {name}.avsc")
        definitions[name] = schema
    return definitions


def expand(roots: str | Iterable[str], definitions: Mapping[str, Mapping[str, Any]]) -> Any:
    """A self-contained schema: each named type inlined at its first use, then by name.

    `roots` is one full name (gives a record schema) or several (gives a union of them,
    e.g. the writer schema of an Avro container file holding many event types).
    """
    defined: set[str] = set()

    def walk(node: Any, namespace: str | None) -> Any:
        if isinstance(node, str):
            if node in PRIMITIVES:
                return node
            name = full_name(node, namespace)
            if name in defined:
                return name
            if name not in definitions:
                raise SchemaFileError(f"unknown type {name!r}")
            return walk(copy.deepcopy(dict(definitions[name])), namespace)
        if isinstance(node, list):
            return [walk(branch, namespace) for branch in node]
        if not isinstance(node, dict):
            raise SchemaFileError(f"not a schema: {node!r}")
        kind = node.get("type")
        if kind in NAMED_KINDS:
            namespace = node.get("namespace", namespace)
            defined.add(full_name(node["name"], namespace))
            node = dict(node)
            if "namespace" not in node and namespace:
                node["namespace"] = namespace
            if kind in ("record", "error"):
                node["fields"] = [
                    {**field, "type": walk(field["type"], namespace)} for field in node["fields"]
                ]
            return node
        if kind == "array":
            return {**node, "items": walk(node["items"], namespace)}
        if kind == "map":
            return {**node, "values": walk(node["values"], namespace)}
        if isinstance(kind, list | dict) or (isinstance(kind, str) and kind not in PRIMITIVES):
            return walk(kind, namespace)
        return node

    if isinstance(roots, str):
        return walk(roots, None)
    return [walk(root, None) for root in roots]


@cache
def current_definitions() -> Mapping[str, Mapping[str, Any]]:
    """The named types of the current schemas, read once per process."""
    return MappingProxyType(load_definitions(SCHEMA_DIR))


def history(directory: Path = HISTORY_DIR) -> list[dict[str, Any]]:
    """Every recorded version of every record schema (self-contained JSON), file order."""
    versions = []
    for path in sorted(directory.glob("*.json")):
        try:
            schema = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise SchemaFileError(f"{path}: not JSON: {exc}") from exc
        if not isinstance(schema, dict) or schema.get("type") != "record":
            raise SchemaFileError(f"{path}: expected one self-contained record schema")
        versions.append(schema)
    return versions


def schema_json(name: str, directory: Path | None = None) -> Any:
    """The self-contained schema of one record (current schemas unless `directory`)."""
    definitions = current_definitions() if directory is None else load_definitions(directory)
    return expand(name, definitions)
