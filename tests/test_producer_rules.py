"""Producer SDK (issue 24): what the pipeline would dead-letter is refused at the call,
always with CodecError and before anything is queued; and the SDK's rules are ingest's
(`reducers/validate.py`), so what it accepts the pipeline accepts and nothing more is
refused. No broker: the producer points at an unreachable address and
`flush(timeout=0)` raises if anything was queued."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from outcomes.common.codec import Codec
from outcomes.common.errors import CodecError, DeliveryError
from outcomes.common.settings import Settings
from outcomes.reducers.events import Event
from outcomes.reducers.records import OutputRecord
from outcomes.streams.ingest import ingest_record
from outcomes.streams.sdk.producer import OutcomesProducer, encode_checked
from tests.test_validate_hostile import hostile_events

UNREACHABLE = "127.0.0.1:1"


@pytest.fixture(scope="module")
def producer() -> Iterator[OutcomesProducer]:
    with OutcomesProducer(source="test", bootstrap=UNREACHABLE) as events:
        yield events


def receipt(**changes: Any) -> dict[str, Any]:
    call: dict[str, Any] = {
        "run_id": "run-1",
        "check_id": "c1",
        "label": "unit",
        "scope": "suite",
        "result": "pass",
        "tests_executed": 3,
        "candidate_snapshot": "s1",
        "environment": "ci",
        "command": "pytest -q",
    }
    return call | changes


CASES = [
    ({"run_id": ""}, "run_id: must be 1..128 characters, got 0"),
    ({"run_id": "r" * 129}, "run_id: must be 1..128 characters, got 129"),
    ({"tests_executed": -1}, "tests_executed: -1 is outside 0..2147483647"),
    ({"run_id": "run\x1b[2J"}, "run_id: control character U+001B at index 3"),
    ({"run_id": "run\nstatus: complete"}, "run_id: control character U+000A at index 3"),
    ({"run_id": "run\u202ex"}, "run_id: format character U+202E at index 3"),
    ({"run_id": "run\ud800"}, "run_id: lone surrogate U+D800 at index 3"),
    ({"check_id": "c\x00"}, "check_id: control character U+0000 at index 1"),
    ({"label": "unit\u2066"}, "label: format character U+2066 at index 4"),
    ({"command": "pytest \udfff"}, "command: lone surrogate U+DFFF at index 7 (not Unicode text)"),
    ({"event_id": "e\u2028"}, "event_id: line separator U+2028 at index 1"),
    ({"source": "w\x7f"}, "source: control character U+007F at index 1"),
]


@pytest.mark.parametrize(("changes", "message"), CASES, ids=[m.split(":")[0] for _, m in CASES])
def test_what_ingest_would_refuse_is_a_codec_error_at_the_call(
    producer: OutcomesProducer, changes: dict[str, Any], message: str
) -> None:
    with pytest.raises(CodecError) as err:
        producer.verification_receipt(**receipt(**changes))
    assert err.value.reason == "schema_violation"
    assert str(err.value).startswith(f"verification.receipt: {message}"), str(err.value)
    producer.flush(timeout=0)  # raises DeliveryError if anything was queued


def test_goal_revision_zero_is_refused(producer: OutcomesProducer) -> None:
    with pytest.raises(CodecError, match=r"^goal\.revised: goal_revision: 0 is outside 1\.\."):
        producer.goal_revised(run_id="run-1", goal_revision=0, authored_by="user")
    producer.flush(timeout=0)


def test_a_lone_surrogate_in_narrative_text_is_a_codec_error_not_unicode_encode_error(
    producer: OutcomesProducer,
) -> None:
    with pytest.raises(CodecError) as err:
        producer.narrative_submitted(
            run_id="run-1", narrative_id="n1", channel="final", text="All done \ud83d."
        )
    assert "text: lone surrogate U+D83D at index 9" in str(err.value)
    producer.flush(timeout=0)


@pytest.mark.parametrize(
    ("field", "number"),
    [("tests_executed", 10**5000), ("tests_executed", -(10**400))],
    ids=["5001 digits", "-10**400"],
)
def test_an_integer_no_wire_format_holds_is_a_codec_error(
    producer: OutcomesProducer, field: str, number: int
) -> None:
    with pytest.raises(CodecError, match=r"^verification\.receipt: "):
        producer.verification_receipt(**receipt(**{field: number}))
    producer.flush(timeout=0)


def test_a_timestamp_past_year_9999_is_a_codec_error(producer: OutcomesProducer) -> None:
    with pytest.raises(CodecError, match="occurred_at"):
        producer.run_started(run_id="r", agent="a", requested_by="u", occurred_at=2**63 - 1)
    producer.flush(timeout=0)


def test_printable_unicode_identifiers_are_accepted() -> None:
    events = OutcomesProducer(source="test", bootstrap=UNREACHABLE)
    sent = events.verification_receipt(**receipt(run_id="ラン-1 café", label="unit ✓"))
    with pytest.raises(DeliveryError) as err:
        events.close(timeout=0)  # it was queued: the unreachable broker never got it
    assert err.value.event_ids == (sent,)


# -- one rule set: the SDK refuses exactly what ingest refuses --------------------------

CODEC = Codec()
SETTINGS = Settings.load()


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(hostile_events(wrong=False), min_size=1, max_size=4))
def test_the_sdk_accepts_exactly_what_ingest_accepts(values: list[dict[str, Any]]) -> None:
    for value in values:
        try:
            data = encode_checked(CODEC, value)
        except CodecError:
            sdk_accepts = False
        else:
            sdk_accepts = True
            ingested = ingest_record(CODEC, SETTINGS, data, "t", 0, 0)
            assert isinstance(ingested, Event), ingested
        # What the codec alone encodes, ingest judges: the SDK refused it iff ingest does.
        try:
            raw = CODEC.encode_event(value)
        # The codec alone, without the SDK's checks, refuses what does not fit the
        # Avro contract (CodecError) and cannot write a lone surrogate (UnicodeError):
        # nothing it could write, so nothing for ingest to judge.
        except (CodecError, UnicodeError):
            continue
        verdict = ingest_record(CODEC, SETTINGS, raw, "t", 0, 0)
        assert sdk_accepts == (not isinstance(verdict, OutputRecord)), (value, verdict)


@pytest.mark.parametrize("run_id", ["run\x1b[31m", "run\nx", "run\u202ex", "run\u200bx"])
def test_ingest_dead_letters_an_identifier_the_sdk_would_refuse(run_id: str) -> None:
    """A producer that is not the SDK (the codec alone, another language's client)
    writes the record; ingest refuses it with a dead letter naming the character, and
    the next record, valid, goes through."""
    event = {
        "event_id": "e1",
        "run_id": run_id,
        "type": "run.started",
        "occurred_at": "2026-11-30T10:00:00Z",
        "source": "other-client",
        "agent": "a",
        "requested_by": "u",
    }
    letter = ingest_record(
        CODEC, SETTINGS, CODEC.encode_event(event), "outcomes.lifecycle.v1", 0, 7
    )
    assert isinstance(letter, OutputRecord) and letter.kind == "dead_letter"
    assert letter.body["reason"] == "schema_violation"
    assert letter.body["message"].startswith("run_id: ")
    assert f"U+{ord(run_id[3]):04X} at index 3" in letter.body["message"]
    assert letter.body["origin_offset"] == 7
    good = ingest_record(
        CODEC, SETTINGS, CODEC.encode_event({**event, "run_id": "run-ok"}), "t", 0, 8
    )
    assert isinstance(good, Event) and good.run_id == "run-ok"
