"""The cluster chaos scenario, short: a 3-broker stack of the module's own (ports
19092-19094, 3 replicas, min.insync.replicas=2, acks=all producers) with one broker
SIGKILLed and restarted while a few hundred events go through the worker and the sink
into chDB; the ClickHouse checker must find nothing lost, doubled or changed."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from outcomes.devtools.chaos.brokers import CHAOS_PORT, OwnStack, own_stack
from outcomes.devtools.chaos.scenarios import SCENARIOS, Plan, run_scenario

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def chaos_cluster(kafka_bootstrap: str) -> Iterator[OwnStack]:
    """Three brokers of the module's own, stopped after it (`kafka_bootstrap`: see
    tests/test_chaos.py)."""
    state = Path(tempfile.mkdtemp(prefix="chaos-test-cluster-", dir="/tmp"))
    with own_stack(3, CHAOS_PORT, state, echo=lambda line: None) as stack:
        yield stack


@pytest.mark.parametrize("name", [n for n, s in SCENARIOS.items() if s.brokers == 3])
def test_cluster_scenario_loses_nothing(name: str, chaos_cluster: OwnStack, tmp_path: Path) -> None:
    outcome = run_scenario(SCENARIOS[name], Plan(events=300, repeats=1), chaos_cluster, tmp_path)
    assert outcome.faults > 0
    assert outcome.ok, f"{name} (seed {outcome.seed}):\n{outcome.report}"
