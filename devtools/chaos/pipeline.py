"""One chaos scenario's world: its runs, its worker group, its sinks and its ClickHouse.

A `Pipeline` wraps the worker `Harness` (devtools/harness.py: a run-id prefix, an app
id whose group starts at the end of the inputs, worker processes, the output-topic
checks) and adds what the ClickHouse side needs: a chDB directory of its own, a sink
group committed at the end of the output topics before its first sink starts (so it
sinks only what was written after), sink processes, and the record of every input the
broker acknowledged, which is what the checker compares ClickHouse with.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import random
import secrets
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from confluent_kafka import Consumer, KafkaException
from confluent_kafka.admin import AdminClient

from outcomes.common.retry import poll_until
from outcomes.common.settings import Settings
from outcomes.devtools.chaos.brokers import OwnStack
from outcomes.devtools.chaos.checker import Check, Inputs, Position, Report, check, snapshot_of
from outcomes.devtools.chaos.processes import ChaosWorker, SinkProcess
from outcomes.devtools.harness import (
    OUTCOMES,
    Event,
    Harness,
    KafkaConfig,
    commit_offsets,
    covered,
    end_offsets,
    finish,
    free_port,
    produce_acknowledged,
    producer,
    wait_for,
)
from outcomes.devtools.harness import workload as generate
from outcomes.devtools.loadgen import MALFORMED_TOPIC, malformed_payloads
from outcomes.reducers.catalog import EVENT_TOPICS, OUTPUT_TOPICS
from outcomes.streams.topics import read_range

SESSION_TIMEOUT = 6.0
"""The workers' group session (seconds): a SIGKILLed member's partitions move after it."""
STALL_LIMIT = 5.0
"""The longest gap between two outputs a scenario with `stall_limit` tolerates (s)."""


class Pipeline:
    """Workers and sinks of one scenario against one broker (or cluster); use as a
    context manager: every process it started is killed on exit and the app's internal
    topics and groups are deleted, whatever happened."""

    def __init__(self, bootstrap: str, tmp: Path, tag: str, stack: OwnStack | None = None) -> None:
        settings = Settings.load(bootstrap=bootstrap)
        self.stack = stack
        # Internal topics as durable as the cluster allows (one copy per broker, up to 3).
        self.replication = min(3, stack.brokers) if stack is not None else 1
        self._producing: list[threading.Thread] = []
        self.bootstrap = bootstrap
        self.config: KafkaConfig = dict(settings.kafka_config())
        self.tmp = tmp
        self.harness = Harness(self.config, bootstrap, tmp, tag)
        self.prefix = self.harness.prefix
        self.dsn = f"chdb://{tmp.resolve() / 'clickhouse'}"
        self.sink_group = f"{self.harness.app_id}-sink"
        commit_offsets(self.config, self.sink_group, self.harness.marks.outputs)
        self.events: list[Event] = []
        self.poison: set[Position] = set()
        self.purged: set[str] = set()
        self.sinks: list[SinkProcess] = []
        self.faults = 0
        self.notes: list[str] = []
        self.unacked = 0  # records the broker never acknowledged (not expected anywhere)
        self.rng = random.Random()
        # Components broken on purpose (devtools/chaos/hooked.py), to prove the checker.
        self.worker_hook: str | None = None
        # Where workers and sinks connect, when not straight to the broker (a proxy).
        self.client_bootstrap: str | None = None
        self.sink_hook: str | None = None

    def __enter__(self) -> Pipeline:
        return self

    def __exit__(self, *exc: object) -> None:
        for sink in self.sinks:
            sink.stop()
        try:
            self.harness.__exit__(*exc)
        finally:
            admin = AdminClient(dict(self.config))
            for future in admin.delete_consumer_groups([self.sink_group]).values():
                with contextlib.suppress(KafkaException):  # never formed, or gone already
                    future.result()

    # -- processes -----------------------------------------------------------------

    def worker(self, name: str = "w", hook: str | None = None) -> ChaosWorker:
        """A (not yet started) worker with its own state dir `name` and stats page."""
        worker = ChaosWorker(
            app_id=self.harness.app_id,
            state_dir=self.tmp / f"state-{name}",
            bootstrap=self.client_bootstrap or self.bootstrap,
            log_path=self.tmp / f"worker-{name}.log",
            web_port=free_port(),
            extra=(
                "--session-timeout",
                str(SESSION_TIMEOUT),
                "--replication",
                str(self.replication),
            ),
            hook=hook or self.worker_hook,
        )
        self.harness.workers.append(worker)
        return worker

    def sink(self, name: str = "s", hook: str | None = None) -> SinkProcess:
        """A (not yet started) sink of the scenario's sink group into its chDB."""
        sink = SinkProcess(
            self.client_bootstrap or self.bootstrap,
            self.dsn,
            self.sink_group,
            self.tmp / f"sink-{name}.log",
            hook or self.sink_hook,
        )
        self.sinks.append(sink)
        return sink

    # -- load ----------------------------------------------------------------------

    def workload(self, events: int, seed: int = 0) -> list[Event]:
        """At least `events` events from many runs (~10 each), interleaved."""
        runs = max(2, events // 10)
        load = generate(runs, self.prefix, padding=1, seed=seed)
        while len(load) < events:
            runs += (events - len(load)) // 10 + 1
            load = generate(runs, self.prefix, padding=1, seed=seed)
        return load

    def produce(
        self,
        events: Sequence[Event],
        poison_every: int = 0,
        chunk: int = 0,
        pause: float = 0.0,
    ) -> tuple[int, int]:
        """Produce events (and a malformed record after every `poison_every`-th), keyed
        by run, in chunks of `chunk` records `pause` seconds apart; keep what the broker
        acknowledged. Returns (acked, failed)."""
        records: list[tuple[str, str, bytes, Event | None]] = []
        bad = iter(malformed_payloads(self.prefix, len(events) // max(1, poison_every) + 1))
        codec = self.harness.codec
        for index, event in enumerate(events, 1):
            records.append(
                (EVENT_TOPICS[event["type"]], event["run_id"], codec.encode_event(event), event)
            )
            if poison_every and index % poison_every == 0:
                records.append((MALFORMED_TOPIC, f"{self.prefix}-bad", next(bad), None))
        acked = failed = 0
        step = chunk or len(records) or 1
        for start in range(0, len(records), step):
            if start and pause:
                time.sleep(pause)
            a, f = self._produce(records[start : start + step])
            acked, failed = acked + a, failed + f
        self.unacked += failed
        return acked, failed

    def produce_in_background(
        self, events: Sequence[Event], chunk: int = 500, pause: float = 0.0
    ) -> None:
        """`produce` on a thread of its own, in chunks (faults may hit it on the way);
        `finish_workers` waits for it."""
        thread = threading.Thread(target=self.produce, args=(events, 0, chunk, pause), daemon=True)
        thread.start()
        self._producing.append(thread)

    def _produce(self, records: Sequence[tuple[str, str, bytes, Event | None]]) -> tuple[int, int]:
        client = producer({**self.config, "message.timeout.ms": 120_000})
        plain = [(topic, key, value) for topic, key, value, _ in records]
        placed, _ = produce_acknowledged(client, plain, flush_timeout=180)
        for (_, _, _, event), where in zip(records, placed, strict=True):
            if where is None:
                continue  # never acknowledged: expected nowhere (counted in `unacked`)
            if event is None:
                self.poison.add(where)
            else:
                self.events.append(event)
        acked = sum(where is not None for where in placed)
        return acked, len(records) - acked

    # -- finishing and checking ------------------------------------------------------

    def finish_workers(self, workers: Sequence[ChaosWorker], timeout: float = 600) -> None:
        """The live workers handle everything produced so far, then stop cleanly."""
        for thread in self._producing:
            thread.join(timeout)
        live = [w for w in workers if w.alive()]
        if not live:
            raise AssertionError("no worker is running to finish the load")
        finish(live, self.config, timeout)

    def finish_sinks(self, timeout: float = 600) -> None:
        """Once the sink group has committed every output written so far, SIGTERM the
        live sinks; each must exit 0."""
        ends = end_offsets(self.config, OUTPUT_TOPICS.values())
        consumer = Consumer(
            {**self.config, "group.id": self.sink_group, "enable.auto.commit": False}
        )
        try:
            wait_for(
                lambda: covered(consumer, ends) or not any(s.alive() for s in self.sinks),
                timeout,
                "the sink group to commit every output",
                interval=0.5,
            )
        finally:
            consumer.close()
        for sink in self.sinks:
            sink.signal(signal.SIGTERM)
        for sink in self.sinks:
            if sink.process is not None and sink.process.returncode is None:
                code = sink.wait(120)
                if code != 0:
                    raise AssertionError(f"sink exited {code}:\n{sink.tail()}")

    def purge(self, runs: Sequence[str]) -> None:
        """Purge `runs` from ClickHouse with `outcomes purge`, the one removal path (after
        `outcomes clickhouse migrate` configured a credential); no sink may be running."""
        assert not any(s.alive() for s in self.sinks)
        credential = secrets.token_hex(16)
        env = {
            **os.environ,
            "OUTCOMES_PURGE_CREDENTIAL_SHA256": hashlib.sha256(credential.encode()).hexdigest(),
            "OUTCOMES_PURGE_CREDENTIAL": credential,
        }
        commands = [["clickhouse", "migrate"]] + [["purge", "--run", run] for run in runs]
        for command in commands:
            done = subprocess.run(
                [OUTCOMES, *command, "--clickhouse", self.dsn],
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode != 0:
                raise AssertionError(f"outcomes {' '.join(command)}: {done.stderr.strip()}")
        self.purged.update(runs)

    def rewind_sinks(self) -> None:
        """Commit the sink group back at the outputs' ends from before the scenario, so
        that the next sink re-reads everything (no sink of the group may be running)."""
        assert not any(s.alive() for s in self.sinks)
        commit_offsets(self.config, self.sink_group, self.harness.marks.outputs)

    def check(self, stall_limit: float | None = None) -> tuple[Report, float]:
        """The checker's report on ClickHouse, with the output-topic check of the harness
        and the longest output stall (seconds) added."""
        inputs = Inputs(
            self.prefix, tuple(self.events), frozenset(self.poison), frozenset(self.purged)
        )
        report = check(inputs, snapshot_of(self.dsn, self.prefix))
        checks = list(report.checks)
        try:
            verdict = self.harness.verify(self.events)
            checks.append(
                Check(
                    "output topics",
                    verdict.ids,
                    f"output ids equal the run-log fold ({verdict.duplicates} identical copies)",
                )
            )
        except AssertionError as exc:
            first = str(exc).splitlines()[0]
            checks.append(Check("output topics", 0, "output ids", different=(first,)))
        stall = self.longest_stall()
        if stall_limit is not None:
            slow = () if stall <= stall_limit else (f"{stall:.1f}s",)
            checks.append(
                Check(
                    "stall",
                    1,
                    f"longest output gap {stall:.1f}s <= {stall_limit:.0f}s",
                    different=slow,
                )
            )
        notes = list(self.notes)
        if self.unacked:
            notes.append(f"{self.unacked} records were never acknowledged: none is expected")
        return Report(tuple(checks), tuple(notes)), stall

    def longest_stall(self) -> float:
        """The longest gap (seconds) between consecutive outputs of the scenario's runs,
        by their produce timestamps, from its first output to its last."""
        ends = end_offsets(self.config, OUTPUT_TOPICS.values())
        prefix = self.prefix.encode()
        stamps: list[int] = []
        for batch in read_range(self.config, self.harness.marks.outputs, ends):
            for msg in batch:
                if (msg.key() or b"").startswith(prefix):
                    stamps.append(msg.timestamp()[1])
        stamps.sort()
        gaps = [b - a for a, b in itertools.pairwise(stamps)]
        return max(gaps, default=0) / 1000


def wait_progress(worker: ChaosWorker, target: int, timeout: float = 300) -> None:
    """Until the worker process has handled `target` records (both stages) or stopped."""
    wait_for(
        lambda: worker.progress() >= target or not worker.alive(),
        timeout,
        f"{target} records handled by {worker.log_path.name}",
        interval=0.05,
    )


def assignments(worker: ChaosWorker) -> int:
    """How many times the worker's current process has been assigned partitions."""
    if not worker.log_path.exists():
        return 0
    text = worker.log_path.read_text(errors="replace").rsplit("==== start", 1)[-1]
    return text.count("partitions assigned")


def wait_assigned(worker: ChaosWorker, count: int, timeout: float = 120) -> None:
    """Until the worker's current process has had `count` assignments (or stopped)."""
    wait_for(
        lambda: assignments(worker) >= count or not worker.alive(),
        timeout,
        f"assignment {count} of {worker.log_path.name}",
        interval=0.1,
    )


def wait_commits(worker: ChaosWorker, count: int, timeout: float = 120) -> None:
    """Until the worker process has committed offsets `count` times (or stopped)."""

    def committed() -> bool:
        stats = worker.stats()
        return stats is not None and int(stats["commits"]) >= count

    wait_for(
        lambda: committed() or not worker.alive(),
        timeout,
        f"{count} commits by {worker.log_path.name}",
        interval=0.05,
    )


def wait_flushes(sink: SinkProcess, count: int, timeout: float) -> None:
    """Until the sink's current process logged `count` flushes, or `timeout` passed."""

    def flushed_or_stopped() -> bool:
        text = sink.log_path.read_text(errors="replace").rsplit("==== start", 1)[-1]
        return text.count("offsets committed") >= count or not sink.alive()

    poll_until(flushed_or_stopped, timeout=timeout, interval=0.05)
