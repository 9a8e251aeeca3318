"""Reference check: the Apache `avro` implementation reads what the codec (fastavro) writes."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import avro.datafile
import avro.io
import avro.schema
import fastavro
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from outcomes import schemas
from outcomes.common.codec import (
    Codec,
    ContainerFailure,
    current_schemas,
    iter_container_events,
    strip_logical_types,
    write_container,
)
from outcomes.common.errors import CodecError
from outcomes.reducers.catalog import EVENT_TYPES, OUTPUT_KINDS
from outcomes.reducers.records import OutputRecord
from tests.codec_support import record_strategy, sample_event, sample_output

CODEC = Codec()
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def avro_schema(full_name: str) -> avro.schema.Schema:
    return avro.schema.parse(json.dumps(current_schemas()[full_name].schema))


def plain(value: Any) -> Any:
    """avro's datum with datetimes as int micros (the codec's Avro form)."""
    if isinstance(value, datetime):
        return (value - EPOCH) // timedelta(microseconds=1)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def avro_read(full_name: str, body: bytes) -> Any:
    reader = avro.io.DatumReader(avro_schema(full_name))
    return plain(reader.read(avro.io.BinaryDecoder(io.BytesIO(body))))


ALL_NAMES = [schemas.EVENT_SCHEMAS[t] for t in EVENT_TYPES] + [
    schemas.OUTPUT_SCHEMAS[k] for k in OUTPUT_KINDS
]


@pytest.mark.parametrize("name", ALL_NAMES)
def test_every_schema_parses_with_avro_and_matches_fastavro(name: str) -> None:
    schema = current_schemas()[name].schema
    parsed = avro.schema.parse(json.dumps(schema))
    assert parsed.fullname == name  # type: ignore[attr-defined]
    # avro 1.12 keeps {"type": "long"} for logical-type longs in its canonical form (the
    # spec reduces it to "long"); compared without logical types, both agree exactly.
    stripped = avro.schema.parse(json.dumps(strip_logical_types(schema)))
    assert stripped.fingerprint("CRC-64-AVRO") == current_schemas()[name].fingerprint
    by_file = fastavro.schema.load_schema(str(schemas.SCHEMA_DIR / f"{name}.avsc"))
    assert fastavro.schema.to_parsing_canonical_form(by_file) == stripped.canonical_form


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of([record_strategy(schemas.EVENT_SCHEMAS[t], t) for t in EVENT_TYPES]))
def test_avro_reads_event_bodies_written_by_the_codec(event: dict[str, Any]) -> None:
    data = CODEC.encode_event(event)
    name = schemas.EVENT_SCHEMAS[event["type"]]
    assert avro_read(name, data[10:]) == CODEC.event_from_json(event)


@pytest.mark.parametrize("kind", OUTPUT_KINDS)
def test_avro_reads_output_bodies_written_by_the_codec(kind: str) -> None:
    body = sample_output(kind)
    data = CODEC.encode_output(OutputRecord(kind, "r", "id", body))
    name = schemas.OUTPUT_SCHEMAS[kind]
    # The Avro form: timestamps as micros, enum symbols (account_final), raw bytes.
    assert avro_read(name, data[10:]) == current_schemas()[name].to_avro(body)


def test_container_written_by_the_codec_is_read_by_avro(tmp_path: Path) -> None:
    events = [sample_event(t, full=(i % 2 == 0)) for i, t in enumerate(EVENT_TYPES)]
    path = tmp_path / "events.avro"
    assert write_container(path, events) == len(events)
    with open(path, "rb") as stream:
        read = [plain(r) for r in avro.datafile.DataFileReader(stream, avro.io.DatumReader())]
    assert read == [CODEC.event_from_json(e) for e in events]
    assert list(iter_container_events(path)) == events


def test_container_written_by_avro_is_read_by_the_codec(tmp_path: Path) -> None:
    name = schemas.EVENT_SCHEMAS["verification.receipt"]
    events = [sample_event("verification.receipt", check_id=f"c{i}") for i in range(3)]
    path = tmp_path / "avro.avro"
    with open(path, "wb") as stream:
        writer = avro.datafile.DataFileWriter(stream, avro.io.DatumWriter(), avro_schema(name))
        for event in events:
            value = CODEC.event_from_json(event)
            value["occurred_at"] = EPOCH + timedelta(microseconds=value["occurred_at"])
            writer.append(value)
        writer.close()
    assert list(iter_container_events(path)) == events


def test_container_reports_bad_records_and_corruption(tmp_path: Path) -> None:
    events = [sample_event("run.started", event_id=f"e{i}") for i in range(3)]
    events[1]["type"] = "run.cancelled"  # not a RunStarted record: refused at write time
    with pytest.raises(CodecError):
        write_container(tmp_path / "bad.avro", events)
    # A record whose `type` disagrees with its schema, written around the codec:
    name = schemas.EVENT_SCHEMAS["run.started"]
    path = tmp_path / "mismatch.avro"
    values = [
        CODEC.event_from_json(sample_event("run.started", event_id=f"e{i}")) for i in range(3)
    ]
    values[1]["type"] = "run.cancelled"
    with open(path, "wb") as stream:
        fastavro.writer(stream, fastavro.parse_schema(current_schemas()[name].schema), values)
    items = list(iter_container_events(path))
    assert [type(i).__name__ for i in items] == ["dict", "ContainerFailure", "dict"]
    failure = items[1]
    assert isinstance(failure, ContainerFailure)
    assert (failure.index, failure.reason) == (1, "schema_violation")
    assert failure.dead_letter(path).body["origin_line"] == 2
    # Corrupt the data (not the header): reading stops with one failure, no exception.
    good = tmp_path / "good.avro"
    write_container(
        good, [sample_event("run.started", event_id=f"e{i}") for i in range(50)], compression="null"
    )
    raw = bytearray(good.read_bytes())
    raw[-40:] = b"\xff" * 40
    broken = tmp_path / "broken.avro"
    broken.write_bytes(bytes(raw))
    items = list(iter_container_events(broken))
    assert isinstance(items[-1], ContainerFailure) and items[-1].reason == "undecodable"
    not_avro = tmp_path / "not.avro"
    not_avro.write_bytes(b"hello")
    (only,) = list(iter_container_events(not_avro))
    assert isinstance(only, ContainerFailure) and only.index == 0
    assert only.message == (
        f"{not_avro}: not an Avro container file (it starts with b'hell', not Obj\\x01); "
        "a file named *.avro is read as Avro: name a JSONL file *.jsonl"
    )


@pytest.mark.parametrize(
    ("name", "data", "found"),
    [
        ("events.avro", b'{"type": "run.started"}\n', "it starts with JSON text, not Obj\\x01"),
        ("list.avro", b"[1, 2]", "it starts with JSON text, not Obj\\x01"),
        ("empty.avro", b"", "it is empty"),
        ("short.avro", b"Ob", "it starts with b'Ob', not Obj\\x01"),
    ],
)
def test_a_file_without_the_container_magic_is_one_clear_failure(
    tmp_path: Path, name: str, data: bytes, found: str
) -> None:
    """fastavro's own message for these is whatever the first bytes happen to mean
    ("read length must be non-negative" for JSON text): the reader says what it found."""
    path = tmp_path / name
    path.write_bytes(data)
    assert list(iter_container_events(path)) == [
        ContainerFailure(
            0,
            "undecodable",
            f"{path}: not an Avro container file ({found}); a file named *.avro is read "
            "as Avro: name a JSONL file *.jsonl",
        )
    ]
    other = tmp_path / "events.bin"
    other.write_bytes(data)
    (failure,) = list(iter_container_events(other))
    assert isinstance(failure, ContainerFailure)
    assert failure.message == f"{other}: not an Avro container file ({found})"


def test_container_items_for_replay(tmp_path: Path) -> None:
    from outcomes.common.codec import iter_container_items
    from outcomes.reducers.limits import Limits

    path = tmp_path / "replay.avro"
    events = [sample_event("run.started", event_id="e1"), sample_event("review.recorded")]
    events[1]["source"] = "x" * 100
    write_container(path, events)
    first, second = iter_container_items(path, Limits(max_string_bytes=64))
    assert (first.origin_file, first.origin_line, first.value) == (str(path), 1, events[0])
    assert json.loads(first.raw) == events[0] and first.error is None
    assert second.origin_line == 2 and second.error is not None
    assert second.error.reason == "too_large"
