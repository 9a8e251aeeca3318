"""Files of events: JSON lines, and Avro object container files (read and written).

A container file's records are read one by one against the current schemas; a record
that breaks the contract becomes a :class:`ContainerFailure` and reading goes on. For
`outcomes replay` they come as :class:`SourceItem`s, like the lines of a JSONL file.
"""

from __future__ import annotations

import io
import json
import mmap
import os
import stat
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any, NamedTuple, cast

import fastavro
import orjson
from fastavro._read import BLOCK_READERS
from fastavro._read_py import BinaryDecoder, read_data

from outcomes import schemas
from outcomes.common.codec.catalog import RecordSchema
from outcomes.common.codec.convert import Json
from outcomes.common.codec.core import Codec
from outcomes.common.errors import UNDECODABLE, UNKNOWN_SCHEMA, CodecError
from outcomes.common.settings import Settings
from outcomes.reducers.errors import InvalidEvent
from outcomes.reducers.limits import Limits
from outcomes.reducers.records import OutputRecord, dead_letter
from outcomes.reducers.timefmt import datetime_micros

# The first bytes of an Avro object container file (the Avro specification).
CONTAINER_MAGIC = b"Obj\x01"


def not_a_container(path: str | Path, first: bytes) -> str:
    """The one line for a file read as Avro that does not start with the container
    magic (`first`: its first bytes). Without this check fastavro fails on whatever the
    first bytes happen to mean ("read length must be non-negative" for JSON text)."""
    if not first:
        found = "it is empty"
    elif first[:1] in (b"{", b"["):
        found = "it starts with JSON text, not Obj\\x01"
    else:
        found = f"it starts with {first[: len(CONTAINER_MAGIC)]!r}, not Obj\\x01"
    message = f"{path}: not an Avro container file ({found})"
    if Path(path).suffix == ".avro":
        message += "; a file named *.avro is read as Avro: name a JSONL file *.jsonl"
    return message


class SourceItem(NamedTuple):
    """One input item: where it came from, its raw bytes, and its decoded object if any."""

    origin_file: str
    origin_line: int
    raw: bytes
    value: Any = None
    error: InvalidEvent | None = None


def parse_json_event(line: bytes | str) -> Any:
    """One JSONL line -> the JSON value; CodecError(`undecodable`) if it is not JSON."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise CodecError(UNDECODABLE, f"not JSON: {exc}") from None


@dataclass(frozen=True, slots=True)
class ContainerFailure:
    """A record of a container file that could not be read (0-based `index`)."""

    index: int
    reason: str
    message: str

    def dead_letter(self, path: str | Path) -> OutputRecord:
        """As a dead letter whose origin is `file:<path>:<index + 1>`."""
        return dead_letter(
            reason=self.reason,
            message=self.message,
            raw=b"",
            origin_file=str(path),
            origin_line=self.index + 1,
        )


def write_container(
    path: str | Path,
    events: Iterable[Mapping[str, Any]],
    *,
    codec: Codec | None = None,
    compression: str = "deflate",
    block_bytes: int = 16000,
) -> int:
    """Write canonical JSON events to an Avro container file (union of event records).

    Raises CodecError for an invalid event (nothing half-valid is written for it).
    A block is written once it holds about `block_bytes` bytes. Returns the number of
    events written.
    """
    codec = codec or Codec()
    catalog = codec._catalog
    count = 0

    def records() -> Iterator[tuple[str, Json]]:
        nonlocal count
        for event in events:
            record = codec._event_schema(event)
            yield record.name, codec._to_avro(record, event)
            count += 1

    with open(path, "wb") as out:
        fastavro.writer(
            out,
            fastavro.parse_schema(catalog.container_schema),
            records(),
            codec=compression,
            sync_interval=block_bytes,
        )
    return count


def iter_container_events(
    path: str | Path, *, codec: Codec | None = None
) -> Iterator[Json | ContainerFailure]:
    """Canonical JSON events from an Avro container file, in file order.

    A record that breaks the contract yields a ContainerFailure and reading goes on. A
    block that cannot be read (its framing, its compression or a record in it is
    corrupt) yields one `undecodable` ContainerFailure naming the bytes skipped, and
    reading resumes after the next sync marker. A block whose records disagree with the
    count it declares is read to its end and reported (one failure): a changed count
    byte neither hides records nor makes up any. A corrupt header, or a file without
    the container magic (JSON lines named `*.avro`, an empty file, :func:`not_a_container`),
    is one failure. The file's writer schema (a union of event records, or one event
    record; older or newer versions) is resolved against the current schemas.
    """
    codec = codec or Codec()
    catalog = codec._catalog
    with open(path, "rb") as stream:
        first = stream.read(len(CONTAINER_MAGIC))
        if first != CONTAINER_MAGIC:
            yield ContainerFailure(0, UNDECODABLE, not_a_container(path, first))
            return
        if not stat.S_ISREG(os.fstat(stream.fileno()).st_mode):
            message = f"{path}: an Avro container file is read from a regular file, not a pipe"
            yield ContainerFailure(0, UNDECODABLE, message)
            return
        with mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as data:
            try:
                header = fastavro.schemaless_reader(cast(IO[bytes], data), _HEADER_SCHEMA)
                meta = cast(dict[str, bytes], cast(dict[str, Any], header)["meta"])
                sync = cast(bytes, cast(dict[str, Any], header)["sync"])
                writer_json = json.loads(meta["avro.schema"])
                compression = meta.get("avro.codec", b"null").decode()
            except Exception as exc:  # any corrupt header is one failure
                message = f"{path}: corrupt container header: {type(exc).__name__}: {exc}"
                yield ContainerFailure(0, UNDECODABLE, message)
                return
            if isinstance(writer_json, dict):
                single = schemas.full_name(writer_json["name"], writer_json.get("namespace"))
                target = catalog.by_name.get(single)
                if target is None or not target.is_event:
                    yield ContainerFailure(0, UNKNOWN_SCHEMA, f"{path}: {single} is not an event")
                    return
                reader_json: Any = target.schema
            else:
                single = None
                reader_json = catalog.container_schema
            decoder = _Decoder(writer_json, reader_json)
            blocks = _Blocks(str(path), data, data.tell(), sync, compression)
            index = 0
            for block in blocks:
                if isinstance(block, ContainerFailure):
                    yield ContainerFailure(index, block.reason, block.message)
                    continue
                start, count, payload = block
                rows = decoder.rows(payload, count)
                for row in rows:
                    if isinstance(row, str):
                        where = f"{path}: block at byte {start}"
                        yield ContainerFailure(index, UNDECODABLE, f"{where}: {row}")
                        continue
                    if single is None:
                        name, value = cast(tuple[str, Json], row)
                    else:
                        name, value = single, cast(Json, row)
                    yield _container_event(codec, catalog.by_name[name], value, index)
                    index += 1


# The header of an object container file (the Avro specification, "Object Container Files").
_HEADER_SCHEMA = fastavro.parse_schema(
    {
        "type": "record",
        "name": "org.apache.avro.file.Header",
        "fields": [
            {"name": "magic", "type": {"type": "fixed", "name": "Magic", "size": 4}},
            {"name": "meta", "type": {"type": "map", "values": "bytes"}},
            {"name": "sync", "type": {"type": "fixed", "name": "Sync", "size": 16}},
        ],
    }
)
_SYNC_SIZE = 16
# The largest decompressed block read (writers make blocks of kilobytes: fastavro's
# default is 16,000 bytes); a larger one is skipped like a corrupt block.
MAX_BLOCK_BYTES = 64 * 1024 * 1024


class _Corrupt(Exception):
    """A block that cannot be read (internal: becomes a skipped byte range)."""


def _long(data: mmap.mmap, position: int) -> tuple[int, int]:
    """The zig-zag varint long at `position`, and the position after it."""
    shift = result = 0
    while True:
        if position >= len(data) or shift > 63:
            raise _Corrupt("block header cut off or not a number")
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), position
        shift += 7


def _encode_long(value: int) -> bytes:
    value = (value << 1) ^ (value >> 63)
    out = bytearray()
    while value & ~0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _decompress(compression: str, raw: bytes) -> bytes:
    if compression == "null":
        return raw
    if compression == "deflate":
        inflater = zlib.decompressobj(-15)
        data = inflater.decompress(raw, MAX_BLOCK_BYTES + 1)
        if len(data) > MAX_BLOCK_BYTES:  # a block that inflates without bound
            raise _Corrupt(f"block inflates past {MAX_BLOCK_BYTES} bytes")
        return data
    reader = BLOCK_READERS.get(compression)
    if reader is None:
        raise _Corrupt(f"unknown compression {compression!r}")
    # fastavro's block readers read the length-prefixed block themselves.
    return cast(bytes, reader(io.BytesIO(_encode_long(len(raw)) + raw)).getvalue())


class _Blocks:
    """The blocks of a container file from `start`: (offset, declared count, decompressed
    bytes) for each readable one, a ContainerFailure naming the bytes skipped for each
    that is not (reading resumes after the next sync marker)."""

    def __init__(self, path: str, data: mmap.mmap, start: int, sync: bytes, compression: str):
        self.path, self.data, self.start = path, data, start
        self.sync, self.compression = sync, compression

    def __iter__(self) -> Iterator[tuple[int, int, bytes] | ContainerFailure]:
        data, end, position = self.data, len(self.data), self.start
        while position < end:
            try:
                count, after = _long(data, position)
                size, after = _long(data, after)
                if count < 0 or size < 0:
                    raise _Corrupt(f"negative block count or size ({count}, {size})")
                if after + size + _SYNC_SIZE > end:
                    raise _Corrupt(f"block of {size} bytes runs past the end of the file")
                if data[after + size : after + size + _SYNC_SIZE] != self.sync:
                    raise _Corrupt("no sync marker where the block's size says it ends")
                payload = _decompress(self.compression, data[after : after + size])
            except (_Corrupt, zlib.error, ValueError, EOFError, OSError, LookupError) as exc:
                found = data.find(self.sync, position)
                resume = end if found < 0 else found + _SYNC_SIZE
                yield ContainerFailure(0, UNDECODABLE, self._skipped(position, resume, exc))
                position = resume
                continue
            yield position, count, payload
            position = after + size + _SYNC_SIZE

    def _skipped(self, start: int, resume: int, exc: BaseException) -> str:
        how = "the end of the file" if resume >= len(self.data) else "the next sync marker"
        return (
            f"{self.path}: bytes {start}..{resume - 1} skipped (block at byte {start}: {exc}); "
            f"reading resumed at {how}"
        )


class _Decoder:
    """Reads single records of the file's writer schema, resolved against the reader
    schema once (fastavro's `schemaless_reader` resolves them again on every call)."""

    def __init__(self, writer: Any, reader: Any) -> None:
        self.named: dict[str, dict[str, Any]] = {"writer": {}, "reader": {}}
        self.writer = fastavro.parse_schema(writer, self.named["writer"])
        same = writer == reader
        self.reader = None if same else fastavro.parse_schema(reader, self.named["reader"])
        self.options = {"return_record_name": True, "handle_unicode_errors": "strict"}

    def rows(self, payload: bytes, count: int) -> Iterator[Any]:
        """The records of one block, then a string for each problem: a record that cannot
        be decoded (the rest of the block is skipped), or a count that disagrees with the
        records the block holds (all of them are read)."""
        stream = io.BytesIO(payload)
        decoder = BinaryDecoder(stream)
        size = len(payload)
        decoded = 0
        while decoded < count or stream.tell() < size:
            before = stream.tell()
            if before >= size:
                yield f"declares {count} records but holds {decoded}"
                return
            try:
                row = read_data(decoder, self.writer, self.named, self.reader, self.options)
            except Exception as exc:  # any undecodable record is reported
                yield (
                    f"record {decoded + 1} of {count} cannot be decoded ({type(exc).__name__}: "
                    f"{exc}); bytes {before}..{size - 1} of its data skipped"
                )
                return
            yield row
            decoded += 1
        if decoded != count:
            yield f"declares {count} records but holds {decoded} (all read)"


def _container_event(codec: Codec, record: RecordSchema, value: Json, index: int) -> Any:
    try:
        codec._check_limits(value, record, None)
        codec._check_event(record, _with_micros(value))
        return record.to_canonical(value) if record.to_canonical is not None else value
    except CodecError as exc:
        return ContainerFailure(index, exc.reason, exc.message)


def _with_micros(value: Json) -> Json:
    occurred = value["occurred_at"]
    if isinstance(occurred, datetime):
        return {**value, "occurred_at": datetime_micros(occurred)}
    return value


def iter_container_items(path: str | Path, limits: Limits | None = None) -> Iterator[SourceItem]:
    """:func:`iter_container_events` as `outcomes replay` source items.

    `origin_line` is the 1-based record index; `raw` is the record as canonical JSON
    (empty for a record that could not be read), so a dead letter still shows it.
    """
    codec = Codec(Settings(limits=limits or Limits()))
    name = str(path)
    for index, item in enumerate(iter_container_events(path, codec=codec)):
        if isinstance(item, ContainerFailure):
            error = CodecError(item.reason, item.message)
            yield SourceItem(name, item.index + 1, b"", error=error)
        else:
            yield SourceItem(name, index + 1, orjson.dumps(item), value=item)
