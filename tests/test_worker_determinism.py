"""`outcomes worker` on a generated fleet: every run's final account equals replay's.

2,000 runs (every workload scenario, ~29k events interleaved as concurrent agents would
publish them) go through one worker subprocess until it is idle; 400 runs for the faust
engine, which is about ten times slower and kept as the reference. The run log's arrival
order differs from the file order, so revision sequences may differ from replay's; the
final account of every run, the journal rows and the absence of conflicting copies may
not. The stream must also be exactly the fold of its own run log, output for output
(faust: of its own store, since it folds most records without a run log; half the runs
are produced with Kafka's murmur2 partitioner and take its one-stage path, the others
with librdkafka's default and go through the run log).
"""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from outcomes.common.output_headers import read_output_headers
from outcomes.devtools.harness import (
    Harness,
    KafkaConfig,
    check_against_replay,
    current_verdicts,
    end_offsets,
    finish,
    narrated_workload,
    produce_events,
    read_run_log,
    replay_expectation,
)
from outcomes.streams.topics import read_range
from tests.store_fold import check_against_store

pytestmark = pytest.mark.slow
PADDING = 3  # extra tool attempts per run: ~14.6 events per run on average


@pytest.mark.parametrize(("engine", "runs"), [("batch", 2_000)])
def test_final_accounts_equal_replay(
    kafka_bootstrap: str, kafka_config: KafkaConfig, tmp_path: Path, engine: str, runs: int
) -> None:
    with Harness(kafka_config, kafka_bootstrap, tmp_path, "det") as harness:
        events = harness.workload(runs, PADDING)
        assert len(events) >= runs * 14
        harness.produce(events)
        worker = harness.worker(until_idle=5.0, extra=("--engine", engine))
        worker.start()
        finish([worker], kafka_config, timeout=300)

        verdict = harness.verify(events)
        assert verdict.runs == runs
        print(f"determinism ({engine}): {len(events)} events, {verdict}")


def test_faust_final_accounts_equal_replay_on_both_paths(
    kafka_bootstrap: str, kafka_config: KafkaConfig, tmp_path: Path
) -> None:
    """The faust engine folds a record where it reads it when its partition is its run's
    run-log partition, else it forwards it to the run log and folds it from there. Both
    paths in one load: every final account is replay's, and every output is the fold of
    the worker's own store."""
    runs = 400
    with Harness(kafka_config, kafka_bootstrap, tmp_path, "det-faust") as harness:
        events = harness.workload(runs, PADDING)
        assert len(events) >= runs * 14
        murmur2 = set(sorted({e["run_id"] for e in events})[::2])
        direct = [e for e in events if e["run_id"] in murmur2]
        produce_events({**kafka_config, "partitioner": "murmur2_random"}, direct, harness.codec)
        # The others as librdkafka's default partitioner places them (CRC32 of the key):
        # where that is not the run's run-log partition, the record takes the run log.
        others = [e for e in events if e["run_id"] not in murmur2]
        produce_events({**kafka_config, "partitioner": "consistent_random"}, others, harness.codec)
        worker = harness.worker(until_idle=5.0, extra=("--engine", "faust"))
        worker.start()
        finish([worker], kafka_config, timeout=300)

        outputs = harness.outputs()
        verdict = check_against_replay(outputs, replay_expectation(events))
        assert verdict.runs == runs
        stored = check_against_store(
            outputs, kafka_config, harness.app_id, harness.prefix, harness.run_log
        )
        # Every output carries the headers the sink reads instead of its Avro value.
        ends = end_offsets(kafka_config, {topic for topic, _ in harness.marks.outputs})
        headed = 0
        for batch in read_range(kafka_config, harness.marks.outputs, ends):
            for msg in batch:
                if (msg.key() or b"").startswith(harness.prefix.encode()):
                    read = read_output_headers(msg.headers())
                    assert read is not None, f"an output on {msg.topic()} without headers"
                    kind, ident, body = read
                    assert orjson.loads(body) == outputs.values[(kind, ident)]
                    headed += 1
        assert headed == sum(len(copies) for copies in outputs.copies.values())
        # Every run produced with murmur2 folds in one stage; of the others, those whose
        # default partition differs from their murmur2 partition take the run log.
        run_log = read_run_log(kafka_config, harness.marks, harness.prefix)
        forwarded = {harness.codec.decode(raw).value["run_id"] for _, _, raw in run_log}
        assert forwarded and not forwarded & murmur2, sorted(forwarded & murmur2)[:3]
        print(f"determinism (faust): {len(events)} events, {stored} stored, {verdict}, "
              f"{len(run_log)} records of {len(forwarded)} runs through the run log")  # fmt: skip


def test_a_thrashing_run_cache_changes_no_output_and_is_reported(
    kafka_bootstrap: str, kafka_config: KafkaConfig, tmp_path: Path
) -> None:
    """300 runs in flight at once through a cache of 12 (split over the run log's
    partitions): nearly every event finds its run evicted and re-folds it from the store.
    The outputs must still be replay's, and the worker must say why it is slow."""
    with Harness(kafka_config, kafka_bootstrap, tmp_path, "thrash") as harness:
        events = harness.workload(300, PADDING)
        harness.produce(events)
        worker = harness.worker(until_idle=5.0, extra=("--cache-runs", "12"))
        worker.start()
        finish([worker], kafka_config, timeout=300)

        verdict = harness.verify(events)
        assert verdict.runs == 300
        log = worker.log_path.read_text(errors="replace")
        rebuilt = [int(m) for m in re.findall(r"rebuilt_runs=(\d+)", log)]
        assert rebuilt and rebuilt[-1] > len(events) // 2, rebuilt
        assert "the run cache is thrashing" in log


def test_current_claim_verdicts_equal_replay(
    kafka_bootstrap: str, kafka_config: KafkaConfig, tmp_path: Path
) -> None:
    """SPEC 6: narratives reach the worker before, between and after the revisions they
    are judged against, in another order than replay's; verdicts settle, so each claim's
    current verdict on the stream is replay's. Earlier settlements are the stream's own,
    and are exactly what folding its run log gives."""
    with Harness(kafka_config, kafka_bootstrap, tmp_path, "claims") as harness:
        events = narrated_workload(350, harness.prefix, PADDING)
        harness.produce(events)
        worker = harness.worker(until_idle=5.0)
        worker.start()
        finish([worker], kafka_config, timeout=300)

        harness.verify(events)  # accounts as replay's; every output as the run log's fold
        outputs = harness.outputs()
        stream = current_verdicts(outputs.of_kind("claim_verdict").values())
        replay = replay_expectation(events).records
        expected = current_verdicts(r.body for r in replay if r.kind == "claim_verdict")
        assert len(expected) > 350
        missing = sorted(expected.keys() - stream.keys())
        assert not missing, f"{len(missing)} claims have no current verdict, e.g. {missing[:3]}"
        differing = sorted(c for c in expected if stream[c] != expected[c])
        assert not differing, (
            f"{len(differing)} current verdicts differ from replay's, e.g. {differing[0]}: "
            f"stream {stream[differing[0]]}, replay {expected[differing[0]]}"
        )
        assert stream.keys() == expected.keys()
        # The stream really did see other orders: some verdicts were settled anew there.
        settled = [v for v in outputs.of_kind("claim_verdict").values() if v["settlement"] > 1]
        assert settled and outputs.of_kind("claim_notification")
        print(f"claims: {len(expected)} current verdicts, {len(settled)} later settlements")
