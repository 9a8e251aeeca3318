"""The consumer SDK against the real broker: typed items in order per run with their
deterministic ids, filters, offsets committed only after the handler returns (a crash
redelivers), handler retries then dead letters, undecodable records dead-lettered."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
import textwrap
import threading
import uuid
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest

import outcomes.streams.sdk.consumer as consumer_module
from outcomes.common.retry import poll_until
from outcomes.common.settings import Settings
from outcomes.devtools.samples import sample_records
from outcomes.reducers.catalog import OUTPUT_TOPICS
from outcomes.streams.sdk.consumer import (
    HANDLER_FAILED,
    AccountRevision,
    Backoff,
    ClaimNotification,
    ClaimVerdict,
    Item,
    Notification,
    OutcomesConsumer,
    Reject,
    RetryLater,
)
from tests.consumer_support import publish, read_all, run_notifications

ROOT = Path(__file__).resolve().parent.parent
FAST = Backoff(base=0.01, cap=0.05)


def group() -> str:
    return f"outcomes-reader-test-{uuid.uuid4().hex[:12]}"


def make_consumer(
    settings: Settings, notifications: str, dead: str, **options: Any
) -> OutcomesConsumer:
    options.setdefault("group", group())
    options.setdefault("from_beginning", True)
    options.setdefault("backoff", FAST)
    return OutcomesConsumer(
        settings, topics={"notification": notifications}, dead_letter_topic=dead, **options
    )


def collect(consumer: OutcomesConsumer, idle: float = 3.0) -> list[Item]:
    seen: list[Item] = []
    with consumer:
        consumer.run(seen.append, idle_timeout=idle)
    return seen


def test_typed_notifications_in_order_per_run_with_their_ids(
    kafka_settings: Settings, kafka_config: dict[str, Any], kafka_topic: Callable[..., str]
) -> None:
    topic, dead = kafka_topic("notifications", partitions=3), kafka_topic("dead")
    records = run_notifications("order", runs=6, revisions=4)
    publish(kafka_config, topic, records)

    seen = collect(make_consumer(kafka_settings, topic, dead))

    assert sorted(i.id for i in seen) == sorted(r.id for r in records)
    assert all(isinstance(i, Notification) for i in seen)
    by_run: dict[str, list[int]] = defaultdict(list)
    for item in seen:
        assert isinstance(item, Notification)
        by_run[item.run_id].append(item.revision)
        assert item.id == f"{item.run_id}:{item.revision}"
    assert all(revisions == [1, 2, 3, 4] for revisions in by_run.values()), by_run
    first = next(i for i in seen if i.id == "order-000:2")
    assert isinstance(first, Notification)
    assert (first.kind, first.previous_status, first.status) == (
        "account.superseded",
        "unresolved",
        "blocked",
    )
    assert first.to_json()["record"] == "notification"
    assert first.body["notification_id"] == "order-000:2"


def test_filters_by_run_prefix_kind_and_status_change(
    kafka_settings: Settings, kafka_config: dict[str, Any], kafka_topic: Callable[..., str]
) -> None:
    topic, dead = kafka_topic("notifications", partitions=2), kafka_topic("dead")
    records = run_notifications("keep", 2, 3) + run_notifications("drop", 2, 3)
    same = dict(records[-1].body, notification_id="keep-same:2", run_id="keep-same")
    same |= {"revision": 2, "previous_status": same["status"], "kind": "account.superseded"}
    records.append(type(records[0])("notification", "keep-same", "keep-same:2", same))
    publish(kafka_config, topic, records)

    prefixed = collect(make_consumer(kafka_settings, topic, dead, run_prefix="keep-"))
    assert sorted(i.id for i in prefixed) == sorted(r.id for r in records if r.key[:5] == "keep-")

    finals = collect(make_consumer(kafka_settings, topic, dead, kinds=["account.final"]))
    assert sorted(i.id for i in finals) == ["drop-000:1", "drop-001:1", "keep-000:1", "keep-001:1"]

    exact = collect(
        make_consumer(kafka_settings, topic, dead, run_ids=["keep-same"], status_changed=True)
    )
    assert exact == []  # its only notification kept the status
    changed = collect(make_consumer(kafka_settings, topic, dead, status_changed=True))
    assert "keep-same:2" not in {i.id for i in changed}
    assert len(changed) == len(records) - 1


def test_revisions_verdicts_and_claim_notifications_on_request(
    kafka_settings: Settings, kafka_config: dict[str, Any], kafka_topic: Callable[..., str]
) -> None:
    kinds = ("notification", "claim_notification", "account_revision", "claim_verdict")
    topics = {kind: kafka_topic(kind.replace("_", "-")) for kind in kinds}
    dead = kafka_topic("dead")
    records = [r for r in sample_records() if r.kind in kinds]
    at = next(n for n, r in enumerate(records) if r.kind == "claim_verdict")
    formulated = dataclasses.replace(
        records[at],
        body={**records[at].body, "supported": "the unit check has not passed on snap-2"},
    )
    records[at] = formulated
    for kind, topic in topics.items():
        publish(kafka_config, topic, [r for r in records if r.kind == kind])

    consumer = OutcomesConsumer(
        kafka_settings,
        group=group(),
        records=kinds,
        topics=topics,
        dead_letter_topic=dead,
        from_beginning=True,
    )
    seen = collect(consumer)

    assert sorted((i.record, i.id) for i in seen) == sorted((r.kind, r.id) for r in records)
    types = {type(i) for i in seen}
    assert types == {Notification, ClaimNotification, AccountRevision, ClaimVerdict}
    revision = next(i for i in seen if isinstance(i, AccountRevision) and i.revision == 2)
    assert revision.changes == tuple(revision.body["changes"])
    verdict = next(i for i in seen if isinstance(i, ClaimVerdict))
    assert verdict.id == verdict.body["verdict_id"] and verdict.claim_kind
    supported = {i.id: i.supported for i in seen if isinstance(i, ClaimVerdict)}
    assert supported.pop(formulated.id) == formulated.body["supported"]
    assert set(supported.values()) == {None}
    assert consumer.stats.dead_lettered == 0


def test_offset_is_committed_only_after_the_handler_returns(
    kafka_settings: Settings, kafka_config: dict[str, Any], kafka_topic: Callable[..., str]
) -> None:
    """An exception that escapes (here KeyboardInterrupt) leaves its record uncommitted:
    the next member of the group starts with exactly that record."""
    topic, dead = kafka_topic("notifications"), kafka_topic("dead")
    records = run_notifications("crash", runs=1, revisions=10)
    publish(kafka_config, topic, records)
    name = group()
    handled: list[str] = []

    def handler(item: Item) -> None:
        if item.id == "crash-000:6":
            raise KeyboardInterrupt
        handled.append(item.id)

    with (
        pytest.raises(KeyboardInterrupt),
        make_consumer(kafka_settings, topic, dead, group=name) as consumer,
    ):
        consumer.run(handler, idle_timeout=5)
    assert handled == [f"crash-000:{r}" for r in range(1, 6)]

    rest = collect(make_consumer(kafka_settings, topic, dead, group=name))
    assert [i.id for i in rest] == [f"crash-000:{r}" for r in range(6, 11)]


CHILD = textwrap.dedent(
    """
    import os, sys
    from outcomes.streams.sdk.consumer import OutcomesConsumer

    topic, dead, group, log = sys.argv[1:5]
    out = open(log, "a")

    def handler(item):
        if item.id == "killed-001:4":
            os._exit(17)  # a crash: no close, no commit of what is in flight
        out.write(item.id + "\\n")
        out.flush()

    consumer = OutcomesConsumer(group=group, topics={"notification": topic},
                                dead_letter_topic=dead, from_beginning=True,
                                commit_interval=0.0, config={"session.timeout.ms": 6000})
    consumer.run(handler, idle_timeout=10)
    """
)


def test_a_killed_consumer_loses_nothing_its_group_gets_it_again(
    kafka_bootstrap: str,
    kafka_settings: Settings,
    kafka_config: dict[str, Any],
    kafka_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    topic, dead = kafka_topic("notifications", partitions=2), kafka_topic("dead")
    records = run_notifications("killed", runs=3, revisions=6)
    publish(kafka_config, topic, records)
    name, log = group(), tmp_path / "handled.txt"
    env = {**os.environ, "OUTCOMES_BOOTSTRAP": kafka_bootstrap, "PYTHONPATH": str(ROOT)}
    child = subprocess.run(
        [sys.executable, "-c", CHILD, topic, dead, name, str(log)],
        env=env,
        cwd=ROOT,
        timeout=120,
        capture_output=True,
        text=True,
    )
    assert child.returncode == 17, child.stderr
    before = log.read_text().split()
    assert "killed-001:4" not in before

    # The dead member holds its partitions until its session (6 s) times out.
    again = collect(make_consumer(kafka_settings, topic, dead, group=name), idle=20.0)
    after = [i.id for i in again]
    assert "killed-001:4" in after
    assert set(before) | set(after) == {r.id for r in records}  # nothing lost
    order = [i for i in after if i.startswith("killed-001:")]
    assert order == sorted(order, key=lambda i: int(i.rsplit(":", 1)[1]))


def test_a_failing_handler_is_retried_then_dead_lettered_and_the_consumer_goes_on(
    kafka_settings: Settings, kafka_config: dict[str, Any], kafka_topic: Callable[..., str]
) -> None:
    topic, dead = kafka_topic("notifications"), kafka_topic("dead")
    records = run_notifications("flaky", runs=1, revisions=5)
    publish(kafka_config, topic, records)
    attempts: dict[str, int] = defaultdict(int)
    handled: list[str] = []

    def handler(item: Item) -> None:
        attempts[item.id] += 1
        if item.id == "flaky-000:2" and attempts[item.id] <= 2:
            raise ConnectionError("database restarting")
        if item.id == "flaky-000:3":
            raise ValueError("cannot handle revision 3")
        if item.id == "flaky-000:4" and attempts[item.id] <= 3:
            raise RetryLater("peer down")
        if item.id == "flaky-000:5":
            raise Reject("not_ours", "revision 5 belongs elsewhere")
        handled.append(item.id)

    with make_consumer(kafka_settings, topic, dead, retries=3) as consumer:
        consumer.run(handler, idle_timeout=3)

    assert handled == ["flaky-000:1", "flaky-000:2", "flaky-000:4"]
    assert attempts["flaky-000:2"] == 3  # two failures, then success
    assert attempts["flaky-000:3"] == 4  # the first try and three retries
    assert attempts["flaky-000:4"] == 4  # transient: retried until it succeeded
    assert attempts["flaky-000:5"] == 1  # rejected: never retried
    assert consumer.stats.dead_lettered == 2
    letters = sorted(read_all(kafka_config, dead, 2), key=lambda d: d["origin_offset"])
    assert [d["reason"] for d in letters] == [HANDLER_FAILED, "not_ours"]
    assert [d["origin_offset"] for d in letters] == [2, 4]
    assert letters[0]["origin_topic"] == topic and letters[0]["run_id"] == "flaky-000"
    assert "ValueError: cannot handle revision 3" in letters[0]["message"]
    assert "handler failed 4 times" in letters[0]["message"]


def test_undecodable_records_are_dead_lettered_and_the_consumer_goes_on(
    kafka_settings: Settings, kafka_config: dict[str, Any], kafka_topic: Callable[..., str]
) -> None:
    topic, dead = kafka_topic("notifications"), kafka_topic("dead")
    good = run_notifications("mixed", runs=1, revisions=2)
    revision = next(r for r in sample_records() if r.kind == "account_revision")
    publish(kafka_config, topic, [good[0]])
    publish(kafka_config, topic, [(b"mixed-000", b"not avro at all"), (b"mixed-000", None)])
    publish(kafka_config, topic, [revision, good[1]])  # a revision where notifications go

    consumer = make_consumer(kafka_settings, topic, dead)
    seen = collect(consumer)

    assert [i.id for i in seen] == ["mixed-000:1", "mixed-000:2"]
    letters = sorted(read_all(kafka_config, dead, 3), key=lambda d: d["origin_offset"])
    assert [(d["origin_offset"], d["reason"]) for d in letters] == [
        (1, "undecodable"),
        (2, "undecodable"),
        (3, "schema_violation"),
    ]
    assert letters[0]["raw"] == "bm90IGF2cm8gYXQgYWxs"  # base64 of the bytes as read
    assert letters[0]["dead_letter_id"] == f"{topic}:0:1"
    assert "AccountRevision" in letters[2]["message"]
    assert consumer.stats.dead_lettered == 3


README = ROOT / "README.md"
EXAMPLE_GROUP = '"outcomes-reader-billing"'


def readme_example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    examples = [block for block in blocks if EXAMPLE_GROUP in block]
    assert len(examples) == 1, "README.md must have exactly one consumer example"
    return examples[0]


def test_readme_consumer_example_runs_and_handles_each_notification_once(
    kafka_bootstrap: str,
    kafka_config: dict[str, Any],
    kafka_topic: Callable[..., str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = readme_example()
    assert len([line for line in code.splitlines() if line.strip()]) <= 10
    topic = kafka_topic("notifications", partitions=2)
    records = run_notifications("readme", runs=3, revisions=2)
    publish(kafka_config, topic, records)
    publish(kafka_config, topic, records[:2])  # redelivered: the same ids again
    # The example as printed, on this test's topic and with a group of its own.
    monkeypatch.setattr(consumer_module, "OUTPUT_TOPICS", {**OUTPUT_TOPICS, "notification": topic})
    monkeypatch.setenv("OUTCOMES_BOOTSTRAP", kafka_bootstrap)
    code = code.replace(EXAMPLE_GROUP, repr(group()))
    namespace: dict[str, Any] = {"__name__": "readme_consumer_example"}
    failure: list[BaseException] = []

    def run() -> None:
        try:
            exec(compile(code, str(README), "exec"), namespace)
        except BaseException as exc:  # handed to the test thread
            failure.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    wanted = {r.id for r in records}
    poll_until(
        lambda: (
            bool(failure) or (set(namespace.get("done", ())) >= wanted and "consumer" in namespace)
        ),
        timeout=60,
    )
    if "consumer" in namespace:
        namespace["consumer"].stop()
    thread.join(timeout=30)
    assert not failure and not thread.is_alive(), failure
    assert namespace["done"] == wanted
    printed = capsys.readouterr().out.splitlines()
    assert sorted(printed) == sorted(
        f"{r.key} revision {r.body['revision']}: {r.body['previous_status']} -> {r.body['status']}"
        for r in records
    )  # each once, though two were delivered twice


class _Clock:
    """A monotonic clock that moves one second per reading."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


class _Silent:
    """A confluent-kafka consumer stand-in whose polls bring nothing."""

    def consume(self, num_messages: int, timeout: float) -> list[Any]:
        return []


def test_idle_timeout_waits_for_a_first_assignment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A member that has no partition yet (the group coordinator of a broker that just
    started is still loading) is not idle: it waits ASSIGNMENT_WAIT before giving up; once
    assigned, idle_timeout alone counts."""
    settings = Settings.load(bootstrap="127.0.0.1:1")
    ended = {}
    for assigned in (set(), {("t", 0)}):
        clock = _Clock()
        monkeypatch.setattr(consumer_module.time, "monotonic", clock)
        member = make_consumer(settings, "t", "dead", group="g")
        real = member._consumer
        try:
            member._consumer = cast(Any, _Silent())
            member._assigned = set(assigned)
            member.run(lambda item: None, idle_timeout=3.0)
        finally:
            member._consumer = real
            member.close()
        ended[bool(assigned)] = clock.now
    assert ended[False] >= consumer_module.ASSIGNMENT_WAIT  # waited for an assignment
    assert 3.0 <= ended[True] < 10.0  # assigned: the idle timeout (3 s) alone


INTERRUPTED_CHILD = textwrap.dedent(
    """
    import sys, time
    from outcomes.streams.sdk.consumer import OutcomesConsumer

    topic, dead, group = sys.argv[1:4]
    handled = []

    def handler(item):
        if not handled:
            print("handling", flush=True)
            time.sleep(3)  # Ctrl-C comes now: this item is still finished and committed
        handled.append(item.id)

    with OutcomesConsumer(group=group, topics={"notification": topic},
                          dead_letter_topic=dead, from_beginning=True) as consumer:
        stats = consumer.run(handler)
    print("returned", stats.interrupted, ",".join(handled), flush=True)
    """
)


def test_ctrl_c_stops_run_after_the_item_in_hand_without_a_traceback(
    kafka_bootstrap: str,
    kafka_settings: Settings,
    kafka_config: dict[str, Any],
    kafka_topic: Callable[..., str],
) -> None:
    import signal

    topic, dead = kafka_topic("notifications"), kafka_topic("dead")
    records = run_notifications("ctrlc", runs=1, revisions=4)
    publish(kafka_config, topic, records)
    name = group()
    env = {**os.environ, "OUTCOMES_BOOTSTRAP": kafka_bootstrap, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTED_CHILD, topic, dead, name],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl-C's default: a shell started without job control may have it ignored.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "handling"
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert "Traceback" not in err, err
    assert child.returncode == 0, err
    first = records[0].id
    assert out.split() == ["returned", "True", first]
    # The item in hand was committed: the group's next member starts after it.
    rest = collect(make_consumer(kafka_settings, topic, dead, group=name), idle=3.0)
    assert [i.id for i in rest] == [r.id for r in records[1:]]
