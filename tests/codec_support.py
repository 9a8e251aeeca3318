"""Schema-driven test data: hypothesis strategies and deterministic samples.

Both walk the Avro schemas themselves, so every event type and output record is covered
without a hand-written generator per type (and a new field is covered automatically).
Canonical values are produced already normalized (timestamps with 6 fractional digits
and `Z`, doubles as floats), so a lossless round trip must give them back unchanged.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from outcomes import schemas
from outcomes.common.codec import Codec

DEFINITIONS = schemas.current_definitions()

_datetimes = st.datetimes(
    min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59, 999999)
)


def rfc3339(moment: datetime) -> str:
    """Canonical form, computed independently of the codec (isoformat, then Z)."""
    return moment.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def _resolve(node: Any, namespace: str | None) -> tuple[Any, str | None]:
    if isinstance(node, str) and node not in schemas.PRIMITIVES:
        name = schemas.full_name(node, namespace)
        return DEFINITIONS[name], name.rpartition(".")[0]
    if isinstance(node, dict) and isinstance(node.get("type"), dict | list):
        return _resolve(node["type"], namespace)
    if isinstance(node, dict) and "namespace" in node:
        return node, node["namespace"]
    return node, namespace


def canonical_strategy(node: Any, namespace: str | None = None) -> st.SearchStrategy[Any]:
    """Canonical JSON values of an Avro schema node."""
    node, namespace = _resolve(node, namespace)
    if isinstance(node, list):
        return st.one_of([canonical_strategy(b, namespace) for b in node])
    kind = node if isinstance(node, str) else node["type"]
    logical = node.get("logicalType") if isinstance(node, dict) else None
    if kind == "long" and logical == "timestamp-micros":
        return _datetimes.map(rfc3339)
    simple: dict[str, st.SearchStrategy[Any]] = {
        "null": st.none(),
        "boolean": st.booleans(),
        "int": st.integers(-(2**31), 2**31 - 1),
        "long": st.integers(-(2**63), 2**63 - 1),
        "double": st.floats(allow_nan=False, allow_infinity=False),
        "string": st.text(max_size=20),
        "bytes": st.binary(max_size=40).map(lambda b: base64.b64encode(b).decode("ascii")),
    }
    if kind in simple:
        return simple[kind]
    if kind == "enum":
        canonical = node.get("canonicalValues", {})
        return st.sampled_from([canonical.get(s, s) for s in node["symbols"]])
    if kind == "array":
        return st.lists(canonical_strategy(node["items"], namespace), max_size=3)
    if kind == "record":
        return st.fixed_dictionaries(
            {f["name"]: canonical_strategy(f["type"], namespace) for f in node["fields"]}
        )
    raise AssertionError(f"no strategy for {node!r}")


def record_strategy(full_name: str, kind: str | None = None) -> st.SearchStrategy[dict[str, Any]]:
    """Canonical JSON records of one schema; events get their own `type`."""
    strategy = canonical_strategy(DEFINITIONS[full_name], schemas.NAMESPACE)
    if kind is not None:
        return strategy.map(lambda record: {**record, "type": kind})
    return strategy


def sample(node: Any, namespace: str | None = None, *, full: bool = True) -> Any:
    """One deterministic canonical value; `full` fills every optional and list."""
    node, namespace = _resolve(node, namespace)
    if isinstance(node, list):
        others = [b for b in node if b != "null"]
        return sample(others[0], namespace, full=full) if full else None
    kind = node if isinstance(node, str) else node["type"]
    logical = node.get("logicalType") if isinstance(node, dict) else None
    if kind == "long" and logical == "timestamp-micros":
        return "2026-11-30T10:00:00.123456Z"
    values = {"boolean": True, "int": 7, "long": 2**40, "double": 0.5, "string": "s-é"}
    if kind in values:
        return values[kind]
    if kind == "bytes":
        return base64.b64encode(b"\x00\xffraw").decode("ascii")
    if kind == "enum":
        symbol = node["symbols"][-1]
        return node.get("canonicalValues", {}).get(symbol, symbol)
    if kind == "array":
        return [sample(node["items"], namespace, full=full)] if full else []
    if kind == "record":
        return {f["name"]: sample(f["type"], namespace, full=full) for f in node["fields"]}
    raise AssertionError(f"no sample for {node!r}")


def sample_event(event_type: str, *, full: bool = True, **overrides: Any) -> dict[str, Any]:
    """A valid canonical event of `event_type`."""
    record = sample(DEFINITIONS[schemas.EVENT_SCHEMAS[event_type]], schemas.NAMESPACE, full=full)
    return {**record, "type": event_type, **overrides}


def sample_output(kind: str, *, full: bool = True) -> dict[str, Any]:
    """A valid canonical output body of `kind`."""
    return sample(DEFINITIONS[schemas.OUTPUT_SCHEMAS[kind]], schemas.NAMESPACE, full=full)


def micros(text: str) -> int:
    """RFC 3339 -> microseconds, independently of the codec."""
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)


def strip_none(value: Mapping[str, Any]) -> dict[str, Any]:
    """The record with its null fields omitted (SPEC: null or omitted are the same)."""
    return {k: v for k, v in value.items() if v is not None}


@given(record_strategy(schemas.EVENT_SCHEMAS["workspace.snapshot"], "workspace.snapshot"))
def test_generated_events_are_valid_for_the_codec(event: dict[str, Any]) -> None:
    """The generators make contract-valid events (else every property test is vacuous)."""
    value = Codec().event_from_json(event)
    assert value["occurred_at"] == micros(event["occurred_at"])
