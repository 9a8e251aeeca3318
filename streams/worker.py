"""The stream worker: the pure reducers on Kafka, in two stages, on one of two engines.

1. ingest (streams/ingest.py): input topics -> decode and validate -> the run log, keyed
   by `run_id` (invalid records -> the dead-letter topic with topic, partition, offset
   and reason).
2. fold (streams/runfold.py): the run log -> `RunFolder` -> output topics, keyed by
   `run_id`, with each run's applied events in a changelog-backed store
   (streams/store.py).

Both at-least-once: an input's offset is committed only after what it caused was
acknowledged, and outputs have deterministic ids, so a record processed twice re-emits
identical outputs (docs/stream.md). Two engines run these stages:

- `batch` (default, streams/worker_batch.py): confluent-kafka batches, one poll loop;
- `faust` (streams/worker_faust.py): a faust-streaming app: one agent folds records on
  their run's run-log partition where it reads them, a second folds the run log; a
  changelog-backed table.

They share everything but the Kafka plumbing (the stages, the stores, the codec, and
streams/worker_common.py's options, error and internal topics), and one app id's run log
and changelog are laid out the same way by both (murmur2 keys). `run_worker` picks the
engine; no engine imports this module. The `outcomes worker` command is cli/worker.py.
"""

from __future__ import annotations

from outcomes.common.broker import check_broker
from outcomes.common.settings import Settings
from outcomes.streams.worker_batch import run_batch_worker
from outcomes.streams.worker_common import WorkerOptions


def run_worker(settings: Settings, options: WorkerOptions, loglevel: str = "info") -> int:
    """Start the worker on its engine and block until it stops; returns the exit code.

    Fails fast (`BrokerUnreachable`, within `BROKER_CHECK_SECONDS`) if no broker answers.
    """
    check_broker(settings)
    if options.engine == "faust":
        # The faust engine imports faust and aiokafka: importing worker_batch takes
        # 155 ms, worker_batch and worker_faust 340 ms (best of 6, the 2-core dev machine).
        # lazy: saves `outcomes worker --engine batch` (the default) ~0.18 s per start
        from outcomes.streams.worker_faust import run_faust_worker

        return run_faust_worker(settings, options, loglevel)
    return run_batch_worker(settings, options, loglevel)
