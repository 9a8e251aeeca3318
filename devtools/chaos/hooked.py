"""`python -m outcomes.devtools.chaos.hooked sink|worker ...`: the real sink and worker of a chaos
scenario, with the scenario's hooks applied before they start.

The sink always runs with ClickHouse's background merges stopped (`SYSTEM STOP MERGES`
on its connection, once the schema is there): ReplacingMergeTree merges remove a second
physical copy of a row, so with merges running a duplicated insert could vanish before
the checker counts rows without FINAL. Everything else is `outcomes.sinks.consumer.run_sink`
and `outcomes.streams.worker.run_worker` as `outcomes sink` and `outcomes worker` call them.

`OUTCOMES_CHAOS_HOOK` breaks a component on purpose, to prove the checker catches it:

- `sink-skips-read-before-insert`: the writer never asks which rows are stored already
  (sinks/writer.py's second layer), so a redelivered batch is inserted again.
- `worker-commits-before-acks`: the batch worker commits its input and run-log offsets
  without waiting for the producer's acknowledgements, and the producer holds records
  for a second before sending, so a SIGKILL loses outputs whose inputs are committed.

Neither hook exists outside this module; sinks/ and streams/ are unchanged.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from confluent_kafka import Producer, TopicPartition

import outcomes.streams.worker_batch as worker_batch
from outcomes.common.settings import Settings
from outcomes.reducers.catalog import RUN_LOG_TOPIC
from outcomes.sinks.clickhouse import Connection
from outcomes.sinks.consumer import SinkConfig, run_sink
from outcomes.sinks.rows import Row
from outcomes.sinks.writer import ClickHouseWriter
from outcomes.streams.topics import TOPICS
from outcomes.streams.worker import run_worker
from outcomes.streams.worker_common import WorkerOptions

HOOK_ENV = "OUTCOMES_CHAOS_HOOK"
SKIP_READ_BEFORE_INSERT = "sink-skips-read-before-insert"
COMMIT_BEFORE_ACKS = "worker-commits-before-acks"
HOOKS = (SKIP_READ_BEFORE_INSERT, COMMIT_BEFORE_ACKS)


def _stop_merges() -> None:
    """Every ClickHouseWriter of this process stops background merges once it opens."""
    opened = ClickHouseWriter.__init__

    def init(self: ClickHouseWriter, dsn: str, **kwargs: Any) -> None:
        opened(self, dsn, **kwargs)
        conn: Connection = self.conn
        conn.command("SYSTEM STOP MERGES")

    ClickHouseWriter.__init__ = init  # type: ignore[method-assign]


def _skip_read_before_insert() -> None:
    def nothing_stored(
        self: ClickHouseWriter, rows: Mapping[str, Sequence[Row]]
    ) -> dict[str, set[str]]:
        return {table: set() for table in rows}

    ClickHouseWriter._stored_ids = nothing_stored  # type: ignore[method-assign]


def _commit_before_acks() -> None:
    def slow_producer(config: dict[str, Any]) -> Producer:
        return Producer({**config, "linger.ms": 1000})

    def commit(self: worker_batch.BatchWorker) -> None:
        for store in self.stores.values():
            store.persist()
        if not self.offsets:
            return
        offsets = [TopicPartition(t, p, o) for (t, p), o in self.offsets.items()]
        self.offsets.clear()
        self.consumer.commit(offsets=offsets, asynchronous=False)
        self.counters.commits += 1

    worker_batch.Producer = slow_producer  # type: ignore[misc,assignment]
    worker_batch.BatchWorker.commit = commit  # type: ignore[method-assign]


def _sink(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="hooked sink")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--clickhouse", required=True)
    parser.add_argument("--group-id", required=True)
    parser.add_argument("--until-idle", type=float, default=None)
    parser.add_argument("--batch-rows", type=int, default=SinkConfig.batch_records)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    settings = Settings.load(bootstrap=args.bootstrap, clickhouse=args.clickhouse)
    config = SinkConfig(
        group_id=args.group_id,
        until_idle=args.until_idle,
        batch_records=args.batch_rows,
        query_port=None,
    )
    stats = run_sink(settings, config)
    print(stats.summary(), file=sys.stderr)
    return 0


def _worker(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="hooked worker")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--app-id", required=True)
    parser.add_argument("--state-dir", required=True, type=Path)
    parser.add_argument("--session-timeout", type=float, default=10.0)
    parser.add_argument("--replication", type=int, default=1)
    parser.add_argument("--until-idle", type=float, default=None)
    parser.add_argument("--web-port", type=int, default=None)
    parser.add_argument("--loglevel", default="info")
    parser.add_argument("--no-web", action="store_true")
    args = parser.parse_args(argv)
    settings = Settings.load(bootstrap=args.bootstrap, state_dir=args.state_dir)
    run_log = next(spec for spec in TOPICS if spec.name == RUN_LOG_TOPIC)
    options = WorkerOptions(
        app_id=args.app_id,
        partitions=run_log.partitions,
        until_idle=args.until_idle,
        web_port=args.web_port or 0,
        web_enabled=args.web_port is not None and not args.no_web,
        session_timeout=args.session_timeout,
        replication=args.replication,
    )
    return run_worker(settings, options, args.loglevel)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    hook = os.environ.get(HOOK_ENV, "")
    if hook and hook not in HOOKS:
        raise SystemExit(f"{HOOK_ENV}={hook!r}: expected one of {', '.join(HOOKS)}")
    if not args or args[0] not in ("sink", "worker"):
        raise SystemExit("usage: python -m outcomes.devtools.chaos.hooked sink|worker [options]")
    if args[0] == "sink":
        _stop_merges()
        if hook == SKIP_READ_BEFORE_INSERT:
            _skip_read_before_insert()
        return _sink(args[1:])
    if hook == COMMIT_BEFORE_ACKS:
        _commit_before_acks()
    return _worker(args[1:])


if __name__ == "__main__":
    raise SystemExit(main())
