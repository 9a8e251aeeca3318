"""The codec: lossless canonical JSON <-> Avro, framing, resolution, dead letters."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Callable
from datetime import UTC
from typing import Any

import fastavro
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from outcomes import schemas
from outcomes.common.codec import (
    MAX_MICROS,
    MIN_MICROS,
    Codec,
    SchemaStore,
    current_schemas,
    format_timestamp,
    parse_timestamp,
    schema_fingerprint,
)
from outcomes.common.errors import CodecError, SchemaRegistryUnavailable
from outcomes.common.settings import Settings
from outcomes.reducers.catalog import EVENT_TYPES, OUTPUT_KINDS, OUTPUT_TOPICS
from outcomes.reducers.limits import Limits
from outcomes.reducers.records import OutputRecord
from outcomes.reducers.timefmt import _parse_general
from tests.codec_support import (
    micros,
    record_strategy,
    rfc3339,
    sample_event,
    sample_output,
)

CODEC = Codec()
SMALL = Codec(Settings(limits=Limits(max_event_bytes=4096, max_string_bytes=64, max_list_items=4)))

any_event = st.one_of(
    [record_strategy(schemas.EVENT_SCHEMAS[t], t) for t in EVENT_TYPES]
)  # fmt: skip


def _tagged(kind: str) -> Callable[[dict[str, Any]], tuple[str, dict[str, Any]]]:
    return lambda body: (kind, body)


any_output = st.one_of(
    [record_strategy(schemas.OUTPUT_SCHEMAS[k]).map(_tagged(k)) for k in OUTPUT_KINDS]
)


def output(kind: str, body: dict[str, Any]) -> OutputRecord:
    return OutputRecord(kind, str(body.get("run_id") or ""), "id", body)


# -- round trips --------------------------------------------------------------------------


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(any_event)
def test_every_event_type_round_trips_losslessly(event: dict[str, Any]) -> None:
    data = CODEC.encode_event(event)
    decoded = CODEC.decode(data)
    assert decoded.kind == event["type"]
    assert decoded.schema_name == schemas.EVENT_SCHEMAS[event["type"]]
    assert decoded.value == event
    fast = CODEC.decode_event_fast(data)
    assert fast == {**event, "occurred_at": micros(event["occurred_at"])}
    assert CODEC.event_from_json(event) == fast


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(any_output)
def test_every_output_record_round_trips_losslessly(kind_body: tuple[str, Any]) -> None:
    kind, body = kind_body
    decoded = CODEC.decode(CODEC.encode_output(output(kind, body)))
    assert (decoded.kind, decoded.value) == (kind, body)


@pytest.mark.parametrize("event_type", EVENT_TYPES)
@pytest.mark.parametrize("full", [True, False], ids=["all-fields", "nulls-and-empty-lists"])
def test_each_event_type_full_and_minimal(event_type: str, full: bool) -> None:
    event = sample_event(event_type, full=full)
    assert CODEC.decode(CODEC.encode_event(event)).value == event


@pytest.mark.parametrize("kind", OUTPUT_KINDS)
@pytest.mark.parametrize("full", [True, False], ids=["all-fields", "nulls-and-empty-lists"])
def test_each_output_kind_full_and_minimal(kind: str, full: bool) -> None:
    body = sample_output(kind, full=full)
    assert CODEC.decode(CODEC.encode_output(output(kind, body))).value == body


def test_edge_values_survive() -> None:
    event = sample_event(
        "injection.recorded",
        run_id="run-ü-🚀-\u0000-\U0010ffff",
        occurred_at="9999-12-31T23:59:59.999999Z",
        block_bytes=2**31 - 1,
        range_start=-(2**31),
        range_end=0,
        candidate_ids=[],
        location="",
    )
    assert CODEC.decode(CODEC.encode_event(event)).value == event
    dl = sample_output("dead_letter")
    dl.update(origin_offset=2**63 - 1, raw="")
    assert CODEC.decode(CODEC.encode_output(output("dead_letter", dl))).value == dl


def test_omitted_optionals_read_as_null_and_timestamps_normalize() -> None:
    event = sample_event("tool.finished", occurred_at="2026-11-30T11:00:00.5+01:00")
    del event["error_class"]
    value = CODEC.decode(CODEC.encode_event(event)).value
    assert value["error_class"] is None
    assert value["occurred_at"] == "2026-11-30T10:00:00.500000Z"


def test_dotted_enum_values_map_to_avro_symbols_and_back() -> None:
    body = sample_output("notification")
    body["kind"] = "account.superseded"
    data = CODEC.encode_output(output("notification", body))
    assert b"account" not in data  # an enum travels as its index, not as text
    assert CODEC.decode(data).value["kind"] == "account.superseded"
    with pytest.raises(CodecError, match=r"account\.final"):
        CODEC.encode_output(output("notification", {**body, "kind": "account_final"}))


@given(st.datetimes(timezones=st.just(UTC)))
def test_timestamps_keep_microseconds(moment: Any) -> None:
    text = rfc3339(moment)
    assert format_timestamp(parse_timestamp(text)) == text
    assert parse_timestamp(text) == micros(text)


@pytest.mark.parametrize(
    "text",
    [
        "2026-11-30T10:00:00",  # no zone
        "2026-11-30 10:00:00Z",  # not RFC 3339's T
        "2026-11-30T10:00:00.1234567Z",  # finer than Avro timestamp-micros: would be lost
        "2026-02-30T10:00:00Z",
        "yesterday",
    ],
)
def test_bad_timestamps_are_schema_violations(text: str) -> None:
    with pytest.raises(CodecError) as err:
        CODEC.encode_event(sample_event("run.started", occurred_at=text))
    assert err.value.reason == "schema_violation"
    assert "occurred_at" in err.value.message


def _outcome(parse: Any, text: str) -> tuple[str, Any]:
    try:
        return "ok", parse(text)
    except ValueError as exc:
        return "error", str(exc)


@given(
    st.integers(min_value=MIN_MICROS, max_value=MAX_MICROS),
    st.integers(min_value=0, max_value=26),
    st.characters(),
)
def test_the_canonical_fast_path_agrees_with_the_general_parser(
    micros_value: int, where: int, char: str
) -> None:
    text = format_timestamp(micros_value)
    assert parse_timestamp(text) == _parse_general(text) == micros_value
    bent = text[:where] + char + text[where + 1 :]  # one character changed: same verdict
    assert _outcome(parse_timestamp, bent) == _outcome(_parse_general, bent)


def test_nanosecond_zeros_are_accepted() -> None:
    assert parse_timestamp("2026-11-30T10:00:00.123456000Z") == micros(
        "2026-11-30T10:00:00.123456Z"
    )


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"surprise": 1}, "unknown field"),
        ({"goal_revision": "1"}, "goal_revision"),
        ({"goal_revision": True}, "goal_revision"),
        ({"goal_revision": 2**31}, "goal_revision"),
        ({"authored_by": "admin"}, "authored_by"),
        ({"required_checks": [{"label": "unit"}]}, "required_checks[0].scope"),
        ({"deliverables": "a.py"}, "deliverables"),
        ({"deliverables": ["a.py", None]}, "deliverables[1]"),
        ({"run_id": None}, "run_id"),
    ],
)
def test_schema_violations_name_the_field(change: dict[str, Any], where: str) -> None:
    with pytest.raises(CodecError) as err:
        CODEC.encode_event({**sample_event("goal.revised"), **change})
    assert err.value.reason == "schema_violation"
    assert where in err.value.message


def test_missing_required_field_and_unknown_type() -> None:
    event = sample_event("tool.started")
    del event["tool"]
    with pytest.raises(CodecError, match="tool: missing required field"):
        CODEC.encode_event(event)
    with pytest.raises(CodecError, match="unknown event type"):
        CODEC.encode_event({**event, "type": "tool.exploded"})


# -- framing --------------------------------------------------------------------------


def test_single_object_encoding_header() -> None:
    data = CODEC.encode_event(sample_event("review.recorded"))
    schema = current_schemas()[schemas.EVENT_SCHEMAS["review.recorded"]]
    assert data[:2] == b"\xc3\x01"
    assert data[2:10] == schema.fingerprint
    body = fastavro.schemaless_reader(io.BytesIO(data[10:]), schema.parsed)
    assert isinstance(body, dict) and body["state"] == "revise"


class FakeRegistry:
    """In-memory Schema Registry: ids by subject and schema text."""

    def __init__(self) -> None:
        self.schemas: dict[int, str] = {}
        self.subjects: dict[str, int] = {}
        self.lookups = 0

    def register(self, subject: str, schema_str: str) -> int:
        for schema_id, text in self.schemas.items():
            if text == schema_str:
                self.subjects[subject] = schema_id
                return schema_id
        schema_id = 100 + len(self.schemas)
        self.schemas[schema_id] = schema_str
        self.subjects[subject] = schema_id
        return schema_id

    def lookup(self, schema_id: int) -> str:
        self.lookups += 1
        return self.schemas[schema_id]


def test_schema_registry_framing_and_lookup() -> None:
    registry = FakeRegistry()
    writer = Codec(registry=registry)
    event = sample_event("tool.finished")
    data = writer.encode_event(event)
    assert data[0] == 0 and int.from_bytes(data[1:5], "big") == 100
    assert "outcomes.tool.v1-io.outcomes.v1.ToolFinished" in registry.subjects
    assert "timestamp-micros" in registry.schemas[100]  # registered with logical types
    reader = Codec(registry=registry)  # another process: knows the id only via lookup
    assert reader.decode(data).value == event
    assert reader.decode_event_fast(data)["tool"] == event["tool"]
    assert registry.lookups == 1  # cached after the first message
    notification = sample_output("notification")
    out = writer.encode_output(output("notification", notification))
    assert f"{OUTPUT_TOPICS['notification']}-io.outcomes.v1.Notification" in registry.subjects
    assert reader.decode(out).value == notification


def test_registry_framed_bytes_without_a_registry_are_unknown_schema() -> None:
    data = Codec(registry=FakeRegistry()).encode_event(sample_event("run.started"))
    dead = CODEC.decode_or_dead_letter(data, "outcomes.lifecycle.v1", 3, 42)
    assert isinstance(dead, OutputRecord) and dead.body["reason"] == "unknown_schema"
    assert "no schema registry" in dead.body["message"]


# -- schema evolution through the store ----------------------------------------------------


def _variant(event_type: str, change: Any) -> dict[str, Any]:
    schema = json.loads(json.dumps(current_schemas()[schemas.EVENT_SCHEMAS[event_type]].schema))
    change(schema["fields"])
    return schema


def _framed(schema: dict[str, Any], value: dict[str, Any]) -> bytes:
    body = io.BytesIO()
    fastavro.schemaless_writer(body, fastavro.parse_schema(schema), value)
    return b"\xc3\x01" + schema_fingerprint(schema) + body.getvalue()


def test_newer_writer_with_an_optional_field_is_read_by_the_current_reader() -> None:
    newer = _variant(
        "tool.started",
        lambda f: f.append({"name": "priority", "type": ["null", "int"], "default": None}),
    )
    event = sample_event("tool.started")
    value = {**CODEC.event_from_json(event), "priority": 5}
    data = _framed(newer, value)
    codec = Codec()
    dead = codec.decode_or_dead_letter(data, "outcomes.tool.v1", 0, 1)
    assert isinstance(dead, OutputRecord) and dead.body["reason"] == "unknown_schema"
    codec.store.add(json.dumps(newer))
    assert codec.decode(data).value == event  # the unknown field is dropped by resolution
    assert codec.decode_event_fast(data) == CODEC.event_from_json(event)


def test_older_writer_without_an_optional_field_gets_the_default() -> None:
    older = _variant("tool.finished", lambda f: f.pop())  # drop error_class
    value = CODEC.event_from_json(sample_event("tool.finished"))
    del value["error_class"]
    store = SchemaStore()
    store.add(older)
    decoded = Codec(store=store).decode(_framed(older, value)).value
    assert decoded["error_class"] is None
    assert decoded["action_id"] == value["action_id"]


def test_unresolvable_writer_is_a_schema_violation() -> None:
    incompatible = _variant("tool.started", lambda f: f[-1].update(type="int"))
    codec = Codec()
    codec.store.add(incompatible)
    value = {**CODEC.event_from_json(sample_event("tool.started")), "tool": 3}
    dead = codec.decode_or_dead_letter(_framed(incompatible, value), "t", 0, 0)
    assert isinstance(dead, OutputRecord)
    assert dead.body["reason"] == "schema_violation"


# -- dead letters --------------------------------------------------------------------------


def _dead(codec: Codec, data: bytes) -> dict[str, Any]:
    result = codec.decode_or_dead_letter(data, "outcomes.goal.v1", 2, 99)
    assert isinstance(result, OutputRecord), result
    assert result.kind == "dead_letter"
    body = dict(result.body)
    assert base64.b64decode(body["raw"]) == data
    assert (body["origin_topic"], body["origin_partition"], body["origin_offset"]) == (
        "outcomes.goal.v1",
        2,
        99,
    )
    assert body["dead_letter_id"] == "outcomes.goal.v1:2:99"
    assert body["message"] and "\n" not in body["message"]
    # A dead letter is itself a valid output record.
    assert CODEC.decode(CODEC.encode_output(result)).value == body
    return body


GOOD = CODEC.encode_event(sample_event("goal.revised"))


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "undecodable"),
        (b"{json: 1}", "undecodable"),
        (b"\xc3\x01\x00", "undecodable"),
        (GOOD[:-3], "undecodable"),
        (GOOD + b"\x00", "undecodable"),
        (b"\xc3\x01" + b"\x11" * 8 + GOOD[10:], "unknown_schema"),
    ],
    ids=["empty", "json", "short-header", "truncated", "trailing", "unknown-fingerprint"],
)
def test_bad_bytes_become_dead_letters(data: bytes, reason: str) -> None:
    assert _dead(CODEC, data)["reason"] == reason


def test_record_carrying_another_type_is_a_schema_violation() -> None:
    schema = current_schemas()[schemas.EVENT_SCHEMAS["run.cancelled"]]
    value = {**CODEC.event_from_json(sample_event("run.cancelled")), "type": "run.interrupted"}
    body = _dead(CODEC, _framed(schema.schema, value))
    assert body["reason"] == "schema_violation"
    assert body["event_id"] == value["event_id"] and body["run_id"] == value["run_id"]


def test_output_record_on_an_input_topic_is_a_schema_violation() -> None:
    data = CODEC.encode_output(output("notification", sample_output("notification")))
    assert _dead(CODEC, data)["reason"] == "schema_violation"


def test_too_large_message_string_and_list() -> None:
    huge = CODEC.encode_event(sample_event("narrative.submitted", text="x" * 5000))
    assert _dead(SMALL, huge)["reason"] == "too_large"
    # 40 two-byte characters: 40 chars but 80 bytes > 64.
    long_string = CODEC.encode_event(sample_event("narrative.submitted", text="é" * 40))
    body = _dead(SMALL, long_string)
    assert body["reason"] == "too_large" and "text" in body["message"]
    assert body["run_id"] is not None
    long_list = CODEC.encode_event(sample_event("goal.revised", deliverables=["a"] * 5))
    body = _dead(SMALL, long_list)
    assert body["reason"] == "too_large" and "deliverables" in body["message"]
    at_limits = CODEC.encode_event(
        sample_event("goal.revised", deliverables=["a"] * 4, source="é" * 32)
    )
    assert SMALL.decode_event_fast(at_limits)["deliverables"] == ["a"] * 4


def test_encoding_refuses_oversize_events() -> None:
    for event in (
        sample_event("narrative.submitted", text="x" * 65),
        sample_event("injection.recorded", candidate_ids=["c"] * 5),
    ):
        with pytest.raises(CodecError) as err:
            SMALL.encode_event(event)
        assert err.value.reason == "too_large"
    with pytest.raises(CodecError) as err:
        SMALL.event_from_json(sample_event("narrative.submitted", text="x" * 65))
    assert err.value.reason == "too_large"


@settings(max_examples=300)
@given(st.binary(max_size=200), st.integers(0, 80), st.binary(min_size=1, max_size=3))
def test_no_input_escapes_as_an_exception(junk: bytes, at: int, patch: bytes) -> None:
    for data in (junk, b"\xc3\x01" + GOOD[2:10] + junk, GOOD[:at] + patch + GOOD[at + 1 :]):
        result = CODEC.decode_or_dead_letter(data, "t", 0, 0)
        if isinstance(result, OutputRecord):
            assert result.body["reason"] in {"undecodable", "unknown_schema", "schema_violation"}
        else:
            assert result["type"] in EVENT_TYPES


def test_canonical_decode_or_dead_letter() -> None:
    event = sample_event("effect.receipt")
    assert CODEC.decode_or_dead_letter(CODEC.encode_event(event), canonical=True) == event


def test_configured_registry_without_its_client_is_a_clear_error() -> None:
    try:
        import confluent_kafka.schema_registry  # noqa: F401
    except ImportError:
        with pytest.raises(SchemaRegistryUnavailable, match=r"confluent-kafka\[schemaregistry\]"):
            Codec(Settings(schema_registry_url="http://127.0.0.1:1"))
    else:  # the client is installed: constructing it must not contact the registry
        codec = Codec(Settings(schema_registry_url="http://127.0.0.1:1"))
        assert codec.registry is not None


@pytest.mark.parametrize(
    ("number", "shown"),
    [
        (2**31, "integer 2147483648"),
        (10**5000, "integer of 16610 bits"),  # str() refuses an int of over 4300 digits
        (-(10**400), "integer of 1329 bits"),
    ],
    ids=["2**31", "5001 digits", "-10**400"],
)
def test_an_int_out_of_range_is_a_violation_naming_the_field(number: int, shown: str) -> None:
    with pytest.raises(CodecError) as err:
        CODEC.encode_event({**sample_event("verification.receipt"), "tests_executed": number})
    assert err.value.reason == "schema_violation"
    assert err.value.message == (
        f"verification.receipt: tests_executed: {shown} out of range for a 32-bit Avro number"
    )


@pytest.mark.parametrize(
    ("number", "shown"),
    [(10**400, "integer of 1329 bits"), (-(2**1024), "integer of 1025 bits")],
    ids=["10**400", "-2**1024"],
)
def test_an_int_past_the_largest_double_is_a_violation_naming_the_field(
    number: int, shown: str
) -> None:
    event = sample_event("retrieval.evaluated")
    candidate = {**event["candidates"][0], "score": number}
    with pytest.raises(CodecError) as err:
        CODEC.encode_event({**event, "candidates": [candidate]})
    assert err.value.reason == "schema_violation"
    assert err.value.message == (
        f"retrieval.evaluated: candidates[0].score: {shown} out of range for a double"
    )
    # The largest int a double holds is still a number.
    fits = {**candidate, "score": 2**1023}
    assert CODEC.encode_event({**event, "candidates": [fits]})


def test_an_assembled_account_with_its_requirement_policy_round_trips() -> None:
    """SPEC 3.2: the policy a revision records travels in the Avro record; an account
    revision written before the fields existed (the baseline schema) reads them as null."""
    from outcomes.importers.trace import request_goal
    from tests.builders import RunBuilder, fold_events

    b = RunBuilder()
    events = [
        b.event("goal.revised", **request_goal()),
        b.snapshot("snap-1"),
        b.receipt("pytest -q", "fail"),
        b.finalize("snap-1"),
    ]
    records, account = fold_events(events)
    assert account is not None and account["requirement_policy"] == "observed"
    [record] = [r for r in records if r.kind == "account_revision"]
    decoded = CODEC.decode(CODEC.encode_output(record)).value
    assert decoded == account
    assert decoded["requirement_source"] == "worker-1"
    # The version before the fields, as main held it (schemas/history), still decodes.
    older = json.loads(
        (schemas.HISTORY_DIR / "io.outcomes.v1.AccountRevision.b7603f0b68561189.json").read_text()
    )
    assert "requirement_policy" not in {f["name"] for f in older["fields"]}
    value = Codec._to_avro(CODEC._catalog.outputs["account_revision"], record.body)
    for name in ("requirement_policy", "requirement_source"):
        del value[name]
    read = CODEC.decode(_framed(older, value)).value
    assert read["requirement_policy"] is None and read["requirement_source"] is None
    assert {k: v for k, v in read.items() if not k.startswith("requirement_")} == {
        k: v for k, v in account.items() if not k.startswith("requirement_")
    }
