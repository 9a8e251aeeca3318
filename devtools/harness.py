"""Running the real `outcomes worker` against the real broker: isolation, load, outputs,
expectations. Used by the integration tests and the worker benchmark.

The tests run the real worker as subprocesses against the real broker and the pipeline's
fixed topic names (reducers/catalog.py), which every test and every earlier run share.

Isolation, and why it works:
- Each test uses its own run-id prefix (`unique_name`) and its own `--app-id`. The app id
  is the worker's consumer group; a new group would start at `earliest` and re-read every
  event ever produced. So before a worker starts, `isolate_group` commits the new group's
  offsets at the current END of every input topic and of the run log (a confluent-kafka
  consumer with that `group.id`, `commit(offsets=..., asynchronous=False)`). Kafka accepts
  such a commit for a group that has no members yet (a "simple" commit); the function
  reads the offsets back with `committed()` and fails if they differ. faust then resumes
  from those offsets, so the worker sees only what the test produces afterwards. It also
  records the end offsets of the output topics and of the run log (`Marks`), so the test
  reads only records written after that point.
- Outputs are kept only when their key (the `run_id`) has the test's prefix; dead letters
  are filtered by their origin. Foreign events on the shared input topics are processed
  by the test's worker too, but never mix into what a test compares.
- The run log: with `outcomes.reducers.catalog.run_log_topic` each app id has its own
  (`<app_id>-run-log`, made by the worker), so no other worker group can touch the
  test's. Without it, all groups share `outcomes.run-log.v1`, and `isolate_group` starts
  the group at its end too. Then another group running at the same time (another
  session's test, `outcomes demo`, `outcomes bench`) forwards the test's events into it
  again (identical duplicates downstream), and a group that STARTS at its end while the
  test's runs are half-way through folds only the rest of them and publishes different
  contents under the same revision ids. Those show as conflicting copies, and
  `Harness.verify` names the groups concerned (`concurrent_folders`).
- Each app id makes its own internal topics (`<app_id>-run-events-changelog`, ...);
  `delete_app` removes them and the group after the test.

Knowing when a worker is done: `--until-idle` alone cannot tell while other sessions
produce, so `finish` follows the group's committed offsets (`Progress`) and then lets
the worker stop by itself or with SIGTERM; reads are bounded by the end offsets at the
time of reading (`read_from`), never by a quiet spell.

Expectations come from the same reducers in process: `replay_expectation` folds the
produced events with `outcomes.reducers.engine.Engine` (final account per run, journal rows), and
`run_log_expectation` folds the run log exactly as the worker read it, which predicts every
output id and byte of the stream (the worker's outputs are a function of the run log).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Self

from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient

import outcomes.reducers.catalog as catalog
from outcomes.common import retry
from outcomes.common.codec import Codec
from outcomes.common.settings import Settings
from outcomes.devtools.workload import generate_runs, interleave
from outcomes.reducers.catalog import EVENT_TOPICS, INPUT_TOPICS, OUTPUT_TOPICS, RUN_LOG_TOPIC
from outcomes.reducers.engine import Engine
from outcomes.reducers.errors import InvalidEvent
from outcomes.reducers.limits import Limits
from outcomes.reducers.records import OutputRecord, dead_letter
from outcomes.reducers.validate import parse_event
from outcomes.sinks.consumer import ID_FIELDS
from outcomes.streams.topics import end_offsets as topics_end_offsets
from outcomes.streams.topics import read_range

OUTCOMES = str(Path(sys.executable).parent / "outcomes")
KafkaConfig = Mapping[str, str | int | float | bool]
Event = dict[str, Any]
Json = dict[str, Any]
TopicOffsets = dict[tuple[str, int], int]

BOOKKEEPING = frozenset(
    {
        "revision",
        "supersedes",
        "state_revision",
        "observation_cutoff",
        "trigger_event_id",
        "changes",
        "revision_id",
    }
)
"""Account fields that depend on the arrival order, not on the set of events."""

JOURNAL_ROW_TYPES = frozenset({"retrieval_candidate", "context_injection"})
KIND_BY_TOPIC = {topic: kind for kind, topic in OUTPUT_TOPICS.items()}
OUTPUT_LIMIT = 8 * 1024 * 1024
"""Largest output record (account revisions may reach 8 MiB; topics/topic_table)."""
FAST_REJOIN = {"BROKER_SESSION_TIMEOUT": "8", "BROKER_HEARTBEAT_INTERVAL": "1"}
"""Worker environment for tests that kill or add workers: faust's documented settings for
the group session (default 60 s, which a killed member's partitions would wait out)."""
_IDLE_LINE = re.compile(r"forwarded (\d+), folded (\d+), dead letters (\d+)")


def run_log_of(app_id: str) -> str:
    """The run log the worker with `app_id` forwards to and folds.

    `outcomes.reducers.catalog.run_log_topic` gives each app id its own run log; a worker without
    it shares the declared `outcomes.run-log.v1` between all app ids.
    """
    per_app = getattr(catalog, "run_log_topic", None)
    return str(per_app(app_id)) if per_app is not None else RUN_LOG_TOPIC


def output_codec() -> Codec:
    """A codec that decodes every output record.

    The default codec refuses any record over the 1 MiB input event limit, output
    records included, so it cannot read back a dead letter of a `too_large` input
    (its raw bytes alone exceed 1 MiB) or an account revision over 1 MiB.
    """
    return Codec(Settings(limits=Limits(OUTPUT_LIMIT, OUTPUT_LIMIT, 1_000_000)))


def unique_name(tag: str) -> str:
    """A name no other test or earlier run uses: `t<tag>-<10 hex>`."""
    return f"t{tag}-{uuid.uuid4().hex[:10]}"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# ---------------------------------------------------------------------------------------
# Offsets and isolation.


def existing(config: KafkaConfig, topic: str) -> bool:
    """Whether the broker has `topic`."""
    return topic in AdminClient(dict(config)).list_topics(timeout=10).topics


def end_offsets(config: KafkaConfig, topics: Iterable[str]) -> TopicOffsets:
    """The high watermark of every partition of `topics`."""
    return topics_end_offsets(config, list(topics))


@dataclass(frozen=True)
class Marks:
    """Where a test's group starts (inputs, run log) and where its reading of outputs starts.

    `run_log` is empty when the app's run log did not exist yet (a per-app run log is
    made by its first worker): then the test's part of it starts at offset 0.
    """

    group: str
    committed: TopicOffsets
    outputs: TopicOffsets
    run_log_topic: str
    run_log: TopicOffsets

    def run_log_start(self, config: KafkaConfig) -> TopicOffsets:
        """Where the test's part of the run log starts, partition by partition."""
        if self.run_log:
            return dict(self.run_log)
        return {tp: 0 for tp in end_offsets(config, [self.run_log_topic])}


def commit_offsets(config: KafkaConfig, group: str, offsets: TopicOffsets) -> None:
    """Commit `offsets` for `group` (which may have no members) and check they stuck."""
    consumer = Consumer({**config, "group.id": group, "enable.auto.commit": False})
    try:
        wanted = [TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())]
        results = consumer.commit(offsets=wanted, asynchronous=False)
        failed = [tp for tp in results or () if tp.error is not None]
        if failed:
            raise RuntimeError(f"group {group}: commit failed for {failed}")
        got = committed_offsets(consumer, list(offsets))
        if got != offsets:
            raise RuntimeError(f"group {group}: committed {got}, wanted {offsets}")
    finally:
        consumer.close()


def committed_offsets(consumer: Consumer, partitions: Sequence[tuple[str, int]]) -> TopicOffsets:
    """The group's committed offsets (-1001 where none is committed)."""
    result = consumer.committed([TopicPartition(t, p) for t, p in partitions], timeout=10)
    return {(tp.topic, tp.partition): tp.offset for tp in result}


def group_offsets(config: KafkaConfig, group: str, topics: Iterable[str]) -> TopicOffsets:
    """What `group` has committed on every partition of `topics`."""
    partitions = list(end_offsets(config, topics))
    consumer = Consumer({**config, "group.id": group, "enable.auto.commit": False})
    try:
        return committed_offsets(consumer, partitions)
    finally:
        consumer.close()


def isolate_group(config: KafkaConfig, group: str) -> Marks:
    """Start `group` at the end of the inputs and of its run log (if that exists yet);
    mark the outputs' ends."""
    run_log_topic = run_log_of(group)
    topics = [*INPUT_TOPICS, run_log_topic] if existing(config, run_log_topic) else INPUT_TOPICS
    committed = end_offsets(config, topics)
    commit_offsets(config, group, committed)
    outputs = end_offsets(config, OUTPUT_TOPICS.values())
    run_log = {tp: o for tp, o in committed.items() if tp[0] == run_log_topic}
    return Marks(group, committed, outputs, run_log_topic, run_log)


def delete_app(config: KafkaConfig, app_id: str) -> None:
    """Delete what `app_id` left on the broker: faust's internal topics (changelogs,
    assignor) and the consumer group."""
    admin = AdminClient(dict(config))
    mine = [t for t in admin.list_topics(timeout=10).topics if t.startswith(f"{app_id}-")]
    futures = list(admin.delete_topics(mine, operation_timeout=30).values()) if mine else []
    futures += admin.delete_consumer_groups([app_id], request_timeout=30).values()
    for future in futures:
        with contextlib.suppress(KafkaException):  # already gone, or never made
            future.result()


# ---------------------------------------------------------------------------------------
# Producing.


def workload(runs: int, prefix: str, padding: int = 0, seed: int = 0) -> list[Event]:
    """`runs` generated runs (every scenario) with ids under `prefix`, interleaved."""
    return interleave(list(generate_runs(runs, seed=seed, padding=padding, prefix=prefix)), seed)


NARRATIVE_TEXTS = (
    "Done: the change is in and all tests pass.",
    "The draft was created and I saved it.",
    "No external changes were made.",
    "The upload is still running; the unit check failed once.",
    "",
)


def narrated_workload(runs: int, prefix: str, padding: int = 0, seed: int = 0) -> list[Event]:
    """As `workload`, and every run also submits one or two more narratives at random
    points, some naming a revision, so that verdicts have later revisions to settle
    against in whatever order the worker sees them."""
    rng = random.Random(seed)
    narrated = []
    for run in generate_runs(runs, seed=seed, padding=padding, prefix=prefix):
        for n in range(rng.randint(1, 2)):
            at = rng.randrange(len(run) + 1)
            near = run[min(at, len(run) - 1)]
            narrative = {
                "event_id": f"{near['run_id']}:narrative-{n}",
                "run_id": near["run_id"],
                "type": "narrative.submitted",
                "occurred_at": near["occurred_at"],
                "source": "agent-worker",
                "narrative_id": f"extra-{n}",
                "account_revision": rng.choice([None, 1, 2]),
                "channel": "chat",
                "text": rng.choice(NARRATIVE_TEXTS),
            }
            run = [*run[:at], narrative, *run[at:]]
        narrated.append(run)
    return interleave(narrated, seed)


def current_verdicts(bodies: Iterable[Mapping[str, Any]]) -> dict[str, tuple[Any, ...]]:
    """Each claim's current verdict (its latest settlement, unless it withdrew an
    omission), without the ids and revision numbers that depend on arrival order."""
    latest: dict[str, Mapping[str, Any]] = {}
    for body in bodies:
        known = latest.get(body["claim_id"])
        if known is None or body["settlement"] > known["settlement"]:
            latest[body["claim_id"]] = body
    return {
        claim: (
            v["event_id"],
            v["claim_kind"],
            v["verdict"],
            v["subject"],
            v["reason"],
            v["span_start"],
            v["span_end"],
            v["span_text"],
        )
        for claim, v in latest.items()
        if not v["withdrawn"]
    }


def producer(config: KafkaConfig) -> Producer:
    """An idempotent producer that accepts records up to 8 MiB."""
    return Producer(
        {
            # As the SDK: runs land on their run-log partition (a config may choose another).
            "partitioner": "murmur2_random",
            **config,
            "enable.idempotence": True,
            "linger.ms": 20,
            "message.max.bytes": 8 * 1024 * 1024,
            "queue.buffering.max.messages": 200_000,
        }
    )


def produce_events(config: KafkaConfig, events: Sequence[Event], codec: Codec) -> None:
    """Encode each event and produce it to its input topic, keyed by run_id; all acked."""
    produce_raw(
        config,
        [(EVENT_TOPICS[e["type"]], e["run_id"], codec.encode_event(e)) for e in events],
    )


Placed = tuple[str, int, int]
"""Where the broker put a record: (topic, partition, offset)."""


def produce_acknowledged(
    client: Producer, records: Sequence[tuple[str, str, bytes]], flush_timeout: float
) -> tuple[list[Placed | None], list[str]]:
    """Produce (topic, key, value) records in order with `client` (waiting while its queue
    is full), flush, and return where the broker put each one (None where it did not
    acknowledge it) and the delivery errors."""
    placed: list[Placed | None] = [None] * len(records)
    errors: list[str] = []

    def report(index: int) -> Callable[[KafkaError | None, Message], None]:
        def done(err: KafkaError | None, msg: Message) -> None:
            topic, partition, offset = msg.topic(), msg.partition(), msg.offset()
            if err is not None or topic is None or partition is None or offset is None:
                errors.append(str(err))
            else:
                placed[index] = (topic, partition, offset)

        return done

    for index, (topic, key, value) in enumerate(records):
        while True:
            try:
                client.produce(topic, value, key.encode(), on_delivery=report(index))
                break
            except BufferError:
                client.poll(0.1)
        client.poll(0)
    client.flush(flush_timeout)
    return placed, errors


def produce_raw(config: KafkaConfig, records: Sequence[tuple[str, str, bytes]]) -> list[Placed]:
    """Produce (topic, key, value) records in order; return their (topic, partition, offset)."""
    placed, errors = produce_acknowledged(producer(config), records, flush_timeout=60)
    missing = sum(p is None for p in placed)
    assert not missing and not errors, f"{missing} undelivered, errors: {errors[:3]}"
    return [p for p in placed if p is not None]


# ---------------------------------------------------------------------------------------
# The worker process.


class LoggedProcess:
    """A subprocess whose output goes to a log file (never a pipe a stopped reader could
    fill): start, signal, wait, stop and read the log's tail. Subclasses are dataclasses
    holding `log_path`, `process` and `_log`."""

    log_path: Path
    process: subprocess.Popen[bytes] | None
    _log: IO[bytes] | None

    def _describe(self) -> str:
        return "process"

    def _spawn(self, args: Sequence[str], env: Mapping[str, str]) -> None:
        self._log = self.log_path.open("ab")
        self._log.write(f"\n==== start {time.strftime('%H:%M:%S')} {list(args)}\n".encode())
        self._log.flush()
        self.process = subprocess.Popen(
            list(args), stdout=self._log, stderr=subprocess.STDOUT, env=dict(env),
            start_new_session=True,
        )  # fmt: skip

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def signal(self, signum: int) -> None:
        if self.alive():
            os.kill(self.pid, signum)

    def wait(self, timeout: float) -> int:
        """The exit code, waiting at most `timeout` seconds (then the test fails)."""
        assert self.process is not None
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"{self._describe()} still running after {timeout}s; log tail:\n{self.tail()}"
            ) from None
        self._close_log()
        return code

    def stop(self) -> None:
        """Kill the process if it still runs (for `finally` blocks)."""
        if self.alive():
            assert self.process is not None
            self.process.kill()
            self.process.wait(30)
        self._close_log()

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def tail(self, lines: int = 40) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


@dataclass
class WorkerProcess(LoggedProcess):
    """One `outcomes worker` subprocess; its log goes to a file (never a blocking pipe)."""

    app_id: str
    state_dir: Path
    bootstrap: str
    log_path: Path
    until_idle: float | None = None
    web_port: int | None = None
    extra: Sequence[str] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None
    last_stats: Json | None = None
    _log: IO[bytes] | None = field(default=None, repr=False)

    def start(self) -> Self:
        args = [
            *self._command(),
            "--bootstrap",
            self.bootstrap,
            "--app-id",
            self.app_id,
            "--state-dir",
            str(self.state_dir),
            "--loglevel",
            "info",
            *self.extra,
        ]
        if self.until_idle is not None:
            args += ["--until-idle", str(self.until_idle)]
        args += ["--no-web"] if self.web_port is None else ["--web-port", str(self.web_port)]
        self.last_stats = None
        self._spawn(args, self._environment())
        return self

    def _command(self) -> list[str]:
        """The program and subcommand it runs (a subclass may run another worker)."""
        return [OUTCOMES, "worker"]

    def _environment(self) -> dict[str, str]:
        return {**os.environ, "PYTHONUNBUFFERED": "1", **self.env}

    def _describe(self) -> str:
        return f"worker {self.app_id}"

    def stats(self) -> Json | None:
        """The `/outcomes/stats` page, or None while the web server is not up."""
        assert self.web_port is not None
        url = f"http://127.0.0.1:{self.web_port}/outcomes/stats"
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                stats: Json = json.loads(response.read())
                self.last_stats = stats
                return stats
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            return None

    def _current_log(self) -> str:
        """The log of the current (or last) start."""
        return self.log_path.read_text(errors="replace").rsplit("==== start", 1)[-1]

    def stopping(self) -> bool:
        """Whether the current process has begun to stop (idle stop or a signal)."""
        text = self._current_log()
        return "idle for" in text or "Signal received" in text

    def counts(self) -> tuple[int, int, int] | None:
        """(forwarded, folded, dead letters) of the current process: from its
        `--until-idle` stop line if it logged one, else from the last stats poll."""
        found = _IDLE_LINE.findall(self._current_log())
        if found:
            forwarded, folded, dead = found[-1]
            return int(forwarded), int(folded), int(dead)
        if self.last_stats is None:
            return None
        stats = self.last_stats
        return int(stats["forwarded"]), int(stats["folded"]), int(stats["dead_letters"])

    def progress(self) -> int:
        """Records this process has handled (both stages); 0 until its web page is up."""
        stats = self.stats()
        return 0 if stats is None else int(stats["forwarded"]) + int(stats["folded"])


def wait_for(
    condition: Callable[[], bool], timeout: float, what: str, interval: float = 0.2
) -> None:
    """Poll `condition` until true; fail the test with `what` after `timeout` seconds."""
    retry.wait_for(
        lambda: bool(condition()),  # a count of 0 is not yet, as it was
        timeout=timeout,
        interval=interval,
        what=f"timed out after {timeout}s waiting for {what}",
        error=AssertionError,
    )


def sigkill(worker: WorkerProcess) -> None:
    """SIGKILL: no shutdown, no commit, no flush."""
    worker.signal(signal.SIGKILL)
    worker.wait(30)


# ---------------------------------------------------------------------------------------
# Reading outputs.


@dataclass
class Outputs:
    """Every copy of every output record read, by (kind, id), as raw bytes and decoded."""

    copies: dict[tuple[str, str], list[bytes]] = field(default_factory=dict)
    values: dict[tuple[str, str], Json] = field(default_factory=dict)
    keys: dict[tuple[str, str], str] = field(default_factory=dict)

    def of_kind(self, kind: str) -> dict[str, Json]:
        return {i: v for (k, i), v in self.values.items() if k == kind}

    @property
    def duplicates(self) -> int:
        """Copies beyond the first, over all ids."""
        return sum(len(c) - 1 for c in self.copies.values())

    def conflicting(self) -> list[tuple[str, str]]:
        """Ids whose copies are not all byte-identical."""
        return [key for key, c in self.copies.items() if len(set(c)) > 1]


def read_from(
    config: KafkaConfig,
    start: TopicOffsets,
    keep: Callable[[str, bytes | None], bool],
    timeout: float = 180.0,
) -> list[tuple[str, int, int, bytes | None, bytes]]:
    """(topic, partition, offset, key, value) of every record from `start` up to the
    partitions' ends at the time of the call that `keep` accepts (by topic and key).

    Bounded by the ends, not by a quiet spell: other sessions may write to the shared
    topics all along. Callers make sure what they want is written before calling.
    """
    ends = end_offsets(config, {t for t, _ in start})
    big = {"fetch.message.max.bytes": 8 << 20, "max.partition.fetch.bytes": 8 << 20}
    found: list[tuple[str, int, int, bytes | None, bytes]] = []
    for batch in read_range(config, start, ends, timeout=timeout, consumer_conf=big):
        for msg in batch:
            value = msg.value()
            if value is not None and keep(msg.topic(), msg.key()):
                found.append((msg.topic(), msg.partition(), msg.offset(), msg.key(), value))
    return found


def read_outputs(config: KafkaConfig, marks: Marks, prefix: str | None) -> Outputs:
    """The output records written after `marks` (those keyed by a run under `prefix`,
    or all of them when `prefix` is None), every copy kept."""

    def keep(topic: str, key: bytes | None) -> bool:
        return prefix is None or (key or b"").startswith(prefix.encode())

    codec = output_codec()
    outputs = Outputs()
    for topic, _, _, key, value in read_from(config, marks.outputs, keep):
        kind = KIND_BY_TOPIC[topic]
        body = codec.decode(value).value
        assert isinstance(body, dict)
        ident = (kind, body[ID_FIELDS[kind]])
        outputs.copies.setdefault(ident, []).append(value)
        outputs.values.setdefault(ident, body)
        outputs.keys.setdefault(ident, (key or b"").decode())
    return outputs


def read_run_log(config: KafkaConfig, marks: Marks, prefix: str) -> list[tuple[int, int, bytes]]:
    """(partition, offset, raw event) of the run-log records of runs under `prefix`."""

    def keep(topic: str, key: bytes | None) -> bool:
        return (key or b"").startswith(prefix.encode())

    records = read_from(config, marks.run_log_start(config), keep)
    return sorted((p, o, v) for _, p, o, _, v in records)


# ---------------------------------------------------------------------------------------
# Expectations and checks.


def content(account: Mapping[str, Any]) -> Json:
    """An account revision without its order-dependent bookkeeping fields."""
    return {k: v for k, v in account.items() if k not in BOOKKEEPING}


def _canonical(record: OutputRecord, codec: Codec) -> Json:
    """A reducer output exactly as it reads back from its topic (`output_codec`)."""
    value = codec.decode(codec.encode_output(record)).value
    assert isinstance(value, dict)
    return value


@dataclass
class Expectation:
    """What the reducers, run in process, say the outputs must contain."""

    finals: dict[str, Json]  # run_id -> content of its last revision
    journal: dict[str, Json]  # row_id -> retrieval / injection journal row
    records: list[OutputRecord]


def replay_expectation(events: Iterable[Event]) -> Expectation:
    """Fold canonical JSON events in the given order with `Engine` (as `outcomes replay`)."""
    engine = Engine()
    records: list[OutputRecord] = []
    for event in events:
        records += engine.apply(parse_event(event))
    return _expectation(records)


def run_log_expectation(records: Iterable[tuple[int, int, bytes]], topic: str) -> Expectation:
    """Fold run-log records ((partition, offset, raw Avro) in run-log order) with `Engine`,
    as the worker's fold stage does: a redelivered event adds nothing (a later duplicate
    emits nothing; a record read again after a restart re-emits outputs that are already
    expected), and an event the
    reducer rejects becomes a dead letter naming its run-log position."""
    codec = Codec()
    engine = Engine()
    outputs: list[OutputRecord] = []
    for partition, offset, raw in records:
        event = parse_event(codec.decode(raw).value)
        try:
            outputs += engine.apply(event)
        except InvalidEvent as exc:
            outputs.append(
                dead_letter(
                    reason=exc.reason,
                    message=exc.message,
                    raw=raw,
                    origin_topic=topic,
                    origin_partition=partition,
                    origin_offset=offset,
                    run_id=event.run_id,
                    event_id=event.event_id,
                )
            )
    return _expectation(outputs)


def _expectation(records: list[OutputRecord]) -> Expectation:
    codec = output_codec()
    finals: dict[str, Json] = {}
    latest: dict[str, int] = {}
    journal: dict[str, Json] = {}
    for record in records:
        if record.kind == "account_revision":
            revision = int(record.body["revision"])
            if revision > latest.get(record.key, 0):
                latest[record.key] = revision
                finals[record.key] = content(_canonical(record, codec))
        elif record.kind == "provenance_row" and record.body["row_type"] in JOURNAL_ROW_TYPES:
            journal[record.id] = _canonical(record, codec)
    return Expectation(finals, journal, records)


@dataclass(frozen=True)
class Verdict:
    """What `check_against_replay` counted."""

    runs: int
    revisions: int
    ids: int
    duplicates: int


def stream_finals(outputs: Outputs) -> dict[str, Json]:
    """Per run, the content of its highest revision on the stream."""
    best: dict[str, Json] = {}
    for account in outputs.of_kind("account_revision").values():
        run = account["run_id"]
        if run not in best or account["revision"] > best[run]["revision"]:
            best[run] = account
    return {run: content(account) for run, account in best.items()}


def check_against_replay(outputs: Outputs, expected: Expectation) -> Verdict:
    """Assert the stream's outputs agree with replay over the same events.

    No conflicting duplicates; each run's revisions are 1..n with supersedes n-1; every
    run replay accounts for has one, with an equal final content; journal rows equal as
    sets. The revision sequences themselves may differ (arrival order differs).
    """
    conflicting = outputs.conflicting()
    assert not conflicting, f"{len(conflicting)} ids with differing copies, e.g. {conflicting[:3]}"
    accounts = outputs.of_kind("account_revision")
    by_run: dict[str, list[int]] = {}
    for account in accounts.values():
        by_run.setdefault(account["run_id"], []).append(account["revision"])
        revision = account["revision"]
        assert account["supersedes"] == (revision - 1 if revision > 1 else None), account
        assert account["revision_id"] == f"{account['run_id']}:{revision}"
    gaps = {r: sorted(v) for r, v in by_run.items() if sorted(v) != list(range(1, len(v) + 1))}
    assert not gaps, (
        f"{len(gaps)} runs with non-consecutive revisions, e.g. {list(gaps.items())[:2]}"
    )

    finals = stream_finals(outputs)
    missing = sorted(set(expected.finals) - set(finals))
    assert not missing, f"{len(missing)} runs have no account on the stream, e.g. {missing[:5]}"
    extra = sorted(set(finals) - set(expected.finals))
    assert not extra, f"{len(extra)} runs have accounts replay does not, e.g. {extra[:5]}"
    differing = sorted(r for r in expected.finals if finals[r] != expected.finals[r])
    if differing:
        run = differing[0]
        fields = sorted(
            k
            for k in expected.finals[run].keys() | finals[run].keys()
            if expected.finals[run].get(k) != finals[run].get(k)
        )
        raise AssertionError(
            f"{len(differing)} runs' final accounts differ from replay; first {run}, "
            f"fields {fields}: stream {[finals[run].get(k) for k in fields]} "
            f"replay {[expected.finals[run].get(k) for k in fields]}"
        )

    journal = {
        i: v
        for i, v in outputs.of_kind("provenance_row").items()
        if v["row_type"] in JOURNAL_ROW_TYPES
    }
    assert journal.keys() == expected.journal.keys(), (
        f"journal rows: missing {sorted(expected.journal.keys() - journal.keys())[:5]}, "
        f"extra {sorted(journal.keys() - expected.journal.keys())[:5]}"
    )
    assert journal == expected.journal, "journal rows differ from replay's"
    return Verdict(len(finals), len(accounts), len(outputs.copies), outputs.duplicates)


def check_against_run_log(outputs: Outputs, expected: Expectation, run_log: str) -> None:
    """Assert the stream holds exactly the outputs of folding its own run log: every id,
    nothing else, each with the same content (so no output was lost in a crash).

    Dead letters of the ingest stage (input records that never reached the run log) are
    not the fold's business and are left out.
    """
    codec = output_codec()
    want = {(r.kind, r.id): _canonical(r, codec) for r in expected.records}
    got = {
        key
        for key, value in outputs.values.items()
        if key[0] != "dead_letter" or value["origin_topic"] == run_log
    }
    missing = sorted(want.keys() - got)
    extra = sorted(got - want.keys())
    assert not missing, f"{len(missing)} output ids lost, e.g. {missing[:5]}"
    assert not extra, f"{len(extra)} unexpected output ids, e.g. {extra[:5]}"
    differing = [k for k in want if outputs.values[k] != want[k]]
    assert not differing, f"{len(differing)} outputs differ from the run-log fold: {differing[:3]}"


def concurrent_folders(config: KafkaConfig, marks: Marks) -> list[str]:
    """Other consumer groups that folded the test's run log since `marks`.

    Only possible with a run log shared between app ids (see the module docstring): a
    group that starts at its end while a test's runs are half-way through it folds only
    the rest of those runs and publishes other contents under the same revision ids; its
    copies then show up as conflicting. This names such groups when a check fails.
    """
    admin = AdminClient(dict(config))
    groups = [g.group_id for g in admin.list_consumer_groups().result().valid]
    start = marks.run_log_start(config)
    found = []
    for group in groups:
        if group == marks.group:
            continue
        consumer = Consumer({**config, "group.id": group, "enable.auto.commit": False})
        try:
            committed = committed_offsets(consumer, list(start))
        finally:
            consumer.close()
        if any(committed[tp] > offset for tp, offset in start.items()):
            found.append(group)
    return sorted(found)


# ---------------------------------------------------------------------------------------
# One test's isolated world.


class Harness:
    """A test's run-id prefix, app id, marks and workers; cleans up on exit.

    Use as a context manager: every worker it started is killed (if still running) and
    the app's internal topics are deleted, whatever happened in the test.
    """

    def __init__(self, config: KafkaConfig, bootstrap: str, tmp: Path, tag: str) -> None:
        self.config = config
        self.bootstrap = bootstrap
        self.tmp = tmp
        self.prefix = unique_name(tag)
        self.app_id = unique_name(f"{tag}-app")
        self.codec = Codec()
        self.workers: list[WorkerProcess] = []
        self.marks = isolate_group(config, self.app_id)

    def __enter__(self) -> Harness:
        return self

    def __exit__(self, *exc: object) -> None:
        for worker in self.workers:
            worker.stop()
        delete_app(self.config, self.app_id)

    def worker(
        self,
        name: str = "w",
        until_idle: float | None = None,
        web: bool = False,
        extra: Sequence[str] = (),
    ) -> WorkerProcess:
        """A (not yet started) worker of this test's app, with its own state dir `name`."""
        worker = WorkerProcess(
            app_id=self.app_id,
            state_dir=self.tmp / f"state-{name}",
            bootstrap=self.bootstrap,
            log_path=self.tmp / f"worker-{name}.log",
            until_idle=until_idle,
            web_port=free_port() if web else None,
            extra=extra,
        )
        self.workers.append(worker)
        return worker

    def workload(self, runs: int, padding: int = 0) -> list[Event]:
        return workload(runs, self.prefix, padding)

    def produce(self, events: Sequence[Event]) -> None:
        produce_events(self.config, events, self.codec)

    def outputs(self) -> Outputs:
        return read_outputs(self.config, self.marks, self.prefix)

    @property
    def run_log(self) -> str:
        """The run log this test's workers use."""
        return self.marks.run_log_topic

    def run_log_expectation(self) -> Expectation:
        records = read_run_log(self.config, self.marks, self.prefix)
        return run_log_expectation(records, self.run_log)

    def verify(self, events: Sequence[Event]) -> Verdict:
        """Read the test's outputs and check them against replay of `events` and against
        the fold of the run log (see `check_against_replay`, `check_against_run_log`)."""
        outputs = self.outputs()
        try:
            verdict = check_against_replay(outputs, replay_expectation(events))
            check_against_run_log(outputs, self.run_log_expectation(), self.run_log)
        except AssertionError as exc:
            others = concurrent_folders(self.config, self.marks)
            if others:
                exc.add_note(
                    f"other worker groups folded the shared run log during this test: "
                    f"{others}; a group that started mid-way through these runs publishes "
                    "conflicting copies of their revision ids"
                )
            raise
        return verdict

    def logs(self) -> str:
        """The tail of every worker log, for assertion messages."""
        return "\n".join(f"--- {w.log_path.name}\n{w.tail(20)}" for w in self.workers)


# ---------------------------------------------------------------------------------------
# Knowing when the worker is done with the test's input.


def covered(consumer: Consumer, targets: TopicOffsets) -> bool:
    """Whether the consumer's group has committed at least `targets` everywhere (a
    partition with nothing to read needs no commit: its target is 0)."""
    committed = committed_offsets(consumer, list(targets))
    return all(offset <= 0 or committed[tp] >= offset for tp, offset in targets.items())


class Progress:
    """Follows a group's committed offsets to tell when it has finished the input
    produced so far, through both stages.

    `--until-idle` alone cannot tell: other sessions may keep producing to the shared
    input topics, and then the worker is never idle. The worker commits an input offset
    only after forwarding (or dead-lettering) it, and a run-log offset only after
    publishing its outputs, so: once the committed input offsets reach the input ends
    measured after the test produced, every test event is in the run log; once the
    committed run-log offsets then reach the run log's end, every output is written.
    """

    def __init__(self, config: KafkaConfig, group: str) -> None:
        self.config = config
        self.consumer = Consumer({**config, "group.id": group, "enable.auto.commit": False})
        self.inputs = end_offsets(config, INPUT_TOPICS)
        self.run_log_topic = run_log_of(group)
        self.run_log: TopicOffsets | None = None

    def done(self) -> bool:
        if self.run_log is None:
            if not covered(self.consumer, self.inputs):
                return False
            self.run_log = end_offsets(self.config, [self.run_log_topic])
        return covered(self.consumer, self.run_log)

    def close(self) -> None:
        self.consumer.close()


def finish(workers: Sequence[WorkerProcess], config: KafkaConfig, timeout: float) -> None:
    """Wait until the workers' group has handled everything produced so far, then let
    them stop: by their own `--until-idle` if it comes soon, else by SIGTERM. Every
    worker must exit 0, and the group must have caught up."""
    progress = Progress(config, workers[0].app_id)
    try:
        wait_for(
            lambda: progress.done() or not any(w.alive() for w in workers),
            timeout,
            "the worker group to catch up",
            interval=0.5,
        )
        for worker in workers:
            if worker.alive() and worker.web_port is not None:
                worker.stats()  # the last counts, in case it has to be stopped
        grace = max((w.until_idle or 0.0) for w in workers) + 3.0
        retry.poll_until(lambda: not any(w.alive() for w in workers), timeout=grace, interval=0.2)
        for worker in workers:
            if not worker.stopping():  # a second SIGTERM would kill it mid-shutdown
                worker.signal(signal.SIGTERM)
        for worker in workers:
            code = worker.wait(60)
            assert code == 0, f"worker exited {code}:\n{worker.tail()}"
        assert progress.done(), "the workers stopped before handling all input"
    finally:
        progress.close()
