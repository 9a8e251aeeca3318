"""The Avro schemas mirror SPEC section 2 and docs/records.md."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from outcomes import schemas
from outcomes.reducers.catalog import EVENT_TYPES, OUTPUT_KINDS

DEFS = schemas.current_definitions()
ENVELOPE = ["event_id", "run_id", "type", "occurred_at", "source"]
ROOT = Path(__file__).resolve().parent.parent


def fields(name: str) -> dict[str, object]:
    return {f["name"]: f["type"] for f in DEFS[name]["fields"]}


def test_one_namespace_one_file_per_named_type() -> None:
    assert {name.rpartition(".")[0] for name in DEFS} == {schemas.NAMESPACE}
    assert set(schemas.EVENT_SCHEMAS) == set(EVENT_TYPES) and len(EVENT_TYPES) == 19
    assert set(schemas.OUTPUT_SCHEMAS) == set(OUTPUT_KINDS)
    for name in [*schemas.EVENT_SCHEMAS.values(), *schemas.OUTPUT_SCHEMAS.values()]:
        assert DEFS[name]["type"] == "record"


@pytest.mark.parametrize("event_type", EVENT_TYPES)
def test_every_event_record_starts_with_the_envelope(event_type: str) -> None:
    record = fields(schemas.EVENT_SCHEMAS[event_type])
    assert list(record)[:5] == ENVELOPE
    assert record["occurred_at"] == {"type": "long", "logicalType": "timestamp-micros"}
    assert record["type"] == "string"


SHARED_SPEC = ROOT.parent / "shared" / "SPEC.md"  # the contract, beside the repository
SPEC_COPY = ROOT / "docs" / "SPEC.md"  # its copy in the repository, for any clone


def test_the_spec_copy_is_the_contract() -> None:
    """docs/SPEC.md is what the schema tests read in a clone with nothing beside it; where
    the contract is beside the repository, the copy must be it, byte for byte."""
    if SHARED_SPEC.exists():
        assert SPEC_COPY.read_bytes() == SHARED_SPEC.read_bytes(), (
            "docs/SPEC.md differs from ../shared/SPEC.md: copy the contract again"
        )
    assert "## 2." in SPEC_COPY.read_text(encoding="utf-8")


RECORDS = ROOT / "docs" / "records.md"
# Event types whose field list is fixed in docs/records.md, not in SPEC section 2:
# SPEC 8 "Record" names answer.checked and what it holds, but not its fields' types.
RECORDS_EVENTS = frozenset({"answer.checked"})


def _spec_fields(event_type: str) -> list[str]:
    """Field names the SPEC lists for an event type (backticked, before any type)."""
    source = RECORDS if event_type in RECORDS_EVENTS else SPEC_COPY
    spec = source.read_text(encoding="utf-8")
    end = r"^$" if source is RECORDS else r"^- `|^\*\*|^Input limits"
    match = re.search(rf"^- `{re.escape(event_type)}`: (.*?)(?={end})", spec, re.S | re.M)
    assert match, event_type
    text = re.sub(r"\[\{.*?\}\]", "", match.group(1), flags=re.S)  # nested record fields
    text = re.sub(r"\(.*?\)", "", text, flags=re.S)
    return [
        name
        for name in re.findall(r"`([a-z_]+)`", text)
        if name not in {"user", "product_rule", "model", "write", "upload", "notification"}
        and not re.search(rf"enum\s*`[^`]*\|?{name}", match.group(1))
    ]


def _extension_fields(event_type: str) -> list[str]:
    """Optional fields beyond SPEC 2 that docs/records.md declares for an event type."""
    text = RECORDS.read_text(encoding="utf-8")
    section = text.split("## Fields beyond SPEC 2 on input events", 1)[1].split("\n## ", 1)[0]
    match = re.search(rf"^- `{re.escape(event_type)}`: (.*?)(?=^- `|^$)", section, re.S | re.M)
    return re.findall(r"`([a-z_]+)` [a-z]+\|null", match.group(1)) if match else []


@pytest.mark.parametrize("event_type", EVENT_TYPES)
def test_event_fields_are_the_spec_fields(event_type: str) -> None:
    record = fields(schemas.EVENT_SCHEMAS[event_type])
    spec = _spec_fields(event_type)
    extensions = _extension_fields(event_type)
    assert spec and set(spec) <= set(record), (spec, list(record))
    assert set(record) - set(ENVELOPE) - set(spec) == set(extensions)
    defaults = {
        f["name"]: f.get("default", "-") for f in DEFS[schemas.EVENT_SCHEMAS[event_type]]["fields"]
    }
    for name in extensions:  # beyond the SPEC only as optional fields, null by default
        assert record[name] == ["null", "string"] and defaults[name] is None, name


def test_optional_fields_are_null_unions_with_null_default() -> None:
    for name, definition in DEFS.items():
        for field in definition.get("fields", []):
            if isinstance(field["type"], list):
                assert field["type"][0] == "null" and field.get("default", 0) is None, (name, field)


def test_enum_symbols_are_valid_and_dotted_values_are_mapped() -> None:
    for name, definition in DEFS.items():
        if definition["type"] != "enum":
            continue
        for symbol in definition["symbols"]:
            assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", symbol), (name, symbol)
        assert set(definition.get("canonicalValues", {})) <= set(definition["symbols"])
    kinds = DEFS[f"{schemas.NAMESPACE}.NotificationKind"]["canonicalValues"]
    assert kinds == {"account_final": "account.final", "account_superseded": "account.superseded"}


def test_shared_types_are_defined_once_and_expanded_once() -> None:
    union = json.dumps(schemas.expand(list(schemas.EVENT_SCHEMAS.values()), DEFS))
    assert union.count('"name": "Artifact"') == 1
    account = json.dumps(schemas.schema_json(schemas.OUTPUT_SCHEMAS["account_revision"]))
    assert account.count('"name": "ToolOutcome"') == 1


def test_baseline_holds_every_current_type() -> None:
    assert set(schemas.load_definitions(schemas.BASELINE_DIR)) <= set(DEFS)
    assert set(schemas.load_definitions(schemas.BASELINE_DIR)) >= {
        *schemas.EVENT_SCHEMAS.values(),
        *schemas.OUTPUT_SCHEMAS.values(),
    }


def test_misnamed_or_dangling_files_are_refused(tmp_path: Path) -> None:
    (tmp_path / "Wrong.avsc").write_text(json.dumps(DEFS[f"{schemas.NAMESPACE}.CheckScope"]))
    with pytest.raises(schemas.SchemaFileError, match="must be named"):
        schemas.load_definitions(tmp_path)
    with pytest.raises(schemas.SchemaFileError, match="unknown type"):
        schemas.expand("io.outcomes.v1.Nope", DEFS)
