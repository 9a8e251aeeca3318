"""Hostile values against the event parser (reducers/validate.py): whatever it accepts,
the fold applies; whatever it refuses is one `InvalidEvent` naming the field.

Issue 24: an enum given as a list or an object raised TypeError inside the parser, and
an integer `occurred_at` out of range passed it and raised OverflowError in the fold.
The fuzz below derives its events from the event classes' own annotations, so every
field of every event type gets values of the wrong type and values out of range.
"""

from __future__ import annotations

import dataclasses
import types
import typing
import unicodedata
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from outcomes.reducers.engine import Engine, fold
from outcomes.reducers.errors import InvalidEvent
from outcomes.reducers.events import EVENT_CLASSES
from outcomes.reducers.timefmt import MAX_MICROS, MIN_MICROS
from outcomes.reducers.validate import (
    TEXT_FIELDS,
    event_parser,
    identifier_problem,
    parse_event,
)

RUN = "run-hostile"
AT = "2026-11-30T10:00:00Z"


def review(**fields: Any) -> dict[str, Any]:
    return {
        "event_id": "e1",
        "run_id": RUN,
        "type": "review.recorded",
        "occurred_at": AT,
        "source": "w",
        "state": "pass",
        **fields,
    }


def refused(value: Any) -> InvalidEvent:
    """The error both parsers (the one-off and the loop's) give for `value`, which must
    be the same."""
    with pytest.raises(InvalidEvent) as one:
        parse_event(value)
    with pytest.raises(InvalidEvent) as loop:
        event_parser()(value)
    assert (one.value.reason, one.value.message) == (loop.value.reason, loop.value.message)
    return one.value


@pytest.mark.parametrize("value", [["pass"], {"pass": 1}, [], {}, 1, True, None, 1.5])
def test_an_enum_of_the_wrong_type_is_a_schema_violation(value: Any) -> None:
    error = refused(review(state=value))
    assert error.reason == "schema_violation"
    assert error.message.startswith("state: ")
    assert "is not one of pass, fail, indeterminate, revise" in error.message


def test_an_enum_inside_a_list_of_records_names_its_item() -> None:
    event = {
        "event_id": "e1",
        "run_id": RUN,
        "type": "goal.revised",
        "occurred_at": AT,
        "source": "w",
        "goal_revision": 1,
        "authored_by": "user",
        "deliverables": [],
        "required_checks": [{"label": "unit", "scope": "suite"}, {"label": "x", "scope": [1]}],
        "requested_effects": [],
        "requested_actions": [],
        "target_revision": None,
    }
    error = refused(event)
    assert error.message.startswith("required_checks[1].scope: [1] is not one of")


@pytest.mark.parametrize(
    "micros", [2**63 - 1, -(10**17), MAX_MICROS + 1, MIN_MICROS - 1, 2**200, -(2**64)]
)
def test_an_integer_timestamp_out_of_range_is_refused(micros: int) -> None:
    error = refused(review(occurred_at=micros))
    assert error.reason == "schema_violation"
    shown = (
        str(micros) if micros.bit_length() <= 128 else f"an integer of {micros.bit_length()} bits"
    )
    assert error.message == f"occurred_at: {shown} microseconds is outside years 1..9999"


@pytest.mark.parametrize("number", [10**400, -(10**309)])
def test_an_integer_too_large_for_a_double_is_refused(number: int) -> None:
    candidate = {
        "candidate_id": "k1",
        "source_type": "journal",
        "source_event_id": "e0",
        "rank": 1,
        "score": number,
        "eligible": True,
        "decision": "selected",
        "withhold_reason": None,
    }
    event = {
        **{k: v for k, v in review().items() if k not in ("type", "state")},
        "type": "retrieval.evaluated",
        "retrieval_id": "r1",
        "job_id": "j1",
        "query_hash": "q",
        "algorithm": "bm25",
        "config_hash": "c",
        "candidates": [candidate],
    }
    error = refused(event)
    assert error.message.startswith("candidates[0].score: ")
    assert error.message.endswith("is out of range for a double")


@pytest.mark.parametrize("micros", [MIN_MICROS, MAX_MICROS, 0])
def test_an_integer_timestamp_in_range_folds(micros: int) -> None:
    event = parse_event(review(occurred_at=micros))
    state = Engine().state(RUN)
    fold(state, event)  # the bounds themselves format and compare
    assert event.occurred_at == micros


HOSTILE_CHARACTERS = {
    "NUL": "\x00",
    "ESC": "\x1b[31m",
    "newline": "\n",
    "carriage return": "\r",
    "DEL": "\x7f",
    "C1 CSI": "\x9b",
    "right-to-left override": "\u202e",
    "left-to-right isolate": "\u2066",
    "zero-width space": "\u200b",
    "line separator": "\u2028",
    "byte order mark": "\ufeff",
    "lone surrogate": "\ud800",
}


@pytest.mark.parametrize("name", sorted(HOSTILE_CHARACTERS))
@pytest.mark.parametrize("field", ["run_id", "event_id", "source"])
def test_an_envelope_identifier_with_a_hostile_character_is_refused(name: str, field: str) -> None:
    bad = f"run{HOSTILE_CHARACTERS[name]}x"
    error = refused(review(**{field: bad}))
    assert error.reason == "schema_violation"
    point = ord(HOSTILE_CHARACTERS[name][0])
    assert error.message.startswith(f"{field}: ")
    assert f"U+{point:04X} at index 3" in error.message
    assert "\n" not in error.message and "\x1b" not in error.message


@pytest.mark.parametrize(
    ("event_type", "fields", "where"),
    [
        ("tool.started", {"action_id": "a\x1b1", "tool": "t"}, "action_id"),
        ("tool.started", {"action_id": "a1", "tool": "t\u202e"}, "tool"),
        (
            "injection.recorded",
            {
                "injection_id": "j1",
                "model_call_id": "c1",
                "retrieval_id": "r1",
                "candidate_ids": ["k1", "k\n2"],
                "block_hash": "h",
                "block_bytes": 1,
                "location": "system",
                "range_start": 0,
                "range_end": 1,
                "confirmed": True,
                "removed_before_inference": False,
            },
            "candidate_ids[1]",
        ),
        (
            "workspace.snapshot",
            {
                "snapshot_id": "s1",
                "base_revision": None,
                "sealed": True,
                "artifacts": [
                    {
                        "path": "a.py",
                        "change": "added",
                        "digest": "d\u2066",
                        "renamed_from": None,
                        "verification_sensitive": False,
                    }
                ],
            },
            "artifacts[0].digest",
        ),
    ],
)
def test_other_identifiers_are_refused_with_their_path(
    event_type: str, fields: dict[str, Any], where: str
) -> None:
    event = {"event_id": "e1", "run_id": RUN, "type": event_type, "occurred_at": AT}
    error = refused({**event, "source": "w", **fields})
    assert error.message.startswith(f"{where}: ")


def test_free_text_may_hold_newlines_and_tabs_but_not_a_lone_surrogate() -> None:
    base = {
        "event_id": "e1",
        "run_id": RUN,
        "type": "narrative.submitted",
        "occurred_at": AT,
        "source": "w",
        "narrative_id": "n1",
        "account_revision": None,
        "channel": "final",
    }
    text = "Done.\n\n- ran\tthe tests\n- café ✓"
    assert parse_event({**base, "text": text}).text == text  # type: ignore[attr-defined]
    error = refused({**base, "text": "ok \ud83d then"})
    assert error.message == "text: lone surrogate U+D83D at index 3 (not Unicode text)"


@pytest.mark.parametrize("value", ["café-1", "run 1", "run\u00a01", "ラン-1", "r" * 128])
def test_identifiers_may_hold_any_printable_text(value: str) -> None:
    assert parse_event(review(run_id=value)).run_id == value


def test_the_identifier_rule_refuses_exactly_its_categories() -> None:
    """Every code point of the refused categories (control, format, separators,
    surrogates) is refused; no code point of another category is."""
    refused_categories = {"Cc", "Cf", "Cs", "Zl", "Zp"}
    for point in range(0x110000):
        char = chr(point)
        problem = identifier_problem(f"a{char}")
        assert (problem is not None) == (unicodedata.category(char) in refused_categories), point


def test_every_text_field_names_a_string_field_of_some_event() -> None:
    """TEXT_FIELDS lists free-text fields; a stale name would leave a field unchecked."""
    string_fields: set[str] = set()

    def walk(cls: type[Any]) -> None:
        for name, hint in typing.get_type_hints(cls).items():
            for arg in (hint, *typing.get_args(hint)):
                if arg is str:
                    string_fields.add(name)
                if dataclasses.is_dataclass(arg) and isinstance(arg, type):
                    walk(arg)
                for inner in typing.get_args(arg):
                    if inner is str:
                        string_fields.add(name)
                    if dataclasses.is_dataclass(inner) and isinstance(inner, type):
                        walk(inner)

    for cls in EVENT_CLASSES.values():
        walk(cls)
    assert TEXT_FIELDS.issubset(string_fields)
    assert {"run_id", "event_id", "label", "check_id", "tool"}.isdisjoint(TEXT_FIELDS)


# -- the fuzz --------------------------------------------------------------------------

# Any JSON value (what a JSONL line may hold in a field).
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=4)
    | st.sampled_from(["pass", "user", "2026-11-30T10:00:00Z", "\x1b", "\u202e"])
    | st.sampled_from([2**63, -(2**64), 10**400, -(10**400), 1e308, float("nan")]),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=4,
)
STRINGS = st.sampled_from(["a", "b", "unit", "s1", "", "x" * 129]) | st.text(max_size=6)
INTS = st.integers(-3, 3) | st.integers(-(2**31), 2**31 - 1) | st.integers()
TIMES = (
    st.sampled_from([AT, "2026-11-30T10:00:01Z", "9999-12-31T23:59:59.999999Z"])
    | st.integers(MIN_MICROS, MAX_MICROS)
    | st.integers()
)


def _values(name: str, hint: Any, wrong: bool) -> st.SearchStrategy[Any]:
    """Values for one field: of its type (hostile within it), and with `wrong`, any
    JSON value as well."""
    origin = typing.get_origin(hint)
    if origin is types.UnionType or origin is typing.Union:
        member = next(a for a in typing.get_args(hint) if a is not type(None))
        typed = st.none() | _values(name, member, wrong)
    elif origin is typing.Literal:
        typed = st.sampled_from(typing.get_args(hint))
    elif origin is tuple:
        typed = st.lists(_values(name, typing.get_args(hint)[0], wrong), max_size=3)
    elif dataclasses.is_dataclass(hint) and isinstance(hint, type):
        typed = _record(hint, wrong)
    elif name == "occurred_at":
        typed = TIMES
    elif name == "run_id":
        typed = st.just(RUN)
    elif name == "event_id":
        typed = st.sampled_from(["e1", "e2", "e3"]) | STRINGS
    else:
        floats = st.floats() | st.integers(-(10**400), 10**400)  # an int is a valid number
        typed = {str: STRINGS, int: INTS, float: floats, bool: st.booleans()}[hint]
    return typed | JSON if wrong else typed


def _record(cls: type[Any], wrong: bool, skip: frozenset[str] = frozenset()) -> Any:
    hints = typing.get_type_hints(cls)
    fields = {
        f.name: _values(f.name, hints[f.name], wrong)
        for f in dataclasses.fields(cls)
        if f.name not in skip
    }
    return st.fixed_dictionaries(fields)


def hostile_events(wrong: bool) -> st.SearchStrategy[dict[str, Any]]:
    return st.sampled_from(sorted(EVENT_CLASSES)).flatmap(
        lambda t: _record(EVENT_CLASSES[t], wrong, frozenset({"type"})).map(
            lambda body: {**body, "type": t}
        )
    )


def _fold_all(values: list[dict[str, Any]]) -> int:
    """Parse and fold every value as replay does; any error but InvalidEvent fails."""
    engine = Engine()
    parse = event_parser()
    applied = 0
    for value in values:
        try:
            event = parse(value)
        except InvalidEvent:
            continue
        try:
            fold(engine.state(event.run_id), event)
        except InvalidEvent as exc:
            assert exc.reason == "event_id_conflict"
            continue
        applied += 1
    return applied


# Figures from a long run of both (max_examples=5000) are in docs/decisions.md.
FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))


@settings(FUZZ, max_examples=120)
@given(st.lists(hostile_events(wrong=True), max_size=6))
def test_any_json_in_any_field_is_parsed_or_refused(values: list[dict[str, Any]]) -> None:
    _fold_all(values)


@FUZZ
@given(st.lists(hostile_events(wrong=False), min_size=1, max_size=10))
def test_every_event_the_parser_accepts_folds(values: list[dict[str, Any]]) -> None:
    _fold_all(values)
