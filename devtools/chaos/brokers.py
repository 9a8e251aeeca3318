"""Kafka stacks of the chaos scenarios' own, and the broker faults injected into them.

Scenarios never touch the shared dev broker's processes: they start a stack with
devtools/devstack.py on ports of their own (19092-19094 by default, controllers +100)
under a state dir in /tmp, and always stop it. `restart_node` stops one node (SIGTERM
or SIGKILL), keeps it down for a while and starts it again with exactly the command
line it had, then records its new PID in the stack file so that `down` stops it.

Running on its own stack also isolates a scenario from other worker groups: on a shared
broker any other worker app folding the shared input topics publishes outputs for the
scenario's runs too (same revision ids, other contents when it started mid-way through
a run), which the checker rightly reports as differing.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from confluent_kafka import KafkaException

from outcomes.common.retry import Backoff, poll_until, retry, wait_for
from outcomes.common.settings import Settings
from outcomes.devtools import devstack
from outcomes.devtools.harness import commit_offsets
from outcomes.reducers.catalog import RUN_LOG_TOPIC
from outcomes.streams.topics import cluster_health, ensure_topics

CHAOS_PORT = 19092
"""First broker port of the scenarios' own stacks (19092-19094; controllers +100)."""


@dataclasses.dataclass(frozen=True)
class OwnStack:
    """A running stack of the scenarios' own."""

    settings: Settings
    bootstrap: str
    brokers: int


@contextmanager
def own_stack(
    brokers: int, port: int, state_dir: Path, echo: Callable[[str], None] = print
) -> Iterator[OwnStack]:
    """Start a `brokers`-node stack at `port` with its state under `state_dir`, create the
    pipeline's topics, yield it; stop it and delete its state whatever happens."""
    settings = Settings.load(state_dir=state_dir)
    layout = devstack.Layout(brokers, port)
    try:
        devstack.up(settings, layout, echo=echo)
        client = Settings.load(bootstrap=layout.bootstrap)
        ensure_topics(client.kafka_config())
        _wait_whole(layout.bootstrap, brokers, 60, "the new topics to get leaders")
        _wait_coordinator(client.kafka_config(), 60)
        yield OwnStack(settings, layout.bootstrap, brokers)
    finally:
        devstack.down(settings, purge=True, echo=echo)
        shutil.rmtree(state_dir, ignore_errors=True)


def _argv(pid: int) -> list[str]:
    raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    return [part.decode() for part in raw.split(b"\0") if part]


def restart_node(
    stack: OwnStack, node_id: int, *, kill: bool, down_seconds: float, ready_timeout: float = 120
) -> None:
    """Stop node `node_id` (SIGKILL if `kill`, else SIGTERM), wait `down_seconds`, start
    it again with its former command line; return once the cluster is whole again."""
    recorded = devstack.read_stack(stack.settings)
    assert recorded is not None, "the chaos stack is not running"
    node = next(n for n in recorded.nodes if n.node_id == node_id)
    argv = _argv(node.pid)
    os.kill(node.pid, signal.SIGKILL if kill else signal.SIGTERM)
    # Gone means every thread of it, so the ports are free for the restart.
    if not poll_until(lambda: devstack.gone(node.pid), timeout=60):
        os.kill(node.pid, signal.SIGKILL)
        wait_for(
            lambda: devstack.gone(node.pid),
            timeout=60,
            what=f"node {node_id} (pid {node.pid}) still running 60 s after SIGKILL",
            error=AssertionError,
        )
    time.sleep(down_seconds)
    with (Path(node.log_dir) / "stdout.log").open("ab") as out:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    start = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    fresh = dataclasses.replace(node, pid=process.pid, proc_start=start)
    nodes = tuple(fresh if n.node_id == node_id else n for n in recorded.nodes)
    devstack.stack_file(stack.settings).write_text(
        dataclasses.replace(recorded, nodes=nodes).to_json()
    )
    _wait_whole(stack.bootstrap, stack.brokers, ready_timeout, f"node {node_id} to rejoin")


def _wait_coordinator(config: Mapping[str, str], timeout: float) -> None:
    """Until a group offset commit succeeds (a new cluster first loads its offsets topic)."""
    retry(
        lambda: commit_offsets(config, "chaos-warm-up", {(RUN_LOG_TOPIC, 0): 0}),
        retry_if=lambda exc: isinstance(exc, KafkaException),
        timeout=timeout,
        backoff=Backoff.fixed(0.5),
    )


def _wait_whole(bootstrap: str, brokers: int, timeout: float, what: str) -> None:
    """Until every broker answers and every partition's end offset is readable."""
    wait_for(
        lambda: cluster_health(bootstrap, timeout=2.0) == (brokers, 0),
        timeout=timeout,
        interval=0.3,
        what=f"timed out after {timeout:.0f}s waiting for {what}",
        error=AssertionError,
    )
