"""The `needs_review` claim verdict on the wire (SPEC 6, docs/records.md, schemas/README.md).

`ClaimVerdictValue` gained the symbol `needs_review` and an enum `default`
(`needs_review`): a reader with the current schema reads a verdict symbol it does not
know as one to hand to a person, never as `contradicted`. Readers with an older schema
have no default, so a `needs_review` record does not resolve for them (the one
documented break, `tests/test_schemas_compat.py`); every other verdict still does.
Checked with fastavro (the codec) and with the Apache `avro` reference library.
"""

from __future__ import annotations

import io
import json
from typing import Any, get_args

import avro.errors
import avro.io
import avro.schema
import fastavro
import pytest
from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType
from fastavro.read import SchemaResolutionError

from outcomes import schemas
from outcomes.common.codec import Codec, SchemaStore, schema_fingerprint, strip_logical_types
from outcomes.reducers.claims.checker import Verdict
from outcomes.reducers.records import OutputRecord

VALUE = f"{schemas.NAMESPACE}.ClaimVerdictValue"
RECORD = f"{schemas.NAMESPACE}.ClaimVerdict"
# The ClaimVerdict the release before needs_review read and wrote (schemas/history/).
PREVIOUS_FINGERPRINT = "8832eac9c33d2cd8"
SOE_MAGIC = b"\xc3\x01"


def current() -> Any:
    return schemas.expand(RECORD, schemas.current_definitions())


def previous() -> Any:
    [version] = [
        v for v in schemas.history() if schema_fingerprint(v).hex() == PREVIOUS_FINGERPRINT
    ]
    return version


def baseline() -> Any:
    return schemas.expand(RECORD, schemas.load_definitions(schemas.BASELINE_DIR))


def newer(symbol: str = "partly_supported") -> Any:
    """A hypothetical later ClaimVerdict whose enum has one more symbol."""
    schema = json.loads(json.dumps(current()))
    for field in schema["fields"]:
        if field["name"] == "verdict":
            field["type"]["symbols"].append(symbol)
    return schema


def body(verdict: str, **fields: Any) -> dict[str, Any]:
    """A full claim_verdict body in canonical JSON."""
    return {
        "verdict_id": "run-r:n1:0",
        "claim_id": "run-r:n1:0",
        "settlement": 1,
        "supersedes": None,
        "withdrawn": False,
        "run_id": "run-r",
        "narrative_id": "n1",
        "event_id": "e-n1",
        "account_revision": 2,
        "claim_kind": "completion",
        "verdict": verdict,
        "subject": None,
        "span_start": 0,
        "span_end": 11,
        "span_text": "It is done?",
        "reason": "ambiguous",
        "supported": None,
        **fields,
    }


# A verdict has no timestamp, bytes or dotted enum: its canonical JSON is its Avro datum.


def fastavro_bytes(schema: Any, value: dict[str, Any]) -> bytes:
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, fastavro.parse_schema(strip_logical_types(schema)), value)
    return buffer.getvalue()


def fastavro_read(data: bytes, writer: Any, reader: Any) -> Any:
    parse = fastavro.parse_schema
    return fastavro.schemaless_reader(
        io.BytesIO(data), parse(strip_logical_types(writer)), parse(strip_logical_types(reader))
    )


def reference_read(data: bytes, writer: Any, reader: Any) -> Any:
    datum_reader = avro.io.DatumReader(
        avro.schema.parse(json.dumps(strip_logical_types(writer))),
        avro.schema.parse(json.dumps(strip_logical_types(reader))),
    )
    return datum_reader.read(avro.io.BinaryDecoder(io.BytesIO(data)))


def reference_bytes(schema: Any, value: dict[str, Any]) -> bytes:
    buffer = io.BytesIO()
    writer = avro.io.DatumWriter(avro.schema.parse(json.dumps(strip_logical_types(schema))))
    writer.write(value, avro.io.BinaryEncoder(buffer))
    return buffer.getvalue()


def framed(schema: Any, payload: bytes) -> bytes:
    return SOE_MAGIC + schema_fingerprint(schema) + payload


# -- one list of verdicts ----------------------------------------------------------------


def test_the_enum_appends_needs_review_with_a_default_and_matches_the_checker() -> None:
    enum = schemas.current_definitions()[VALUE]
    old = schemas.load_definitions(schemas.BASELINE_DIR)[VALUE]
    # Appended: every older symbol keeps its position (Avro writes the index).
    assert enum["symbols"] == [*old["symbols"], "needs_review"]
    assert enum["default"] == "needs_review"
    assert list(get_args(Verdict)) == enum["symbols"]


def test_the_change_is_a_new_recorded_claim_verdict_version() -> None:
    fingerprint = schema_fingerprint(current()).hex()
    assert fingerprint != PREVIOUS_FINGERPRINT
    recorded = {schema_fingerprint(v).hex() for v in schemas.history()}
    assert {fingerprint, PREVIOUS_FINGERPRINT} <= recorded


# -- round trips -------------------------------------------------------------------------


def test_a_needs_review_verdict_round_trips_through_the_codec() -> None:
    codec = Codec()
    value = body("needs_review")
    data = codec.encode_output(OutputRecord("claim_verdict", "run-r", value["verdict_id"], value))
    decoded = codec.decode(data)
    assert (decoded.kind, decoded.value) == ("claim_verdict", value)


def test_the_avro_reference_library_reads_what_the_codec_writes_and_back() -> None:
    codec = Codec()
    value = body("needs_review")
    data = codec.encode_output(OutputRecord("claim_verdict", "run-r", value["verdict_id"], value))
    schema = current()
    assert data[:10] == framed(schema, b"")
    assert reference_read(data[10:], schema, schema) == value
    # Written by the reference library, framed, decoded by the codec.
    written = reference_bytes(schema, value)
    assert written == data[10:]
    assert codec.decode(framed(schema, written)).value == value


# -- old readers -------------------------------------------------------------------------


@pytest.mark.parametrize("old", [previous, baseline], ids=["previous-release", "v1-baseline"])
@pytest.mark.parametrize("read", [fastavro_read, reference_read], ids=["fastavro", "avro"])
def test_an_old_reader_still_reads_every_other_verdict(old: Any, read: Any) -> None:
    writer = current()
    for verdict in ("supported", "contradicted", "omitted", "unverifiable"):
        value = body(verdict)
        got = read(fastavro_bytes(writer, value), writer, old())
        assert got["verdict"] == verdict


def test_an_old_reader_cannot_resolve_needs_review() -> None:
    """The documented break: its enum has neither the symbol nor a default, so it fails
    loudly (the codec of an older release makes that a dead letter with the raw bytes);
    it never reads the record as another verdict."""
    writer = current()
    data = fastavro_bytes(writer, body("needs_review"))
    for old in (previous(), baseline()):
        with pytest.raises(SchemaResolutionError, match="needs_review"):
            fastavro_read(data, writer, old)
        with pytest.raises(avro.errors.SchemaResolutionException, match="needs_review"):
            reference_read(data, writer, old)


def test_the_reference_checker_names_the_break_and_nothing_else() -> None:
    checker = ReaderWriterCompatibilityChecker()
    parse = avro.schema.parse
    for old in (previous(), baseline()):
        forward = checker.get_compatibility(parse(json.dumps(old)), parse(json.dumps(current())))
        assert forward.compatibility is SchemaCompatibilityType.incompatible
        assert [str(m) for m in forward.messages] == ["{'needs_review'}"]
        backward = checker.get_compatibility(parse(json.dumps(current())), parse(json.dumps(old)))
        assert backward.compatibility is SchemaCompatibilityType.compatible


# -- readers from now on -----------------------------------------------------------------


def test_a_current_reader_reads_a_verdict_it_does_not_know_as_needs_review() -> None:
    """What the enum default buys: a later writer's new symbol is handed to review by
    readers from this release on, through fastavro and the codec."""
    later = newer()
    value = body("partly_supported")
    data = fastavro_bytes(later, value)
    assert fastavro_read(data, later, current())["verdict"] == "needs_review"
    store = SchemaStore()
    store.add(later)
    decoded = Codec(store=store).decode(framed(later, data))
    assert decoded.value == {**value, "verdict": "needs_review"}
    checker = ReaderWriterCompatibilityChecker()
    parse = avro.schema.parse
    result = checker.get_compatibility(parse(json.dumps(current())), parse(json.dumps(later)))
    assert result.compatibility is SchemaCompatibilityType.compatible


def test_the_python_reference_reader_does_not_apply_the_default() -> None:
    """avro 1.12's Python DatumReader ignores a reader enum's default for a symbol the
    reader lacks (its checker accepts it): a consumer on that library fails loudly on a
    future symbol instead of reading needs_review. docs/records.md says so."""
    later = newer()
    data = fastavro_bytes(later, body("partly_supported"))
    with pytest.raises(avro.errors.SchemaResolutionException, match="partly_supported"):
        reference_read(data, later, current())
