"""`outcomes follow` against the real broker: each notification once, beside what its
revision changed, in order per run; filters; text and JSON; only new notifications
unless --from-beginning. And the tail's join without a broker."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from confluent_kafka.admin import AdminClient

import outcomes.cli.follow
from outcomes.cli.follow import Tail
from outcomes.cli.main import main
from outcomes.devtools.samples import account, notification
from outcomes.reducers.records import OutputRecord
from outcomes.streams.sdk.consumer import _BUILDERS, Item, Origin
from tests.consumer_support import publish


def story(run: str) -> dict[str, list[OutputRecord]]:
    """Two runs' revisions and notifications, and a claim notification."""
    revisions = [
        account(run, 1, status="unresolved", minute=1),
        account(run, 2, status="complete", minute=2, changes=["checks", "status"]),
        account(f"{run}-other", 1, status="blocked", minute=3),
    ]
    notifications = [
        notification(run, 1, "unresolved", None, 1),
        notification(run, 2, "complete", "unresolved", 2),
        notification(f"{run}-other", 1, "blocked", None, 3),
    ]
    settled: dict[str, Any] = {
        "notification_id": f"{run}:2:claims",
        "run_id": run,
        "revision": 2,
        "trigger_event_id": f"{run}:e2",
        "status": "complete",
        "observation_cutoff": "2026-11-30T10:02:00.000000Z",
        "narrative_ids": ["n1"],
        "verdict_ids": [f"{run}:n1:0@2"],
        "superseded": 1,
        "withdrawn": 0,
    }
    claims = [OutputRecord("claim_notification", run, settled["notification_id"], settled)]
    return {
        "account_revision": revisions,
        "notification": notifications,
        "claim_notification": claims,
    }


@pytest.fixture
def topics(kafka_topic: Callable[..., str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    made = {
        kind: kafka_topic(kind.replace("_", "-"), partitions=2)
        for kind in ("notification", "claim_notification", "account_revision")
    }
    monkeypatch.setattr(outcomes.cli.follow, "TOPICS", made)
    return made


def follow(bootstrap: str, *args: str) -> list[str]:
    result = CliRunner().invoke(
        main,
        ["follow", "--bootstrap", bootstrap, "--until-idle", "3", *args],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    return result.output.splitlines()


def test_follow_prints_each_notification_with_what_changed_as_json(
    kafka_bootstrap: str, kafka_config: dict[str, Any], topics: dict[str, str]
) -> None:
    records = story("follow-json")
    # Notifications first: follow must wait for the revisions to say what changed.
    for kind in ("notification", "claim_notification", "account_revision"):
        publish(kafka_config, topics[kind], records[kind])

    lines = [
        orjson.loads(line)
        for line in follow(kafka_bootstrap, "--from-beginning", "--format", "json")
    ]

    notes = [line for line in lines if line["record"] == "notification"]
    assert sorted(n["notification_id"] for n in notes) == sorted(
        r.id for r in records["notification"]
    )
    second = next(n for n in notes if n["notification_id"] == "follow-json:2")
    assert second["changes"] == ["checks", "status"]
    assert second["previous_status"] == "unresolved" and second["status"] == "complete"
    first = next(n for n in notes if n["notification_id"] == "follow-json:1")
    assert first["changes"] == []
    ours = [n["revision"] for n in notes if n["run_id"] == "follow-json"]
    assert ours == [1, 2]
    claims = [line for line in lines if line["record"] == "claim_notification"]
    assert [c["notification_id"] for c in claims] == ["follow-json:2:claims"]


def test_follow_text_with_run_and_kind_filters(
    kafka_bootstrap: str, kafka_config: dict[str, Any], topics: dict[str, str]
) -> None:
    records = story("follow-text")
    for kind in ("account_revision", "notification", "claim_notification"):
        publish(kafka_config, topics[kind], records[kind])
    lonely = notification("follow-text", 3, "failed", "complete", 4)  # no revision for it
    same = notification("follow-text", 4, "failed", "failed", 5)  # the status stayed
    publish(kafka_config, topics["notification"], [lonely, same])

    lines = follow(
        kafka_bootstrap,
        "--from-beginning",
        "--run",
        "follow-text",
        "--kind",
        "account.superseded",
        "--status-changed",
    )

    assert lines == [
        "2026-11-30T10:02:00.000000Z  follow-text  r2  account.superseded  unresolved → "
        "complete  changed: checks, status  completion automation",
        "2026-11-30T10:04:00.000000Z  follow-text  r3  account.superseded  complete → failed  "
        "changed: (revision not seen)",
    ]
    everything = follow(kafka_bootstrap, "--from-beginning", "--run-prefix", "follow-text")
    assert len(everything) == 6  # four notifications of the run, its other run, the claims
    assert any("r4  account.superseded  failed → failed" in line for line in everything)
    assert any(
        "claims settled  status complete  1 verdict(s): 1 superseded" in x for x in everything
    )


def _stable_follower(config: dict[str, Any], topic: str, timeout: float = 60.0) -> bool:
    """Wait until a follow group reads `topic` (it joined and got its partitions)."""
    admin = AdminClient(config)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        groups = admin.list_consumer_groups(request_timeout=10).result()
        names = [
            g.group_id for g in groups.valid if g.group_id.startswith("outcomes-reader-follow-")
        ]
        if names:
            for description in admin.describe_consumer_groups(names, request_timeout=10).values():
                group = description.result()
                for member in group.members:
                    if any(tp.topic == topic for tp in member.assignment.topic_partitions):
                        return True
        time.sleep(0.3)
    return False


def test_follow_shows_only_new_notifications_unless_from_beginning(
    kafka_bootstrap: str, kafka_config: dict[str, Any], topics: dict[str, str]
) -> None:
    old = story("follow-old")
    for kind in ("account_revision", "notification"):
        publish(kafka_config, topics[kind], old[kind])
    new = story("follow-new")
    ready = threading.Event()

    def publish_when_following() -> None:
        if _stable_follower(kafka_config, topics["notification"]):
            for kind in ("account_revision", "notification"):
                publish(kafka_config, topics[kind], new[kind])
        ready.set()

    thread = threading.Thread(target=publish_when_following, daemon=True)
    thread.start()
    result = CliRunner().invoke(
        main,
        ["follow", "--bootstrap", kafka_bootstrap, "--until-idle", "8", "--format", "json"],
        catch_exceptions=False,
    )
    thread.join(timeout=60)
    assert ready.is_set() and result.exit_code == 0, result.output
    seen = [orjson.loads(line)["notification_id"] for line in result.output.splitlines()]
    assert sorted(seen) == sorted(r.id for r in new["notification"])


def _item(record: OutputRecord, offset: int, stamp: int) -> Item:
    return _BUILDERS[record.kind](record.body, Origin("t", 0, offset, stamp))


def test_the_tail_waits_for_the_revision_and_keeps_a_runs_order(
    capsys: pytest.CaptureFixture[str],
) -> None:
    records = story("tail")
    tail = Tail(frozenset(), "json", revisions=lambda: [0], grace=0.05)
    first, second, _ = records["notification"]
    tail(_item(first, 0, 1000))
    tail(_item(second, 1, 1001))
    assert capsys.readouterr().out == ""  # both wait for revision 1
    tail(_item(records["account_revision"][1], 0, 1001))
    assert capsys.readouterr().out == ""  # revision 2 came, but 1 must come out first
    tail(_item(records["account_revision"][0], 1, 1000))
    out = [orjson.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [(n["revision"], n["changes"]) for n in out] == [(1, []), (2, ["checks", "status"])]

    lonely = notification("tail", 3, "failed", "complete", 4)
    tail(_item(lonely, 2, 2000))
    tail.flush()
    assert capsys.readouterr().out == ""  # not everything read yet: it waits
    time.sleep(0.06)
    tail.idle()
    assert orjson.loads(capsys.readouterr().out)["changes"] is None


def test_the_tail_prints_each_notification_id_once(capsys: pytest.CaptureFixture[str]) -> None:
    """A copy of a notification (a worker redid its run log's uncommitted end after a
    restart) or of a claim notification is not printed again, in either format."""
    records = story("copies")
    for fmt in ("json", "text"):
        tail = Tail(frozenset(), fmt, revisions=None)
        first, second, _ = records["notification"]
        [claims] = records["claim_notification"]
        for offset, record in enumerate([first, second, first, claims, second, claims]):
            tail(_item(record, offset, 1000 + offset))
        tail.flush(force=True)
        out = capsys.readouterr().out.splitlines()
        assert len(out) == 3 and tail.printed == 3 and tail.copies == 3, out


def _follow_groups(admin: AdminClient) -> set[str]:
    listed = admin.list_consumer_groups(request_timeout=10).result()
    return {g.group_id for g in listed.valid if g.group_id.startswith("outcomes-reader-follow-")}


def _sigint_follow(bootstrap: str, *, wait_for_group: bool) -> tuple[int, str, str]:
    """`outcomes follow` as a real process stopped by SIGINT, as Ctrl-C in a terminal
    sends it: once it reads in its group (or at once, while it starts)."""
    import os
    import signal
    import subprocess
    import sys

    admin = AdminClient({"bootstrap.servers": bootstrap})
    before = _follow_groups(admin)
    proc = subprocess.Popen(
        [sys.executable, "-m", "outcomes.cli", "follow", "--bootstrap", bootstrap],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        # Ctrl-C's default: a shell started without job control may have it ignored.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        if wait_for_group:
            deadline = time.monotonic() + 90
            while not (_follow_groups(admin) - before) and time.monotonic() < deadline:
                assert proc.poll() is None, proc.communicate()
                time.sleep(0.3)
            assert _follow_groups(admin) - before, "follow never joined its group"
            time.sleep(1.0)  # past the join: polling
        else:
            time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out.decode(), err.decode()


def test_ctrl_c_ends_follow_with_one_line_and_130(kafka_bootstrap: str) -> None:
    code, _, err = _sigint_follow(kafka_bootstrap, wait_for_group=True)
    assert "Traceback" not in err
    assert err.strip().splitlines() == ["outcomes follow: stopped (Ctrl-C)"]
    assert code == 130


def test_ctrl_c_while_follow_starts_prints_no_traceback(kafka_bootstrap: str) -> None:
    code, _, err = _sigint_follow(kafka_bootstrap, wait_for_group=False)
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) <= 1, err
    assert code != 0
