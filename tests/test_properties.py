"""Properties of the fold over generated runs (SPEC section 1's principles)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from outcomes.devtools.harness import BOOKKEEPING
from outcomes.reducers.account import assemble
from outcomes.reducers.engine import CHANGE_SECTIONS, Engine
from outcomes.reducers.records import OutputRecord
from outcomes.reducers.state import RunState
from outcomes.reducers.validate import parse_event
from tests.strategies import RUN_ID, run_events


def fold_all(bodies: list[dict[str, Any]]) -> tuple[Engine, list[OutputRecord]]:
    engine = Engine()
    outputs: list[OutputRecord] = []
    for body in bodies:
        outputs += engine.apply(parse_event(body))
    return engine, outputs


def final_content(outputs: list[OutputRecord]) -> dict[str, Any] | None:
    revisions = [o.body for o in outputs if o.kind == "account_revision"]
    if not revisions:
        return None
    return {k: v for k, v in revisions[-1].items() if k not in BOOKKEEPING}


@settings(max_examples=300, deadline=None)
@given(events=run_events(), data=st.data())
def test_any_arrival_order_gives_the_same_final_account(
    events: list[dict[str, Any]], data: st.DataObject
) -> None:
    shuffled = data.draw(st.permutations(events))
    engine_a, outputs_a = fold_all(events)
    engine_b, outputs_b = fold_all(shuffled)
    assert final_content(outputs_a) == final_content(outputs_b)
    state_a, state_b = engine_a.runs[RUN_ID], engine_b.runs[RUN_ID]
    assert state_a.state_revision == state_b.state_revision
    # The final account is also exactly what a fresh assembly of the set gives.
    assert final_content(outputs_a) == _strip(assemble(_rebuilt(state_a)))


@settings(max_examples=200, deadline=None)
@given(events=run_events(), data=st.data())
def test_redelivering_events_changes_no_output(
    events: list[dict[str, Any]], data: st.DataObject
) -> None:
    with_duplicates = list(events)
    for original in data.draw(st.lists(st.sampled_from(events), max_size=10)):
        first = with_duplicates.index(original)
        position = data.draw(st.integers(first + 1, len(with_duplicates)))
        with_duplicates.insert(position, dict(original))
    _, plain = fold_all(events)
    _, redelivered = fold_all(with_duplicates)
    assert [o.to_json_line() for o in plain] == [o.to_json_line() for o in redelivered]


@settings(max_examples=200, deadline=None)
@given(events=run_events(max_size=40))
def test_revisions_are_consecutive_and_each_supersedes_the_one_before(
    events: list[dict[str, Any]],
) -> None:
    _, outputs = fold_all(events)
    revisions = [o.body for o in outputs if o.kind == "account_revision"]
    assert [r["revision"] for r in revisions] == list(range(1, len(revisions) + 1))
    for before, after in zip([None, *revisions], revisions, strict=False):
        assert after["supersedes"] == (before["revision"] if before else None)
        assert after["revision_id"] == f"{RUN_ID}:{after['revision']}"
        if before is not None:
            # A revision exists only because its content changed, and says what changed.
            assert _strip(before) != _strip(after)
            assert after["changes"], "a later revision names what changed"
            assert set(after["changes"]) <= set(CHANGE_SECTIONS)
    notifications = [o.body for o in outputs if o.kind == "notification"]
    assert len({n["notification_id"] for n in notifications}) == len(notifications)
    if revisions:
        assert notifications[0]["kind"] == "account.final"


@settings(max_examples=200, deadline=None)
@given(events=run_events(max_size=40))
def test_incremental_assembly_equals_assembly_from_scratch(events: list[dict[str, Any]]) -> None:
    """The section cache never serves a stale section: after every event, the cached
    assembly equals an assembly of the same events into an empty state."""
    engine = Engine()
    for body in events:
        engine.apply(parse_event(body))
        state = engine.runs[RUN_ID]
        assert assemble(state) == assemble(_rebuilt(state))


@settings(max_examples=100, deadline=None)
@given(events=run_events(max_size=40))
def test_parsed_events_equal_the_ones_their_constructor_builds(
    events: list[dict[str, Any]],
) -> None:
    """The generated parser sets a frozen event's fields itself; the result must be the
    value `__init__` would give, down to nested values."""
    for body in events:
        parsed = parse_event(body)
        assert dataclasses.replace(parsed) == parsed
        assert hash(dataclasses.replace(parsed)) == hash(parsed)
        for field in dataclasses.fields(parsed):
            value = getattr(parsed, field.name)
            if isinstance(value, tuple):
                nested = [item for item in value if dataclasses.is_dataclass(item)]
                assert all(
                    dataclasses.replace(item) == item
                    for item in nested
                    if not isinstance(item, type)
                )


def _rebuilt(state: RunState) -> RunState:
    fresh = RunState(state.run_id)
    for event in state.events.values():
        fresh.add(event)
    return fresh


def _strip(content: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if content is None:
        return None
    return {k: v for k, v in content.items() if k not in BOOKKEEPING}
