"""The generated canonical JSON -> Avro converters agree with the generic ones.

`common/codec/fast.py` may only accept what the generic converters accept, with the same
result; whatever it refuses goes to the generic converter, which converts it or raises
the violation with its path. Checked on every output and event of a generated fleet,
and on values broken one field at a time.
"""

from __future__ import annotations

import copy
import io
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from outcomes import schemas
from outcomes.common.codec import Codec, _Converters, timestamp_micros
from outcomes.common.codec.catalog import _catalog
from outcomes.common.codec.convert import _to_bytes
from outcomes.common.codec.fast import FastConverters, FastReaders, FastWriters, _varint
from outcomes.common.errors import CodecError
from outcomes.devtools.workload import generate_runs, interleave
from outcomes.reducers.records import OutputRecord
from outcomes.streams.runfold import Origin, RunFolder
from outcomes.streams.store import MemoryEventStore
from tests.codec_support import record_strategy, sample_output

DEFINITIONS = schemas.current_definitions()
FAST = FastConverters(DEFINITIONS, timestamp_micros, _to_bytes)
GENERIC = _Converters(DEFINITIONS)


def fleet() -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(schema name, canonical value) of every event and output of 120 generated runs."""
    codec = Codec()
    events = interleave(list(generate_runs(120, 0, 2, "fast")))
    folder = RunFolder(MemoryEventStore(), codec.decode_event_fast)
    for event in events:
        yield schemas.EVENT_SCHEMAS[event["type"]], event
        for record in folder.process(event["run_id"], codec.encode_event(event), Origin("t", 0, 0)):
            yield schemas.OUTPUT_SCHEMAS[record.kind], record.body


VALUES = list(fleet())


def test_fast_equals_generic_on_a_fleet() -> None:
    kinds = set()
    for name, value in VALUES:
        fast = FAST.compile(name)
        assert fast(value) == GENERIC.to_avro(name, None)(value), name
        kinds.add(name)
    assert len(kinds) >= len(schemas.OUTPUT_SCHEMAS) + 8  # outputs and most event types


ALL_RECORDS = sorted({*schemas.EVENT_SCHEMAS.values(), *schemas.OUTPUT_SCHEMAS.values()})


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(ALL_RECORDS).flatmap(lambda n: st.tuples(st.just(n), record_strategy(n))))
def test_fast_equals_generic_on_generated_records(case: tuple[str, dict[str, Any]]) -> None:
    name, value = case
    assert FAST.compile(name)(value) == GENERIC.to_avro(name, None)(value)


def breakages(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """(path, replacement) pairs that each break or bend one field of `value`."""
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from breakages(inner, (*path, key))
        yield path, {**value, "unexpected": 1}
        if value:
            yield path, dict(list(value.items())[1:])  # the first field missing
        yield path, MappingProxyType(dict(value))  # a Mapping that is not a dict
    elif isinstance(value, list):
        for index, inner in enumerate(value[:2]):
            yield from breakages(inner, (*path, index))
        yield path, tuple(value)
        yield path, "not a list"
    elif isinstance(value, bool):
        yield path, int(value)
    elif isinstance(value, int):
        yield path, True
        yield path, 1 << 63
        yield path, str(value)
    elif isinstance(value, str):
        yield path, 7
        yield path, value + "\x00"
        yield path, None
    elif value is None:
        yield path, "x"


def replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    out = copy.copy(value)
    out[path[0]] = replaced(value[path[0]], path[1:], new)
    return out


def outcome(convert: Any, value: Any) -> tuple[str, Any]:
    try:
        return "ok", convert(value)
    except Exception as exc:  # the two must fail alike: same type, same message
        return "error", (type(exc).__name__, str(exc))


@pytest.mark.parametrize(("kind", "name"), sorted(schemas.OUTPUT_SCHEMAS.items()))
def test_broken_values_convert_or_fail_like_the_generic_path(kind: str, name: str) -> None:
    record = _catalog().by_name[name]
    sample = next((value for n, value in VALUES if n == name), None) or sample_output(kind)
    generic = GENERIC.to_avro(name, None)
    tried = 0
    for path, new in breakages(sample):
        broken = replaced(sample, path, new)
        assert outcome(record.to_avro, broken) == outcome(generic, broken), (path, new)
        tried += 1
    assert tried > 20


def test_the_codec_reports_a_violation_with_its_path() -> None:
    codec = Codec()
    name, body = next((n, v) for n, v in VALUES if n.endswith("AccountRevision"))
    broken = copy.deepcopy(body)
    broken["predicates"][0]["state"] = "maybe"
    record = _catalog().by_name[name]
    with pytest.raises(CodecError, match=r"predicates\[0\]\.state"):
        codec._to_avro(record, broken)


# -- the generated writers ----------------------------------------------------------------

WRITERS = FastWriters(DEFINITIONS)


def fastavro_bytes(name: str, avro_value: Any) -> bytes:
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, _catalog().by_name[name].parsed, avro_value)
    return buffer.getvalue()


def test_writers_give_fastavros_bytes_on_a_fleet() -> None:
    for name, value in VALUES:
        avro_value = GENERIC.to_avro(name, None)(value)
        assert WRITERS.compile(name)(avro_value) == fastavro_bytes(name, avro_value), name


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(ALL_RECORDS).flatmap(lambda n: st.tuples(st.just(n), record_strategy(n))))
def test_writers_give_fastavros_bytes_on_generated_records(
    case: tuple[str, dict[str, Any]],
) -> None:
    name, value = case
    avro_value = GENERIC.to_avro(name, None)(value)
    assert WRITERS.compile(name)(avro_value) == fastavro_bytes(name, avro_value)


@given(st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1))
def test_varints_are_avros_zigzag_longs(n: int) -> None:
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, "long", n)
    assert _varint(n) == buffer.getvalue()


def test_the_codec_writes_with_the_generated_writer_and_falls_back_to_fastavro() -> None:
    name, body = next((n, v) for n, v in VALUES if n.endswith("AccountRevision"))
    record = _catalog().by_name[name]
    avro_value = record.to_avro(body)
    assert record.write(avro_value) == fastavro_bytes(name, avro_value)
    broken = {**avro_value, "status": "not a symbol"}  # only an unchecked value fails here
    with pytest.raises(ValueError, match="not a symbol"):
        record.write(broken)  # fastavro's own error, not the generated writer's KeyError


# -- the generated readers ----------------------------------------------------------------

READERS = FastReaders(DEFINITIONS)
ENCODED = [
    (name, WRITERS.compile(name)(GENERIC.to_avro(name, None)(value))) for name, value in VALUES
]


def fastavro_read(name: str, data: bytes) -> tuple[Any, int]:
    buffer = io.BytesIO(data)
    value = fastavro.schemaless_reader(buffer, _catalog().by_name[name].parsed, None)
    return value, buffer.tell()


def test_readers_give_fastavros_values_on_a_fleet() -> None:
    for name, data in ENCODED:
        value, end = READERS.compile(name)(data, 0)
        assert end == len(data), name
        assert (value, end) == fastavro_read(name, data), name
        assert list(value) == list(fastavro_read(name, data)[0])  # field order too


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(ALL_RECORDS).flatmap(lambda n: st.tuples(st.just(n), record_strategy(n))))
def test_readers_give_fastavros_values_on_generated_records(
    case: tuple[str, dict[str, Any]],
) -> None:
    name, value = case
    data = fastavro_bytes(name, GENERIC.to_avro(name, None)(value))
    assert READERS.compile(name)(b"xx" + data, 2) == (fastavro_read(name, data)[0], len(data) + 2)


def test_readers_take_blocks_with_byte_sizes() -> None:
    """Avro lets a writer give an array block a negative count followed by its byte size."""
    name = "io.outcomes.v1.InjectionRecorded"
    value = next(v for n, v in VALUES if n == name)
    avro_value = GENERIC.to_avro(name, None)(value)
    plain = fastavro_bytes(name, avro_value)
    ids = avro_value["candidate_ids"]
    assert ids, "the sample needs candidate ids"
    block = b"".join(_varint(len(i.encode())) + i.encode() for i in ids)
    plain_block = _varint(len(ids)) + block + b"\x00"
    sized_block = _varint(-len(ids)) + _varint(len(block)) + block + b"\x00"
    assert plain.count(plain_block) == 1
    sized = plain.replace(plain_block, sized_block)
    assert READERS.compile(name)(sized, 0) == (fastavro_read(name, sized)[0], len(sized))


@settings(max_examples=500, deadline=None)
@given(
    st.sampled_from(ENCODED),
    st.sampled_from(["truncate", "flip", "insert"]),
    st.integers(min_value=0),
    st.integers(min_value=0, max_value=255),
)
def test_readers_accept_no_corrupt_bytes_that_fastavro_reads_otherwise(
    case: tuple[str, bytes], how: str, at: int, byte: int
) -> None:
    """Whatever a generated reader returns for damaged bytes, ending at their end,
    fastavro returns too. All else (a refusal, or an end elsewhere) the codec hands to
    fastavro, which reads or rejects the bytes."""
    name, data = case
    at %= len(data)
    if how == "truncate":
        damaged = data[:at]
    elif how == "flip":
        damaged = data[:at] + bytes([byte]) + data[at + 1 :]
    else:
        damaged = data[:at] + bytes([byte]) + data[at:]
    try:
        value, end = READERS.compile(name)(damaged, 0)
    except Exception:  # refused: the codec reads these bytes with fastavro instead
        return
    if end != len(damaged):  # past the end or short of it: the codec refuses it too
        return
    assert (value, end) == fastavro_read(name, damaged)


def test_the_codec_reads_with_the_generated_reader_and_rejects_through_fastavro() -> None:
    codec = Codec()
    name, body = next((n, v) for n, v in VALUES if n.endswith("AccountRevision"))
    record = _catalog().by_name[name]
    framed = codec.encode_output(OutputRecord("account_revision", body["run_id"], "x", body))
    assert record.to_canonical is not None
    assert codec.decode(framed).value == record.to_canonical(fastavro_read(name, framed[10:])[0])
    with pytest.raises(CodecError, match="does not decode"):
        codec.decode(framed[:-3])


def converters(definitions: Any) -> FastConverters:
    return FastConverters(definitions, timestamp_micros, _to_bytes)


@pytest.mark.parametrize("generator", [converters, FastWriters, FastReaders])
def test_an_unsupported_avro_type_is_a_clear_error(generator: Any) -> None:
    definitions = {
        "t.Hash": {"type": "fixed", "name": "Hash", "namespace": "t", "size": 16},
        "t.R": {
            "type": "record",
            "name": "R",
            "namespace": "t",
            "fields": [
                {"name": "h", "type": "Hash"},
            ],
        },
    }
    with pytest.raises(schemas.SchemaFileError, match="does not support Avro type 'fixed'"):
        generator(definitions).compile("t.R")
