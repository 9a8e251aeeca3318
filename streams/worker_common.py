"""What both engines of `outcomes worker` share besides the stages: the worker's options,
its error, and the internal topics of an app id (its run log and the store's changelog).

The engines (streams/worker_batch.py, streams/worker_faust.py) import this module;
it imports neither of them, and `streams/engines.py` picks one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from outcomes.common.settings import Settings
from outcomes.reducers.catalog import DEFAULT_APP_ID, RUN_LOG_TOPIC, run_log_topic
from outcomes.reducers.errors import OutcomesError
from outcomes.streams.topics import TOPICS, ensure_topics

Engine = Literal["batch", "faust"]


@dataclass(frozen=True)
class WorkerOptions:
    """Worker knobs beyond the shared Settings (each has a CLI flag)."""

    app_id: str = DEFAULT_APP_ID
    engine: Engine = "batch"
    partitions: int = 6
    replication: int = 1
    until_idle: float | None = None
    web_port: int = 6066
    web_enabled: bool = True
    cache_runs: int = 10_000
    rocksdb_cache_mib: int = 16
    rocksdb_write_buffer_mib: int = 8
    # faust: attached sends go out at commit time, so commits pace the pipeline (0.2 s).
    # batch: sends go out at once; a commit waits for their acks (0.5 s).
    commit_interval: float | None = None
    commit_every: int = 2_000
    standby_replicas: int = 0
    producer_buffer: int = 10_000
    batch_records: int = 5_000
    session_timeout: float = 10.0

    def commit_seconds(self) -> float:
        if self.commit_interval is not None:
            return self.commit_interval
        return 0.2 if self.engine == "faust" else 0.5


class WorkerError(OutcomesError):
    """The worker could not start or go on. Operators: read the message; check the broker
    and flags. Nothing uncommitted is lost: a restart redoes it."""


def changelog_topic(app_id: str) -> str:
    """The run-events store's changelog (faust's name for a table's, so both engines of
    one app id share it)."""
    return f"{app_id}-run-events-changelog"


def ensure_internal_topics(settings: Settings, options: WorkerOptions, changelog: bool) -> None:
    """Create this app id's run log (and, for the batch engine, the store's changelog) if
    missing, like the declared run log (streams/topics.py).

    Done before the worker starts: a forward to a missing topic must never be the first
    thing to find out. faust declares its changelog itself.
    """
    declared = next(spec for spec in TOPICS if spec.name == RUN_LOG_TOPIC)
    specs = [replace(declared, name=run_log_topic(options.app_id), partitions=options.partitions)]
    if changelog:
        specs.append(
            replace(
                declared,
                name=changelog_topic(options.app_id),
                partitions=options.partitions,
                cleanup_policy="compact",  # keys are unique (run, position): nothing goes
                why="run-events store changelog",
            )
        )
    report = ensure_topics(settings.kafka_config(), tuple(specs))
    if report.drift:
        raise WorkerError(f"internal topics differ from their declaration: {report.drift}")
