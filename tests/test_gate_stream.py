"""The pre-display gate end to end (SPEC 8): the five-file run's events through the real
broker into two `outcomes worker` instances of one app, checks sent to either worker's
door, the owner judging from its own fold state.

- an answer that says "all five files changed, tests pass, draft sent" against the run
  before its late events is sent back for repair, naming the stale test and the unknown
  draft; a truthful repair passes;
- read your writes: a check sent right after the event that changes its verdict (the
  rerun of the unit tests), with that event in its position, sees it, through either
  worker;
- a second chain whose repair still claims the draft was sent is contained.
"""

from __future__ import annotations

import time
from pathlib import Path

import orjson
import pytest

from outcomes.devtools.harness import Harness, KafkaConfig, wait_for
from outcomes.streams.sdk.gate import Checked, GateClient, GateUnavailable
from tests.builders import five_file_events
from tests.cli_support import outcomes
from tests.sink_support import sunk

pytestmark = pytest.mark.slow
TOKEN = "gate-stream-test-token"
OVERCLAIM = "All five files changed, tests pass, and the release-notes draft was sent."
TRUTHFUL = (
    "I changed five files. The unit tests are stale: they were not re-run after the "
    "config edit. The release-notes draft is not confirmed; its outcome is unknown."
)


def first_answer(client: GateClient, run_id: str, text: str, position: list[str]) -> Checked:
    """The first answer that is not `stale` (the workers are still joining their group
    and folding), within a minute."""
    found: list[Checked] = []

    def answered() -> bool:
        try:
            checked = client.check_answer(run_id, text, position=position, budget=5.0)
        except GateUnavailable:
            return False  # no member holds the partition yet
        if checked.decision == "stale":
            return False
        found.append(checked)
        return True

    wait_for(answered, 90, "a check that is not stale", interval=0.5)
    return found[-1]


def test_the_gate_through_kafka_and_two_workers(
    kafka_bootstrap: str, kafka_config: KafkaConfig, tmp_path: Path
) -> None:
    with Harness(kafka_config, kafka_bootstrap, tmp_path, "gate") as harness:
        workers = [harness.worker(name, web=True) for name in ("a", "b")]
        for worker in workers:
            worker.env = {"OUTCOMES_GATE_TOKEN": TOKEN}
            worker.start()
        clients = [GateClient(f"http://127.0.0.1:{w.web_port}", token=TOKEN) for w in workers]

        events = five_file_events(harness.prefix)
        run = events[0]["run_id"]
        finalize = next(i for i, e in enumerate(events) if e["type"] == "finalize.requested")
        before = events[: finalize + 1]
        harness.produce(before)
        position = [e["event_id"] for e in before]

        # Both workers answer: one judges, the other forwards to it.
        for client in clients:
            checked = first_answer(client, run, OVERCLAIM, position)
            assert checked.decision == "repair", checked.body
            said = {c["text"]: c["supported"] for c in checked.contradicted}
            assert set(said) == {"tests pass", "the release-notes draft was sent"}
            assert "has not passed on the final candidate" in said["tests pass"]
            assert "its outcome is unknown" in said["the release-notes draft was sent"]
            assert checked.state_block and checked.state_block.startswith("<outcome-account")

        repaired = clients[1].check_answer(run, TRUTHFUL, position=position, attempt=2)
        assert repaired.decision == "pass", repaired.body

        # Second chain: a repair that still claims the draft was sent is contained.
        contained = clients[0].check_answer(
            run, "Sorry: the release-notes draft was sent.", position=position, attempt=2
        )
        assert contained.decision == "contain"
        assert contained.contained and "its outcome is unknown" in contained.contained

        # Read your writes: the rerun that makes the unit check pass, then at once a
        # check with it in the position, through each worker.
        rerun = next(e for e in events if e["event_id"].endswith("run-five-files-14"))
        harness.produce([rerun])
        began = time.monotonic()
        for client in clients:
            now = client.check_answer(
                run, "All tests pass.", position=[*position, rerun["event_id"]], budget=10.0
            )
            assert now.decision == "pass", now.body
            (claim,) = now.body["claims"]
            assert claim["verdict"] == "supported"
        assert time.monotonic() - began < 20

        # A position naming an event nobody published is stale, never a verdict.
        stale = clients[0].check_answer(
            run, "All tests pass.", position=[f"{harness.prefix}-never"], budget=1.0
        )
        assert stale.decision == "stale" and "claims" not in stale.body
        for worker in workers:
            assert worker.alive(), worker.tail()

        # Every check the owner judged is an `answer.checked` event of the run (SPEC 8,
        # "Record"): folded into `answer_check` rows and sunk, visible in ClickHouse.
        wanted = {("repair", 1), ("pass", 2), ("contain", 2), ("pass", 1)}

        def recorded() -> set[tuple[str, int]]:
            rows = harness.outputs().of_kind("answer_check").values()
            return {(r["decision"], r["attempt"]) for r in rows if r["run_id"] == run}

        wait_for(lambda: wanted <= recorded(), 60, "the checks' answer_check records")
        dsn = f"chdb://{tmp_path / 'chdb'}"
        with sunk(kafka_config, kafka_bootstrap, harness.marks, dsn, "gate"):
            done = outcomes(
                "query",
                f"SELECT decision, attempt FROM answer_checks WHERE run_id = '{run}'",
                "--clickhouse",
                dsn,
                "--format",
                "json",
            )
        assert done.returncode == 0, done.stderr
        rows = {(r["decision"], int(r["attempt"])) for r in orjson.loads(done.stdout)}
        assert wanted <= rows
