"""Output records are not bound by the input limits: the sink must read large ones back."""

from __future__ import annotations

import pytest

from outcomes.common.codec import Codec, CodecError
from outcomes.reducers.limits import Limits
from outcomes.reducers.records import dead_letter


def test_a_dead_letter_of_a_too_large_event_decodes() -> None:
    raw = b"x" * (Limits().max_event_bytes + 10_000)  # the rejected input, carried whole
    letter = dead_letter(
        reason="too_large",
        message="event of 1058576 bytes exceeds 1048576",
        raw=raw,
        origin_topic="outcomes.tool.v1",
        origin_partition=2,
        origin_offset=7,
    )
    codec = Codec()
    data = codec.encode_output(letter)
    assert len(data) > Limits().max_event_bytes
    decoded = codec.decode(data)
    assert decoded.value == dict(letter.body)


def test_an_event_record_over_the_input_limit_is_still_refused() -> None:
    codec = Codec()
    event = {
        "event_id": "e1",
        "run_id": "r1",
        "type": "run.cancelled",
        "occurred_at": "2026-11-30T10:00:00Z",
        "source": "s",
        "reason": None,
    }
    oversize = codec.encode_event(event) + b"\x00" * Limits().max_event_bytes
    with pytest.raises(CodecError) as refused:
        codec.decode(oversize)
    assert refused.value.reason == "too_large"
