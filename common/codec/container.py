"""Files of events: JSON lines, and Avro object container files (read and written).

A container file's records are read one by one against the current schemas; a record
that breaks the contract becomes a :class:`ContainerFailure` and reading goes on. For
`outcomes replay` they come as :class:`SourceItem`s, like the lines of a JSONL file.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple, cast

import fastavro
import orjson

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
) -> int:
    """Write canonical JSON events to an Avro container file (union of event records).

    Raises CodecError for an invalid event (nothing half-valid is written for it).
    Returns the number of events written.
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
            out, fastavro.parse_schema(catalog.container_schema), records(), codec=compression
        )
    return count


def iter_container_events(
    path: str | Path, *, codec: Codec | None = None
) -> Iterator[Json | ContainerFailure]:
    """Canonical JSON events from an Avro container file, in file order.

    A record that breaks the contract yields a ContainerFailure and reading goes on; a
    corrupt file yields one ContainerFailure at the position where reading stopped, and
    a file without the container magic (JSON lines named `*.avro`, an empty file) one
    `undecodable` failure saying so (:func:`not_a_container`).
    The file's writer schema (a union of event records, or one event record; older or
    newer versions) is resolved against the current schemas.
    """
    codec = codec or Codec()
    catalog = codec._catalog
    index = 0
    try:
        with open(path, "rb") as stream:
            first = stream.read(len(CONTAINER_MAGIC))
            if first != CONTAINER_MAGIC:
                yield ContainerFailure(0, UNDECODABLE, not_a_container(path, first))
                return
            stream.seek(0)
            header = fastavro.reader(stream)
            writer_json = json.loads(header.metadata["avro.schema"])
            if isinstance(writer_json, dict):
                single = schemas.full_name(writer_json["name"], writer_json.get("namespace"))
                target = catalog.by_name.get(single)
                if target is None or not target.is_event:
                    yield ContainerFailure(0, UNKNOWN_SCHEMA, f"{path}: {single} is not an event")
                    return
                reader_schema = target.schema
            else:
                single = None
                reader_schema = catalog.container_schema
            stream.seek(0)
            rows = fastavro.reader(
                stream, reader_schema=fastavro.parse_schema(reader_schema), return_record_name=True
            )
            for row in rows:
                if single is None:
                    name, value = cast(tuple[str, Json], row)
                else:
                    name, value = single, cast(Json, row)
                yield _container_event(codec, catalog.by_name[name], value, index)
                index += 1
    except OSError:
        raise
    except Exception as exc:  # a corrupt block: report where, then stop (cannot resync)
        yield ContainerFailure(
            index, UNDECODABLE, f"{path}: record {index + 1}: {type(exc).__name__}: {exc}"
        )


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
