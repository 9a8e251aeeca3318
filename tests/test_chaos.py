"""The chaos scenarios, short: each through real workers and sinks into chDB on a Kafka
broker of the module's own (port 19092, never the dev broker), each ending with the
ClickHouse checker; and proof that the checker catches a sink without its
read-before-insert and a worker that commits offsets before its outputs are acked.

`outcomes chaos` runs the full versions (20,000 events, three repetitions); here each
scenario has a few hundred events and one repetition. The cluster scenario, which needs
three brokers on the same ports, is in tests/test_chaos_cluster.py. The fault moments
are drawn from a seed printed with every failure.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from outcomes.devtools.chaos.brokers import CHAOS_PORT, OwnStack, own_stack
from outcomes.devtools.chaos.hooked import COMMIT_BEFORE_ACKS, SKIP_READ_BEFORE_INSERT
from outcomes.devtools.chaos.scenarios import SCENARIOS, Outcome, Plan, run_scenario

pytestmark = pytest.mark.slow
SHORT = Plan(events=300, repeats=1)
SINGLE_BROKER = [name for name, s in SCENARIOS.items() if s.brokers == 1]


@pytest.fixture(scope="module")
def chaos_stack(kafka_bootstrap: str) -> Iterator[OwnStack]:
    """A single-broker stack of the module's own, stopped after the module.

    Asks for `kafka_bootstrap` so that the tests are marked `kafka` and, under CI, fail
    (not skip) where the Kafka install the dev broker runs from is missing."""
    state = Path(tempfile.mkdtemp(prefix="chaos-test-", dir="/tmp"))
    with own_stack(1, CHAOS_PORT, state, echo=lambda line: None) as stack:
        yield stack


def _explain(outcome: Outcome) -> str:
    return f"{outcome.scenario} (seed {outcome.seed}):\n{outcome.report}"


@pytest.mark.parametrize("name", SINGLE_BROKER)
def test_scenario_loses_nothing_doubles_nothing(
    name: str, chaos_stack: OwnStack, tmp_path: Path
) -> None:
    outcome = run_scenario(SCENARIOS[name], SHORT, chaos_stack, tmp_path)
    assert outcome.faults > 0, f"{name} injected no fault"
    assert outcome.events >= SHORT.events
    assert outcome.ok, _explain(outcome)
    assert (outcome.report.lost, outcome.report.duplicated, outcome.report.differing) == (0, 0, 0)


def test_checker_catches_a_sink_without_read_before_insert(
    chaos_stack: OwnStack, tmp_path: Path
) -> None:
    outcome = run_scenario(
        SCENARIOS["sink-replay"], SHORT, chaos_stack, tmp_path, sink_hook=SKIP_READ_BEFORE_INSERT
    )
    copies = next(c for c in outcome.report.checks if c.name == "physical copies")
    assert not copies.ok, _explain(outcome)
    assert outcome.report.duplicated > 0
    assert all(":" in row_id for row_id in copies.extra)  # table:row id, by name
    print(copies.line()[:400])


def test_checker_catches_a_worker_committing_before_acks(
    chaos_stack: OwnStack, tmp_path: Path
) -> None:
    outcome = run_scenario(
        SCENARIOS["worker-kill"], SHORT, chaos_stack, tmp_path, worker_hook=COMMIT_BEFORE_ACKS
    )
    assert not outcome.ok, _explain(outcome)
    assert outcome.report.lost + outcome.report.differing > 0
    accounts = next(c for c in outcome.report.checks if c.name == "accounts")
    assert not accounts.ok
    print(accounts.line()[:400])
