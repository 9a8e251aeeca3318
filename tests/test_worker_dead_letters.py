"""Bad input goes to the dead-letter topic with its origin and reason; nothing stalls.

Into the partitions a good run's events use, the test first produces records the worker
must reject (undecodable bytes, an unknown schema fingerprint, a schema violation, an
event over the 1 MiB limit, a string over the 64 KiB limit), then the good run's events,
then a record reusing one of its event ids with other content (rejected by the fold
stage, so its origin is the run log). Each rejected record must come out once as a
dead letter naming topic, partition, offset and reason with its raw bytes, and every
good event after it in the same partition must still be applied.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from outcomes.devtools.harness import (
    Harness,
    KafkaConfig,
    finish,
    output_codec,
    produce_raw,
    read_outputs,
    read_run_log,
)
from outcomes.devtools.workload import generate_run
from outcomes.reducers.catalog import EVENT_TOPICS

pytestmark = pytest.mark.slow
TOOL = EVENT_TOPICS["tool.started"]
NARRATIVE = EVENT_TOPICS["narrative.submitted"]
LIFECYCLE = EVENT_TOPICS["run.started"]


def test_bad_records_are_dead_lettered_and_later_events_applied(
    kafka_bootstrap: str, kafka_config: KafkaConfig, tmp_path: Path
) -> None:
    with Harness(kafka_config, kafka_bootstrap, tmp_path, "dl") as harness:
        run_id = f"{harness.prefix}-good"
        good = generate_run(run_id, "clean", padding=3)
        tool_event = next(e for e in good if e["type"] == "tool.started")
        narrative = next(e for e in good if e["type"] == "narrative.submitted")
        # A codec without limits, to write what the pipeline's own codec refuses to.
        loose = output_codec()
        oversize = loose.encode_event({**narrative, "event_id": "big", "text": "x" * 1_060_000})
        assert 1 << 20 < len(oversize) < (1 << 20) + (64 << 10)  # over the limit, under the topic's
        long_string = loose.encode_event({**narrative, "event_id": "long", "text": "y" * 70_000})
        unknown = b"\xc3\x01" + bytes(range(8)) + harness.codec.encode_event(tool_event)[10:]
        violation = harness.codec.encode_event({**tool_event, "event_id": "z" * 200})
        bad = [
            (TOOL, run_id, b"this is not avro", "undecodable"),
            (TOOL, run_id, unknown, "unknown_schema"),
            (TOOL, run_id, violation, "schema_violation"),
            (NARRATIVE, run_id, oversize, "too_large"),
            (NARRATIVE, run_id, long_string, "too_large"),
        ]
        placed_bad = produce_raw(kafka_config, [(t, k, v) for t, k, v, _ in bad])
        harness.produce(good)
        started = next(e for e in good if e["type"] == "run.started")
        conflict = harness.codec.encode_event({**started, "agent": "someone-else"})
        produce_raw(kafka_config, [(LIFECYCLE, run_id, conflict)])

        worker = harness.worker(until_idle=4.0)
        worker.start()
        finish([worker], kafka_config, timeout=180)

        outputs = read_outputs(kafka_config, harness.marks, prefix=None)
        letters = {
            i: v
            for i, v in outputs.of_kind("dead_letter").items()
            if (v["run_id"] or "").startswith(harness.prefix)
            or (v["origin_topic"], v["origin_partition"], v["origin_offset"]) in placed_bad
        }
        mine = {("dead_letter", i) for i in letters}
        assert not [key for key in outputs.conflicting() if key in mine]
        for (topic, _, raw, reason), (t, partition, offset) in zip(bad, placed_bad, strict=True):
            ident = f"{topic}:{partition}:{offset}"
            assert ident in letters, f"no dead letter for {reason} at {ident}"
            letter = letters.pop(ident)
            assert (
                letter["origin_topic"],
                letter["origin_partition"],
                letter["origin_offset"],
            ) == (
                t,
                partition,
                offset,
            )
            assert letter["reason"] == reason, letter["message"]
            assert base64.b64decode(letter["raw"]) == raw
            assert letter["message"]
        # The fold stage's rejection names the run-log position of the conflicting record:
        # one dead letter per copy of it in the run log (another worker group on this
        # broker may have forwarded it too), none for anything else.
        run_log = read_run_log(kafka_config, harness.marks, harness.prefix)
        copies = {f"{harness.run_log}:{p}:{o}" for p, o, raw in run_log if raw == conflict}
        assert copies and letters.keys() == copies, f"{sorted(letters)} vs {sorted(copies)}"
        for letter in letters.values():
            assert letter["reason"] == "event_id_conflict", letter["message"]
            assert (letter["run_id"], letter["event_id"]) == (run_id, started["event_id"])
            assert base64.b64decode(letter["raw"]) == conflict

        # No stall: the good events produced after the bad ones reached the run log and
        # were applied; the run's final account is replay's.
        logged = {harness.codec.decode(raw).value["event_id"] for _, _, raw in run_log}
        assert {e["event_id"] for e in good} <= logged
        verdict = harness.verify(good)
        assert verdict.runs == 1
