"""Producer SDK: a wrong-typed argument raises CodecError at the call, naming event and field.

The fields and their types come from the event dataclasses (reducers/events.py), the one
description both the SDK's methods and the schemas follow; test_producer.py checks the
methods' arguments against the schemas. No broker: the producer points at an unreachable
address, and `flush(timeout=0)` raises if anything was queued.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Iterator
from dataclasses import fields, is_dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from outcomes.common.errors import CodecError, DeliveryError
from outcomes.reducers.events import EVENT_CLASSES, Event
from outcomes.streams.sdk.producer import OutcomesProducer

UNREACHABLE = "127.0.0.1:1"
# Envelope fields the SDK fills itself (`type`) or takes as call options (None: default).
OPTIONS = frozenset({"event_id", "occurred_at", "source"})


def method_name(event_type: str) -> str:
    return event_type.replace(".", "_")


def hints(cls: type) -> dict[str, Any]:
    found = typing.get_type_hints(cls)
    return {f.name: found[f.name] for f in fields(cls)}


def optional_member(hint: Any) -> Any | None:
    """`X` for `X | None`, else None."""
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        return next(a for a in typing.get_args(hint) if a is not type(None))
    return None


def valid(hint: Any) -> Any:
    """A valid value for an annotation (optional fields: None)."""
    if optional_member(hint) is not None:
        return None
    if typing.get_origin(hint) is typing.Literal:
        return typing.get_args(hint)[0]
    if typing.get_origin(hint) is tuple:
        return [valid(typing.get_args(hint)[0])]
    if is_dataclass(hint):
        return {name: valid(h) for name, h in hints(hint).items()}  # type: ignore[arg-type]
    return {str: "x", int: 1, float: 0.5, bool: True}[hint]


def valid_call(cls: type[Event]) -> dict[str, Any]:
    """Keyword arguments for the event type's typed method: every field valid."""
    return {name: valid(hint) for name, hint in hints(cls).items() if name not in OPTIONS}


SCALARS: dict[Any, st.SearchStrategy[Any]] = {
    str: st.text(max_size=8),
    int: st.integers(-5, 5),
    float: st.floats(allow_nan=False, allow_infinity=False),
    bool: st.booleans(),
    bytes: st.binary(max_size=4),
}
ANY_SCALAR = st.one_of(*SCALARS.values(), st.none())
CONTAINERS = st.one_of(
    st.lists(st.text(max_size=4), max_size=2),
    st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=2),
)


def wrong(hint: Any, name: str) -> st.SearchStrategy[Any]:
    """Values whose type is wrong for the annotation (None only where it is required)."""
    inner = optional_member(hint)
    if inner is not None or name in OPTIONS:  # for an option, None asks for the default
        return _wrong(inner or hint, name).filter(lambda v: v is not None)
    return _wrong(hint, name)


def _wrong(hint: Any, name: str) -> st.SearchStrategy[Any]:
    if name == "occurred_at":  # the SDK takes a datetime, an RFC 3339 str or int micros
        return st.one_of(SCALARS[float], SCALARS[bool], SCALARS[bytes], CONTAINERS)
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        symbols = typing.get_args(hint)
        return st.one_of(
            st.text(max_size=8).filter(lambda s: s not in symbols),
            SCALARS[int],
            SCALARS[bytes],
            st.none(),
            st.lists(st.sampled_from(symbols), min_size=1, max_size=2),  # a list of symbols
        )
    if origin is tuple:
        item = typing.get_args(hint)[0]
        record = valid(item)
        return st.one_of(
            st.text(max_size=8),  # a str, where a list is expected
            st.just(record),  # one record (or a dict), where a list of them is
            st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=2),
            ANY_SCALAR.filter(lambda v: not isinstance(v, str)),
            st.lists(wrong(item, name), min_size=1, max_size=3),  # a list of wrong items
            st.lists(wrong(item, name), min_size=1, max_size=2).map(tuple),
            wrong(item, name).map(lambda bad: [record, bad]),  # a wrong item after a good one
        )
    if is_dataclass(hint):
        members = hints(hint)  # type: ignore[arg-type]
        good = valid(hint)
        one_field_wrong = st.sampled_from(sorted(members)).flatmap(
            lambda key: wrong(members[key], key).map(lambda bad: {**good, key: bad})
        )
        return st.one_of(
            one_field_wrong,
            st.text(max_size=8),  # e.g. required_checks=["unit"]
            st.lists(st.text(max_size=4), max_size=2),
            st.tuples(st.text(max_size=4), st.text(max_size=4)).map(lambda pair: [pair]),
            ANY_SCALAR.filter(lambda v: not isinstance(v, str)),
        )
    others = [s for kind, s in SCALARS.items() if kind is not hint]
    if hint is float:  # an int is a valid number
        others.remove(SCALARS[int])
    return st.one_of(*others, st.none(), CONTAINERS)


CASES = [
    (event_type, name, hint)
    for event_type, cls in EVENT_CLASSES.items()
    for name, hint in hints(cls).items()
]


@pytest.fixture(scope="module")
def producer() -> Iterator[OutcomesProducer]:
    with OutcomesProducer(source="test", bootstrap=UNREACHABLE) as events:
        yield events


def test_every_sdk_method_takes_the_event_fields() -> None:
    for event_type, cls in EVENT_CLASSES.items():
        method = getattr(OutcomesProducer, method_name(event_type))
        assert set(valid_call(cls)) <= set(typing.get_type_hints(method)), event_type


def test_valid_calls_are_queued_lists_as_lists_or_tuples() -> None:
    """The baseline the property test breaks one field of: every method accepts it."""
    events = OutcomesProducer(source="test", bootstrap=UNREACHABLE)
    sent = [getattr(events, method_name(t))(**valid_call(cls)) for t, cls in EVENT_CLASSES.items()]
    sent.append(
        events.goal_revised(
            run_id="r",
            goal_revision=1,
            authored_by="user",
            deliverables=("a.md",),
            required_checks=({"label": "unit", "scope": "suite"},),
        )
    )
    with pytest.raises(DeliveryError) as err:
        events.close(timeout=0)  # nothing reaches the unreachable broker: all are listed
    assert set(err.value.event_ids) == set(sent) and len(sent) == len(EVENT_CLASSES) + 1


@pytest.mark.parametrize(
    ("event_type", "name", "hint"), CASES, ids=[f"{t}.{n}" for t, n, _ in CASES]
)
@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_a_wrong_type_in_any_field_raises_codec_error_before_producing(
    producer: OutcomesProducer, event_type: str, name: str, hint: Any, data: st.DataObject
) -> None:
    bad = data.draw(wrong(hint, name), label=name)
    call = valid_call(EVENT_CLASSES[event_type]) | {name: bad}
    method = method_name(event_type)
    with pytest.raises(CodecError) as err:
        getattr(producer, method)(**call)
    message = str(err.value)
    assert err.value.reason == "schema_violation", message
    assert re.match(rf"{re.escape(event_type)}: {name}\b", message), message
    assert "expected" in message and "got" in message, message
    assert f"(OutcomesProducer.{method}() takes {name}: " in message, message
    producer.flush(timeout=0)  # raises DeliveryError if anything was queued


# -- the cases seen in use (before: accepted and split into characters, or a ValueError) ----


def test_a_str_for_a_list_of_str_is_refused_not_split_into_characters(
    producer: OutcomesProducer,
) -> None:
    with pytest.raises(CodecError) as err:
        producer.goal_revised(
            run_id="r",
            goal_revision=1,
            authored_by="user",
            deliverables="report.md",
        )
    assert str(err.value) == (
        "goal.revised: deliverables: expected a list, got str "
        "(OutcomesProducer.goal_revised() takes deliverables: Sequence[str])"
    )
    producer.flush(timeout=0)


def test_a_str_for_a_record_is_a_codec_error_naming_the_item(producer: OutcomesProducer) -> None:
    with pytest.raises(CodecError) as err:
        producer.goal_revised(
            run_id="r",
            goal_revision=1,
            authored_by="user",
            required_checks=["unit"],  # type: ignore[list-item]
        )
    assert str(err.value) == (
        "goal.revised: required_checks[0]: expected an object (RequiredCheck), got str "
        "(OutcomesProducer.goal_revised() takes required_checks: Sequence[RequiredCheck])"
    )
    producer.flush(timeout=0)


def test_a_dict_for_a_list_of_records_is_a_codec_error(producer: OutcomesProducer) -> None:
    artifact = {"path": "report.md", "change": "added", "verification_sensitive": True}
    with pytest.raises(CodecError) as err:
        producer.workspace_snapshot(run_id="r", snapshot_id="s", sealed=True, artifacts=artifact)  # type: ignore[arg-type]
    assert str(err.value) == (
        "workspace.snapshot: artifacts: expected a list, got dict "
        "(OutcomesProducer.workspace_snapshot() takes artifacts: Sequence[Artifact])"
    )
    producer.flush(timeout=0)


def test_a_non_callable_on_delivery_is_refused_at_the_call(producer: OutcomesProducer) -> None:
    with pytest.raises(TypeError, match="on_delivery must be callable, got str"):
        producer.run_cancelled(run_id="r", on_delivery="print")  # type: ignore[arg-type]
    producer.flush(timeout=0)
