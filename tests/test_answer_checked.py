"""SPEC 8 "Record": a check of an answer is an `answer.checked` event of the run; the fold
emits one `answer_check` row for it, changes nothing in the account, and the sink shows it
in the `answer_checks` view."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from outcomes.common.codec import Codec
from outcomes.common.errors import CodecError, DeliveryError
from outcomes.reducers.answers import answer_check_event_id, answer_checked_event, text_digest
from outcomes.reducers.catalog import EVENT_TOPICS, OUTPUT_TOPICS
from outcomes.reducers.engine import Engine
from outcomes.reducers.errors import InvalidEvent
from outcomes.reducers.validate import parse_event
from outcomes.reports.bundle import build
from outcomes.reports.html import page
from outcomes.reports.model import RunView
from outcomes.reports.report import markdown
from outcomes.reports.status import render, status_block
from outcomes.reports.verify import problems
from outcomes.sinks import clickhouse, schema
from outcomes.sinks.rows import rows_for
from outcomes.sinks.writer import ClickHouseWriter
from outcomes.streams.sdk import producer as sdk
from outcomes.streams.sdk.producer import OutcomesProducer

RUN = "run-gate-1"
T0 = 1_796_032_800_000_000  # 2026-11-30T10:00:00Z in microseconds


def _check(**overrides: Any) -> dict[str, Any]:
    given: dict[str, Any] = {
        "run_id": RUN,
        "answer_chain_id": "chain-1",
        "attempt": 1,
        "decision": "repair",
        "text": "All five files changed, tests pass, draft sent.",
        "counts": {"supported": 1, "contradicted": 2, "omitted": 1},
        "account_revision": 3,
        "occurred_at": T0,
        "source": "worker-gate",
    }
    return answer_checked_event(**{**given, **overrides})


def _run_events() -> list[dict[str, Any]]:
    """A run with an account: a goal, a failed check, a finalize request."""
    at = "2026-11-30T09:0{}:00.000000Z"
    envelope = {"run_id": RUN, "source": "agent"}
    return [
        {
            **envelope,
            "event_id": "e1",
            "type": "goal.revised",
            "occurred_at": at.format(1),
            "goal_revision": 1,
            "authored_by": "user",
            "deliverables": [],
            "required_checks": [{"label": "unit", "scope": "suite"}],
            "requested_effects": [],
            "requested_actions": [],
            "target_revision": None,
        },
        {
            **envelope,
            "event_id": "e2",
            "type": "finalize.requested",
            "occurred_at": at.format(2),
            "candidate_snapshot": None,
        },
    ]


# -- the event ------------------------------------------------------------------------------


def test_the_event_keeps_the_digest_not_the_words_and_its_id_is_the_attempts() -> None:
    event = _check()
    text = "All five files changed, tests pass, draft sent."
    assert event["text_digest"] == hashlib.sha256(text.encode()).hexdigest() == text_digest(text)
    assert text not in repr(event)
    assert event["event_id"] == answer_check_event_id(RUN, "chain-1", 1)
    assert event["event_id"] == _check(decision="contain", occurred_at=T0 + 5)["event_id"]
    assert event["event_id"] != _check(attempt=2)["event_id"]
    assert event["event_id"] != _check(answer_chain_id="chain-2")["event_id"]
    assert event["event_id"] != _check(run_id="run-gate-2")["event_id"]
    assert (event["supported"], event["contradicted"], event["unverifiable"]) == (1, 2, 0)
    assert (event["needs_review"], event["omitted"]) == (0, 1)
    assert event["occurred_at"] == "2026-11-30T10:00:00.000000Z"
    parsed = parse_event(Codec().event_from_json(event))
    assert parsed.TYPE == "answer.checked" and parsed.event_id == event["event_id"]
    assert EVENT_TOPICS["answer.checked"] == EVENT_TOPICS["narrative.submitted"]


def test_stale_is_recorded_as_unchecked_and_bad_input_is_refused() -> None:
    stale = _check(decision="stale", counts=None, account_revision=None)
    assert stale["decision"] == "unchecked"
    assert all(stale[n] == 0 for n in ("supported", "contradicted", "omitted"))
    for bad, match in (
        ({"decision": "passed"}, "decision"),
        ({"attempt": 0}, "attempt"),
        ({"counts": {"contradicted": -1}}, "contradicted"),
        ({"counts": {"refuted": 1}}, "unknown count"),
    ):
        with pytest.raises(ValueError, match=match):
            _check(**bad)


def test_ingest_refuses_an_attempt_below_one_and_a_negative_count() -> None:
    codec = Codec()
    for field, value in (("attempt", 0), ("omitted", -1)):
        value_json = codec.event_from_json({**_check(), field: value})
        with pytest.raises(InvalidEvent, match=field):
            parse_event(value_json)


def test_the_event_and_its_row_round_trip_through_avro() -> None:
    codec = Codec()
    event = _check()
    assert codec.decode(codec.encode_event(event)).value == event
    (row,) = Engine().apply(parse_event(codec.event_from_json(event)))
    decoded = codec.decode(codec.encode_output(row))
    assert decoded.kind == "answer_check" and decoded.value == dict(row.body)
    assert row.topic == OUTPUT_TOPICS["answer_check"]


# -- the fold -------------------------------------------------------------------------------


def _engine_with_account() -> tuple[Engine, int]:
    engine, codec = Engine(), Codec()
    revisions = 0
    for event in _run_events():
        outputs = engine.apply(parse_event(codec.event_from_json(event)))
        revisions += sum(o.kind == "account_revision" for o in outputs)
    assert revisions == 1
    return engine, engine.state(RUN).revision


def test_a_check_is_one_journal_row_and_changes_nothing_in_the_account() -> None:
    engine, revision = _engine_with_account()
    before = engine.state(RUN).last_content
    event = parse_event(Codec().event_from_json(_check(account_revision=revision)))
    outputs = engine.apply(event)
    assert [o.kind for o in outputs] == ["answer_check"]
    (row,) = outputs
    assert row.id == f"{RUN}:answer:chain-1:1" == row.body["check_id"]
    assert row.body["decision"] == "repair" and row.body["account_revision"] == revision
    assert row.body["event_id"] == event.event_id and row.body["source"] == "worker-gate"
    assert engine.state(RUN).revision == revision  # no new revision
    assert engine.state(RUN).last_content is before
    assert engine.apply(event) == []  # redelivery: nothing
    conflict = parse_event(Codec().event_from_json(_check(decision="pass")))
    with pytest.raises(InvalidEvent, match="applied before with different content") as err:
        engine.apply(conflict)
    assert err.value.reason == "event_id_conflict"


def test_a_check_before_the_account_exists_is_recorded_too() -> None:
    outputs = Engine().apply(parse_event(Codec().event_from_json(_check(account_revision=None))))
    assert [o.kind for o in outputs] == ["answer_check"]
    assert outputs[0].body["account_revision"] is None


# -- ClickHouse -----------------------------------------------------------------------------


@pytest.fixture
def chdb_dsn(tmp_path: Path) -> Iterator[str]:
    clickhouse.close_all()
    yield f"chdb://{tmp_path}/chdb"
    clickhouse.close_all()


def _answer_rows(conn: clickhouse.Connection) -> list[tuple[Any, ...]]:
    return conn.rows(
        "SELECT run_id, answer_chain_id, attempt, row_id, decision, account_revision, "
        f"contradicted, omitted FROM {conn.table('answer_checks')} "
        "ORDER BY answer_chain_id, attempt",
        settings={"final": 1},
    )


def _check_records() -> list[Any]:
    engine, revision = _engine_with_account()
    records = []
    for chain, attempt, decision, counts in (
        ("chain-1", 1, "repair", {"contradicted": 2, "omitted": 1}),
        ("chain-1", 2, "pass", {"supported": 2, "omitted": 1}),
        ("chain-2", 1, "unchecked", None),
    ):
        event = _check(
            answer_chain_id=chain, attempt=attempt, decision=decision, counts=counts,
            account_revision=None if decision == "unchecked" else revision,
        )  # fmt: skip
        records += engine.apply(parse_event(Codec().event_from_json(event)))
    return records


def test_the_sink_shows_each_check_once_in_answer_checks(chdb_dsn: str) -> None:
    conn = clickhouse.connect(chdb_dsn)
    schema.migrate(conn)
    records = _check_records()
    (table, row), *_ = rows_for(records[0])
    assert table == "output_rows" and row[0] == "answer_checks"
    writer = ClickHouseWriter(chdb_dsn)
    writer.write(records)
    writer.write(records)  # a redelivery adds nothing
    want = [
        (RUN, "chain-1", 1, f"{RUN}:answer:chain-1:1", "repair", 1, 2, 1),
        (RUN, "chain-1", 2, f"{RUN}:answer:chain-1:2", "pass", 1, 0, 1),
        (RUN, "chain-2", 1, f"{RUN}:answer:chain-2:1", "unchecked", None, 0, 0),
    ]
    assert [tuple(r) for r in _answer_rows(conn)] == want
    raw = conn.rows(f"SELECT count() FROM {conn.table('output_rows')}")[0][0]
    assert raw == 3
    notifications = conn.rows(f"SELECT count() FROM {conn.table('notifications')}")[0][0]
    assert notifications == 0  # the other views do not show answer checks


def test_migration_16_keeps_rows_stored_before_and_adds_the_view(chdb_dsn: str) -> None:
    conn = clickhouse.connect(chdb_dsn)
    conn.command(f"CREATE DATABASE IF NOT EXISTS `{conn.database}`")
    conn.command(schema._migrations_table(conn.database))
    for migration in schema.MIGRATIONS:  # what the release before left
        if migration.version > 15:
            break
        if not migration.server_only:
            for stmt in migration.statements(conn.database):
                conn.command(stmt)
            if migration.then is not None:
                migration.then(conn)
        conn.insert(
            "schema_migrations",
            [[migration.version, migration.name, migration.checksum(conn.database),
              schema._now(), ""]],
            ["version", "name", "checksum", "applied_at", "note"],
        )  # fmt: skip
    old = schema.OUTPUT_ROWS_V13
    names = old.column_names
    row = [None if "Nullable" in t else "" if "String" in t else 0 for t in old.column_types]
    values = {"record_table": "notifications", "run_id": RUN, "revision": 1, "row_id": f"{RUN}:1"}
    values |= {"kind": "account.final", "status": "incomplete"}
    for name, value in values.items():
        row[names.index(name)] = value
    row[names.index("evidence")] = []
    for i, kind in enumerate(old.column_types):
        if kind.startswith("Array("):
            row[i] = []
        elif kind == "Bool":
            row[i] = False
    conn.insert("output_rows", [row], names, column_types=old.column_types)
    report = schema.migrate(conn)
    assert 16 in report.applied and 17 in report.skipped
    assert conn.rows(f"SELECT row_id FROM {conn.table('notifications')}") == [(f"{RUN}:1",)]
    assert _answer_rows(conn) == []
    ClickHouseWriter(chdb_dsn).write(_check_records())
    assert [r[4] for r in _answer_rows(conn)] == ["repair", "pass", "unchecked"]
    assert conn.rows(f"SELECT row_id FROM {conn.table('notifications')}") == [(f"{RUN}:1",)]
    assert schema.migrate(conn).applied == []


# -- the producer SDK ----------------------------------------------------------------------


def test_the_typed_method_validates_like_ingest() -> None:
    producer = OutcomesProducer(source="test", bootstrap="127.0.0.1:1", message_timeout_ms=500)
    try:
        with pytest.raises(CodecError, match="attempt"):
            producer.answer_checked(
                run_id=RUN, answer_chain_id="c", attempt=0, decision="pass",
                text_digest=sdk.text_digest("x"),
            )  # fmt: skip
    finally:
        producer.close(timeout=0.5)


def test_position_is_bounded_and_oldest_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sdk, "POSITION_EVENTS", 3)
    monkeypatch.setattr(sdk, "POSITION_RUNS", 2)
    producer = OutcomesProducer(source="test", bootstrap="127.0.0.1:1", message_timeout_ms=500)
    try:
        for i in range(5):
            producer._acknowledge("run-a", f"a{i}")
        assert producer.position("run-a") == ("a2", "a3", "a4")
        producer._acknowledge("run-a", "a2")  # acknowledged anew: now the newest
        assert producer.position("run-a") == ("a3", "a4", "a2")
        producer._acknowledge("run-b", "b0")
        producer._acknowledge("run-a", "a5")  # run-a is the most recent again
        producer._acknowledge("run-c", "c0")  # past two runs: run-b goes
        assert producer.position("run-b") == ()
        assert producer.position("run-a") == ("a4", "a2", "a5")
        assert producer.position("run-c") == ("c0",)
        assert producer.position("nobody") == ()
    finally:
        producer.close(timeout=0.5)


def test_position_holds_only_what_the_broker_acknowledged(
    kafka_bootstrap: str, kafka_topic: Callable[..., str]
) -> None:
    topics = {"tool.started": kafka_topic("tool"), "answer.checked": kafka_topic("narrative")}
    run_id = f"run-{uuid.uuid4().hex}"
    with OutcomesProducer(source="w", bootstrap=kafka_bootstrap, topics=topics) as producer:
        first = producer.tool_started(run_id=run_id, action_id="a1", tool="pytest")
        second = producer.tool_started(run_id=run_id, action_id="a2", tool="pytest")
        producer.flush()
        assert producer.position(run_id) == (first, second)
        checked = producer.answer_checked(
            run_id=run_id, answer_chain_id="chain-1", attempt=1, decision="unchecked",
            text_digest=sdk.text_digest("the answer"),
        )  # fmt: skip
        assert checked == answer_check_event_id(run_id, "chain-1", 1)
        producer.flush()
        assert producer.position(run_id) == (first, second, checked)
        assert producer.position("another-run") == ()
    unreachable = OutcomesProducer(source="w", bootstrap="127.0.0.1:1", message_timeout_ms=500)
    unreachable.tool_started(run_id=run_id, action_id="a3", tool="pytest")
    with pytest.raises(DeliveryError, match=r"timed out|pending"):
        unreachable.flush(timeout=3.0)
    assert unreachable.position(run_id) == ()
    unreachable.close(timeout=0.5)


# -- the reports ----------------------------------------------------------------------------


def _view(from_events: bool) -> RunView:
    codec = Codec()
    engine, revision = _engine_with_account()
    revisions = list(engine.state(RUN).revisions)
    checks = [
        _check(decision="repair", account_revision=revision),
        _check(attempt=2, decision="contain", occurred_at=T0 + 1, account_revision=revision),
        _check(answer_chain_id="chain-2", decision="stale", counts=None, account_revision=None,
               occurred_at=T0 + 2),
    ]  # fmt: skip
    if from_events:
        return RunView.of(RUN, revisions, [], [*_run_events(), *checks])
    rows = [
        dict(o.body) for c in checks for o in engine.apply(parse_event(codec.event_from_json(c)))
    ]
    return RunView.of(RUN, revisions, [], answers=[*rows, *rows])


@pytest.mark.parametrize("from_events", [False, True], ids=["rows", "events"])
def test_the_reports_show_each_gated_answer(from_events: bool) -> None:
    view = _view(from_events)
    block = status_block(view)
    shown = [(a["answer_chain_id"], a["attempt"], a["decision"]) for a in block["answers"]]
    assert shown == [
        ("chain-1", 1, "repair"),
        ("chain-1", 2, "contain"),
        ("chain-2", 1, "unchecked"),
    ]
    text = render(block, "text")
    assert "Answers checked before display" in text
    assert "contained: shown from the account" in text
    assert "shown unchecked: not confirmed" in text and "passed" not in text
    assert "2 contradicted, 1 left out" in text
    md = markdown(view)
    assert "## Answers checked before display" in md and "`chain-2`" in md
    assert 'id="answers"' in page(view)
    files = build(view)
    answers = orjson.loads(files["answers.json"])
    assert [a["check_id"] for a in answers] == [
        f"{RUN}:answer:chain-1:1", f"{RUN}:answer:chain-1:2", f"{RUN}:answer:chain-2:1"
    ]  # fmt: skip
    assert problems(files) == []
    assert "All five files" not in files["answers.json"].decode()


def test_a_run_without_gated_answers_reads_as_before() -> None:
    engine, _ = _engine_with_account()
    view = RunView.of(RUN, list(engine.state(RUN).revisions), [], _run_events())
    assert status_block(view)["answers"] == []
    assert "Answers checked" not in render(status_block(view), "markdown")
    assert "answers.json" not in build(view)
