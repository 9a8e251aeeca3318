"""Each notification once when nothing failed, through the real broker and `outcomes
worker` (both engines): the five-file sample, whose receipt is delivered twice (the same
event in a second run-log record), folded from the app's run log by one worker with no
fault, puts every output on its topic once, as folding its run log in process
(`outcomes replay` of that order) has them: each supersession notification and claim
notification included. Duplicates remain possible after a crash only
(docs/consumers.md); the chaos suite covers that side.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from outcomes.devtools.harness import (
    Harness,
    KafkaConfig,
    existing,
    finish,
    produce_raw,
    read_run_log,
    wait_for,
)
from tests.builders import five_file_events

pytestmark = pytest.mark.slow
NOTIFICATIONS = frozenset({"notification", "claim_notification"})


@pytest.mark.parametrize("engine", ["batch", "faust"])
def test_the_five_file_sample_puts_each_notification_on_its_topic_once(
    kafka_bootstrap: str, kafka_config: KafkaConfig, tmp_path: Path, engine: str
) -> None:
    with Harness(kafka_config, kafka_bootstrap, tmp_path, f"once-{engine}") as harness:
        events = five_file_events(harness.prefix)
        ids = [e["event_id"] for e in events]
        assert len(ids) > len(set(ids)), "the sample holds a redelivered event"
        worker = harness.worker(extra=("--engine", engine))
        worker.start()
        # Into the app's own run log, in the file's order, once the worker made it: the
        # worker folds them as it would have forwarded them, and no other session's
        # worker sees them (every worker group reads the shared input topics, folds what
        # it finds there into its own run log and publishes the same output ids: copies
        # no test could tell from the worker's own).
        wait_for(lambda: existing(kafka_config, harness.run_log), 120, "the app's run log")
        codec = harness.codec
        produce_raw(
            kafka_config, [(harness.run_log, e["run_id"], codec.encode_event(e)) for e in events]
        )
        finish([worker], kafka_config, timeout=240)

        run_log = read_run_log(kafka_config, harness.marks, harness.prefix)
        folded = [codec.decode(raw).value["event_id"] for _, _, raw in run_log]
        assert folded == ids  # the duplicate is a run-log record of its own
        outputs = harness.outputs()
        copies = {ident: len(c) for ident, c in outputs.copies.items() if len(c) > 1}
        assert copies == {}, f"published more than once: {copies}"

        # What the fold of the run log gives in process (here replay of the file).
        expected = harness.run_log_expectation().records
        assert {(o.kind, o.id) for o in expected} == set(outputs.copies)
        notifications = [(o.kind, o.id) for o in expected if o.kind in NOTIFICATIONS]
        assert len(notifications) == 5 and len(set(notifications)) == 5
        run = events[0]["run_id"]
        assert outputs.values[("notification", f"{run}:2")]["kind"] == "account.superseded"
        assert ("claim_notification", f"{run}:2:claims") in outputs.copies
