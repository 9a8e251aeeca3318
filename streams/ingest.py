"""The ingest stage for one input record, the same on both engines: decode (Avro
single-object or Schema Registry framing), validate against the contract, and hand back
the event to forward to the run log, or the dead letter that says why not.

The engines forward the record's original bytes, keyed by the event's `run_id`
(docs/stream.md); the fold stage is `streams/runfold.py`.
"""

from __future__ import annotations

from outcomes.common.codec import Codec
from outcomes.common.settings import Settings
from outcomes.reducers.errors import InvalidEvent
from outcomes.reducers.events import Event
from outcomes.reducers.records import OutputRecord, dead_letter
from outcomes.reducers.validate import parse_event


def ingest_record(
    codec: Codec, settings: Settings, raw: bytes | None, topic: str, partition: int, offset: int
) -> Event | OutputRecord:
    """Stage 1 for one input record: the validated event, or a dead letter naming where
    the record was read and why it was refused."""
    decoded = codec.decode_or_dead_letter(raw or b"", topic, partition, offset)
    if isinstance(decoded, OutputRecord):
        return decoded
    try:
        return parse_event(decoded, settings.limits)
    except InvalidEvent as exc:
        return dead_letter(
            reason=exc.reason,
            message=exc.message,
            raw=bytes(raw or b""),
            origin_topic=topic,
            origin_partition=partition,
            origin_offset=offset,
            run_id=decoded.get("run_id"),
            event_id=decoded.get("event_id"),
        )
