"""The chaos scenarios: a load through real workers and sinks into ClickHouse, faults
injected on the way, the checker at the end (docs/reliability.md).

Each scenario is a function of a `Pipeline` (its world) and a `Plan` (how many events,
how many repetitions of the fault, the seed that drew the moments). Scenarios that
touch only workers and sinks run against any broker (the dev stack); those that stop
brokers start a stack of their own on ports 19092-19094 (devtools/chaos/brokers.py) and
always stop it.
"""

from __future__ import annotations

import random
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import KafkaException

from outcomes.devtools.chaos.brokers import CHAOS_PORT, OwnStack, own_stack, restart_node
from outcomes.devtools.chaos.checker import Check, Report
from outcomes.devtools.chaos.pipeline import (
    SESSION_TIMEOUT,
    STALL_LIMIT,
    Pipeline,
    assignments,
    wait_assigned,
    wait_commits,
    wait_flushes,
    wait_progress,
)
from outcomes.devtools.chaos.proxy import PROXY_PORT, CutProxy, proxied_listener
from outcomes.devtools.devstack import read_stack
from outcomes.devtools.harness import sigkill
from outcomes.reducers.errors import OutcomesError
from outcomes.sinks.consumer import SESSION_TIMEOUT_MS


class ChaosFailed(OutcomesError):
    """A chaos scenario's check failed: ClickHouse lost, doubled or changed something.

    Operators: the verdict lines above name the check and the ids; rerun the scenario
    with `--seed` and `--keep DIR` to keep its worker and sink logs and its chDB."""


@dataclass(frozen=True)
class Plan:
    """How big a scenario's run is: events, fault repetitions, the seed of its moments."""

    events: int = 20_000
    repeats: int = 3
    seed: int = 0


@dataclass(frozen=True)
class Outcome:
    """What one scenario did and what the checker found."""

    scenario: str
    events: int
    faults: int
    report: Report
    stall: float
    seconds: float
    seed: int

    @property
    def ok(self) -> bool:
        return self.report.ok


Play = Callable[[Pipeline, Plan], None]


@dataclass(frozen=True)
class Scenario:
    name: str
    summary: str
    play: Play
    stall_limit: float | None = None
    brokers: int = 1
    """Nodes of the scenario's own stack (devtools/chaos/brokers.py)."""


def _kill_target(pipe: Pipeline, plan: Plan) -> int:
    """A random number of records (both stages) to let a worker handle before a fault."""
    return pipe.rng.randint(max(1, plan.events // 12), max(2, plan.events // 4))


def worker_kill(pipe: Pipeline, plan: Plan) -> None:
    """SIGKILL the worker `repeats` times mid-load, restarting it each time."""
    pipe.produce(pipe.workload(plan.events, plan.seed))
    sink = pipe.sink().start()
    worker = pipe.worker()
    for _ in range(plan.repeats):
        worker.start()
        wait_progress(worker, _kill_target(pipe, plan))
        wait_commits(worker, 1)
        time.sleep(pipe.rng.uniform(0.0, 0.3))
        sigkill(worker)
        pipe.faults += 1
    worker.start()
    pipe.finish_workers([worker])
    assert sink.alive()
    pipe.finish_sinks()


def sink_kill(pipe: Pipeline, plan: Plan) -> None:
    """SIGKILL the sink `repeats` times, each time after a random number of flushes and
    a random instant (often mid-batch), restarting it each time."""
    pipe.produce(pipe.workload(plan.events, plan.seed))
    worker = pipe.worker().start()
    sink = pipe.sink()
    for _ in range(plan.repeats):
        sink.start()
        wait_flushes(sink, pipe.rng.randint(1, 4), timeout=20)
        time.sleep(pipe.rng.uniform(0.0, 0.5))
        sink.kill()
        pipe.faults += 1
    sink.start()
    pipe.finish_workers([worker])
    pipe.finish_sinks()


def both_kill(pipe: Pipeline, plan: Plan) -> None:
    """SIGKILL the worker and the sink at the same instant, `repeats` times."""
    pipe.produce(pipe.workload(plan.events, plan.seed))
    worker = pipe.worker()
    sink = pipe.sink()
    for _ in range(plan.repeats):
        worker.start()
        sink.start()
        wait_progress(worker, _kill_target(pipe, plan))
        time.sleep(pipe.rng.uniform(0.0, 0.3))
        worker.signal(signal.SIGKILL)
        sink.signal(signal.SIGKILL)
        worker.wait(30)
        sink.wait(30)
        pipe.faults += 2
    worker.start()
    sink.start()
    pipe.finish_workers([worker])
    pipe.finish_sinks()


SLICES = 5
SINK_SESSION = SESSION_TIMEOUT_MS / 1000


def sink_replay(pipe: Pipeline, plan: Plan) -> None:
    """The sink group's offsets set back to the scenario's start `repeats` times (a lost
    offsets topic, a new group on old data), and a sink with another batch size replays
    everything: it must add no row."""
    worker = pipe.worker().start()
    sink = pipe.sink().start()
    events = pipe.workload(plan.events, plan.seed)
    # In slices a second apart, so the first pass writes several batches and the replay,
    # which finds everything there at once, groups the rows into other batches.
    for index in range(SLICES):
        pipe.produce(events[index * len(events) // SLICES : (index + 1) * len(events) // SLICES])
        time.sleep(1.0)
    pipe.finish_workers([worker])
    for _ in range(plan.repeats):
        pipe.finish_sinks()
        pipe.rewind_sinks()
        pipe.faults += 1
        sink.batch_rows = pipe.rng.randint(20, 200)
        sink.start()
    pipe.finish_sinks()


def purge_replay(pipe: Pipeline, plan: Plan) -> None:
    """`repeats` runs purged with `outcomes purge` once sunk, then the sink group rewound
    and everything replayed: the purged runs must not come back, the others must be whole."""
    worker = pipe.worker().start()
    sink = pipe.sink().start()
    events = pipe.workload(plan.events, plan.seed)
    pipe.produce(events)
    pipe.finish_workers([worker])
    pipe.finish_sinks()
    runs = sorted({e["run_id"] for e in events})
    pipe.purge(pipe.rng.sample(runs, min(plan.repeats, len(runs))))
    pipe.faults += len(pipe.purged)
    pipe.rewind_sinks()
    sink.batch_rows = pipe.rng.randint(20, 200)
    sink.start()
    pipe.finish_sinks()


def _spread(pipe: Pipeline, plan: Plan, seconds: float) -> None:
    """Produce the load in the background in ten slices spread over about `seconds`,
    so that every phase of a scenario finds input to work on."""
    events = pipe.workload(plan.events, plan.seed)
    pipe.produce_in_background(events, chunk=len(events) // 10 + 1, pause=seconds / 10)


def rebalance(pipe: Pipeline, plan: Plan) -> None:
    """Three rebalances under load: a worker joins, one is SIGKILLed, one leaves
    gracefully (SIGTERM), then the survivor finishes."""
    pipe.sink().start()
    first = pipe.worker("a").start()
    wait_assigned(first, 1)
    _spread(pipe, plan, seconds=4 * SESSION_TIMEOUT)
    wait_progress(first, _kill_target(pipe, plan))
    second = pipe.worker("b").start()  # joins
    wait_assigned(second, 1)
    pipe.faults += 1
    sigkill(first)  # dies without leaving: its partitions move after the session
    pipe.faults += 1
    third = pipe.worker("c").start()
    wait_assigned(third, 1, timeout=SESSION_TIMEOUT * 10)
    second.signal(signal.SIGTERM)  # leaves gracefully
    code = second.wait(120)
    assert code == 0, f"worker b exited {code}:\n{second.tail()}"
    pipe.faults += 1
    pipe.finish_workers([third])
    pipe.finish_sinks()


def duplicates(pipe: Pipeline, plan: Plan) -> None:
    """Every input event produced twice: the second copies in another order and in
    batches of random sizes, while the worker and sink are already busy."""
    events = pipe.workload(plan.events, plan.seed)
    pipe.produce(events)
    worker = pipe.worker().start()
    pipe.sink().start()
    again = list(events)
    pipe.rng.shuffle(again)
    start = 0
    while start < len(again):
        size = pipe.rng.randint(1, max(2, len(again) // 5))
        pipe.produce(again[start : start + size])
        start += size
    pipe.faults += len(again)
    pipe.finish_workers([worker])
    pipe.finish_sinks()


def poison(pipe: Pipeline, plan: Plan) -> None:
    """1% of the records are malformed (not Avro): each must become one dead letter,
    and the outputs must never stop for more than STALL_LIMIT seconds."""
    pipe.produce(pipe.workload(plan.events, plan.seed), poison_every=100)
    pipe.faults += len(pipe.poison)
    worker = pipe.worker().start()
    pipe.sink().start()
    pipe.finish_workers([worker])
    pipe.finish_sinks()


def state_wipe(pipe: Pipeline, plan: Plan) -> None:
    """The worker's state directory deleted between two runs: the second half of the
    load is folded on a store rebuilt from the changelog. Repeated `repeats` times, each
    time with another share of the load."""
    events = pipe.workload(plan.events, plan.seed)
    pipe.sink().start()
    worker = pipe.worker()
    parts = plan.repeats + 1
    for index in range(parts):
        pipe.produce(events[index * len(events) // parts : (index + 1) * len(events) // parts])
        worker.start()
        pipe.finish_workers([worker])
        if index < parts - 1:
            shutil.rmtree(worker.state_dir)
            pipe.faults += 1
    pipe.finish_sinks()


def zombie(pipe: Pipeline, plan: Plan) -> None:
    """A worker SIGSTOPped past its session timeout while the other takes over its
    partitions, then SIGCONTed: its late writes must change nothing. `repeats` times,
    the two workers taking turns at being the zombie."""
    pipe.sink().start()
    workers = [pipe.worker("a").start(), pipe.worker("b").start()]
    for worker in workers:
        wait_assigned(worker, 1)
    _spread(pipe, plan, seconds=plan.repeats * (SESSION_TIMEOUT + 6.0))
    for index in range(plan.repeats):
        frozen, other = workers[index % 2], workers[(index + 1) % 2]
        wait_progress(frozen, 1)
        before = assignments(other)
        frozen.signal(signal.SIGSTOP)
        pipe.faults += 1
        stopped = time.monotonic()
        wait_assigned(other, before + 1, timeout=SESSION_TIMEOUT * 10)  # took over
        time.sleep(max(0.0, SESSION_TIMEOUT + 1.0 - (time.monotonic() - stopped)))
        frozen.signal(signal.SIGCONT)
        wait_assigned(frozen, assignments(frozen) + 1, timeout=SESSION_TIMEOUT * 10)
        if not frozen.alive():
            pipe.notes.append(f"the zombie exited {frozen.wait(5)} after SIGCONT")
            frozen.start()
    pipe.finish_workers(workers)
    pipe.finish_sinks()


def broker_restart(pipe: Pipeline, plan: Plan) -> None:
    """The single broker stopped (SIGTERM) and started again `repeats` times while the
    load is produced and processed; producers, worker and sink ride it out."""
    assert pipe.stack is not None, "broker scenarios run on a stack of their own"
    worker = pipe.worker().start()
    pipe.sink().start()
    pipe.produce_in_background(pipe.workload(plan.events, plan.seed))
    for index in range(plan.repeats):
        wait_progress(worker, _kill_target(pipe, plan) * (index + 1))
        restart_node(pipe.stack, 1, kill=False, down_seconds=pipe.rng.uniform(2.0, 5.0))
        pipe.faults += 1
    pipe.finish_workers([worker])
    pipe.finish_sinks()


def cluster_kill(pipe: Pipeline, plan: Plan) -> None:
    """On a 3-broker cluster (3 replicas, min.insync.replicas=2, acks=all producers), one
    broker SIGKILLed and restarted `repeats` times while the load is produced."""
    assert pipe.stack is not None and pipe.stack.brokers == 3, "needs the 3-broker stack"
    worker = pipe.worker().start()
    pipe.sink().start()
    pipe.produce_in_background(pipe.workload(plan.events, plan.seed))
    for index in range(plan.repeats):
        wait_progress(worker, _kill_target(pipe, plan) * (index + 1))
        node = pipe.rng.randint(1, 3)
        restart_node(pipe.stack, node, kill=True, down_seconds=pipe.rng.uniform(3.0, 8.0))
        pipe.faults += 1
    pipe.finish_workers([worker])
    pipe.finish_sinks()


def network_cut(pipe: Pipeline, plan: Plan) -> None:
    """The network between the broker and its worker and sink cut for longer than their
    sessions, then restored, `repeats` times: they reach the broker only through a
    fault-injecting TCP proxy on loopback, which the broker advertises on a listener of
    its own; the load is produced straight to the broker meanwhile."""
    stack = pipe.stack
    assert stack is not None and stack.brokers == 1, "needs the single-broker stack"
    recorded = read_stack(stack.settings)
    assert recorded is not None
    node = recorded.nodes[0]
    proxied_listener(Path(node.config), node.port + 1, PROXY_PORT)
    restart_node(stack, node.node_id, kill=False, down_seconds=0.0)
    with CutProxy(PROXY_PORT, node.port + 1) as proxy:
        pipe.client_bootstrap = f"127.0.0.1:{PROXY_PORT}"
        worker = pipe.worker().start()
        pipe.sink().start()
        pipe.produce_in_background(pipe.workload(plan.events, plan.seed))
        for index in range(plan.repeats):
            wait_progress(worker, _kill_target(pipe, plan) * (index + 1))
            proxy.cut()
            pipe.faults += 1
            # Longer than the worker's session and the sink's (10 s).
            time.sleep(SINK_SESSION + pipe.rng.uniform(2.0, 5.0))
            proxy.restore()
        pipe.finish_workers([worker])
        pipe.finish_sinks()


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario("worker-kill", "worker SIGKILLed mid-load, restarted", worker_kill),
        Scenario("sink-kill", "sink SIGKILLed mid-batch, restarted", sink_kill),
        Scenario("sink-replay", "the sink group rewound to the start", sink_replay),
        Scenario("purge-replay", "runs purged, then the sink replays", purge_replay),
        Scenario("both-kill", "worker and sink SIGKILLed at once, restarted", both_kill),
        Scenario("rebalance", "a worker joins, one is SIGKILLed, one leaves", rebalance),
        Scenario("duplicates", "every input produced twice, reordered", duplicates),
        Scenario("poison", "1% malformed records", poison, stall_limit=STALL_LIMIT),
        Scenario("state-wipe", "worker state dir deleted between runs", state_wipe),
        Scenario("zombie", "worker SIGSTOPped past its session, SIGCONTed", zombie),
        Scenario("network-cut", "worker and sink cut off the broker, then back", network_cut),
        Scenario("broker-restart", "the single broker restarted under load", broker_restart),
        Scenario(
            "cluster-kill",
            "one of 3 brokers SIGKILLed and restarted under load",
            cluster_kill,
            brokers=3,
        ),
    )
}


def run_scenario(
    scenario: Scenario,
    plan: Plan,
    stack: OwnStack,
    workdir: Path | None = None,
    *,
    worker_hook: str | None = None,
    sink_hook: str | None = None,
) -> Outcome:
    """Run one scenario on `stack` in a temporary directory (under `workdir` if given,
    and kept there; else deleted after) and check ClickHouse. The hooks break the worker
    or the sink on purpose (devtools/chaos/hooked.py)."""
    seed = plan.seed or random.SystemRandom().randrange(1, 2**31)
    plan = Plan(plan.events, plan.repeats, seed)
    t0 = time.monotonic()
    with (
        _directory(workdir, scenario.name) as tmp,
        Pipeline(stack.bootstrap, tmp, scenario.name, stack) as pipe,
    ):
        pipe.rng = random.Random(seed)
        pipe.worker_hook, pipe.sink_hook = worker_hook, sink_hook
        scenario.play(pipe, plan)
        report, stall = pipe.check(scenario.stall_limit)
        events = len(pipe.events) + len(pipe.poison)
        return Outcome(
            scenario.name, events, pipe.faults, report, stall, time.monotonic() - t0, seed
        )


def run_all(
    names: Sequence[str],
    plan: Plan,
    *,
    port: int = CHAOS_PORT,
    workdir: Path | None = None,
    echo: Callable[[str], None] = print,
    done: Callable[[Outcome], None] = lambda outcome: None,
) -> list[Outcome]:
    """Run the named scenarios in order, each on a stack of the scenarios' own at `port`
    (one single-broker stack shared by those that need one broker, a 3-broker stack for
    the others; each stopped once its scenarios are done). `done` sees each outcome."""
    outcomes: list[Outcome] = []
    for brokers in (1, 3):
        group = [SCENARIOS[n] for n in names if SCENARIOS[n].brokers == brokers]
        if not group:
            continue
        state = Path(tempfile.mkdtemp(prefix=f"chaos-{brokers}b-", dir="/tmp"))
        with own_stack(brokers, port, state, echo=echo) as stack:
            for scenario in group:
                seed = plan.seed or random.SystemRandom().randrange(1, 2**31)
                try:
                    outcome = run_scenario(
                        scenario, Plan(plan.events, plan.repeats, seed), stack, workdir
                    )
                except (AssertionError, OutcomesError, KafkaException, OSError) as exc:
                    outcome = _failed(scenario, seed, exc)
                outcomes.append(outcome)
                done(outcome)
    return outcomes


def _failed(scenario: Scenario, seed: int, exc: BaseException) -> Outcome:
    """The outcome of a scenario that could not finish: FAIL, with the reason."""
    reason = " ".join(str(exc).split())[:500] or type(exc).__name__
    check = Check("scenario", 0, "ran to the end", different=(reason,))
    return Outcome(scenario.name, 0, 0, Report((check,)), 0.0, 0.0, seed)


class _directory:
    """A scenario's directory: kept under `workdir`, or a temporary one deleted after."""

    def __init__(self, workdir: Path | None, name: str) -> None:
        self.workdir = workdir
        self.name = name
        self.tmp: tempfile.TemporaryDirectory[str] | None = None

    def __enter__(self) -> Path:
        if self.workdir is not None:
            path = Path(tempfile.mkdtemp(prefix=f"{self.name}-", dir=self.workdir))
            return path
        self.tmp = tempfile.TemporaryDirectory(prefix=f"chaos-{self.name}-")
        return Path(self.tmp.name)

    def __exit__(self, *exc: object) -> None:
        if self.tmp is not None:
            self.tmp.cleanup()
