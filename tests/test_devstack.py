"""`outcomes dev`: layout, clear errors, idempotent up, exact down, persistence.

Tests that start brokers use a private state dir and private ports; they never touch
the shared dev broker beyond asking it for its status.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from confluent_kafka.admin import AdminClient, NewTopic

from outcomes.cli.dev import dev
from outcomes.cli.main import main
from outcomes.common.retry import poll_until, wait_for
from outcomes.common.settings import Settings
from outcomes.devtools import devstack
from outcomes.devtools.devstack import (
    DevStackError,
    Layout,
    RunningNode,
    Stack,
    down,
    fetch_kafka,
    find_java,
    gone,
    is_alive,
    kafka_home,
    min_heap,
    read_stack,
    server_properties,
    up,
)
from outcomes.streams.topics import (
    TOPICS,
    cluster_brokers,
    cluster_health,
    describe_topic_configs,
    ensure_topics,
)
from tests.port_support import free_base_port

# --------------------------------------------------------------------------- pure


def test_single_node_layout() -> None:
    layout = Layout(1)
    assert [(n.node_id, n.port, n.controller_port) for n in layout.nodes] == [(1, 9092, 9192)]
    assert (layout.replication, layout.min_insync, layout.bootstrap) == (1, 1, "127.0.0.1:9092")


def test_three_node_layout_is_replicated() -> None:
    layout = Layout(3)
    assert [n.port for n in layout.nodes] == [9092, 9093, 9094]
    assert [n.controller_port for n in layout.nodes] == [9192, 9193, 9194]
    assert (layout.replication, layout.min_insync) == (3, 2)
    props = server_properties(layout, layout.nodes[1], Path("/data"))
    assert props["controller.quorum.voters"] == (
        "1@127.0.0.1:9192,2@127.0.0.1:9193,3@127.0.0.1:9194"
    )
    assert props["node.id"] == "2"
    assert props["default.replication.factor"] == "3"
    assert props["min.insync.replicas"] == "2"
    assert props["offsets.topic.replication.factor"] == "3"
    assert props["transaction.state.log.min.isr"] == "2"


def test_brokers_listen_on_loopback_only() -> None:
    layout = Layout(3)
    for node in layout.nodes:
        props = server_properties(layout, node, Path("/data"))
        for listener in props["listeners"].split(","):
            assert listener.split("//")[1].startswith("127.0.0.1:"), listener
        assert props["auto.create.topics.enable"] == "false"


@pytest.mark.parametrize("brokers", [0, 2, 4])
def test_only_one_or_three_brokers(brokers: int) -> None:
    with pytest.raises(DevStackError, match="--brokers must be 1 or 3"):
        Layout(brokers)


def test_min_heap() -> None:
    assert min_heap("512m") == "128m"
    assert min_heap("1g") == "256m"
    assert min_heap("128m") == "64m"
    with pytest.raises(DevStackError, match="expected a size like 512m"):
        min_heap("lots")


# --------------------------------------------------------------------------- errors


def test_missing_java_is_one_clear_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    result = CliRunner().invoke(
        main, ["dev", "up", "--state-dir", str(tmp_path)], env={"PATH": str(tmp_path)}
    )
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("outcomes dev up: error: java not found")


def _path_with_only(tmp_path: Path, *tools: str) -> str:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in tools:
        found = subprocess.run(["which", tool], capture_output=True, text=True, check=False)
        if found.returncode == 0:
            (bin_dir / tool).symlink_to(found.stdout.strip())
    return str(bin_dir)


def test_missing_maven_on_an_empty_cache_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", _path_with_only(tmp_path, "java"))
    with pytest.raises(DevStackError, match=r"mvn not found and Kafka .* is not cached"):
        fetch_kafka()


def test_a_complete_cache_needs_no_maven(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Later runs use the cache only: no Maven, hence no network."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    libs = kafka_home() / "libs"
    libs.mkdir(parents=True)
    (libs / ".complete").write_text("kafka_2.13.jar\n")
    monkeypatch.setenv("PATH", str(tmp_path))  # neither mvn nor anything else
    assert fetch_kafka() == libs


# The first thread leaves (pthread_exit) while a second one still runs for a while: the
# process shows `State: Z` although it has not exited, as the JVM does while it exits.
_ZOMBIE_LEADER = """
import ctypes, sys, threading, time
threading.Thread(target=time.sleep, args=(float(sys.argv[1]),)).start()
ctypes.CDLL(None).pthread_exit(None)
"""


def test_a_process_is_gone_only_once_its_last_thread_exited() -> None:
    """`dev down` returns once the brokers are gone; a process whose first thread is a
    zombie while another thread still runs is not gone (a fresh-clone CI run found a
    broker's /proc entry right after `dev down`)."""
    process = subprocess.Popen([sys.executable, "-c", _ZOMBIE_LEADER, "3"])
    try:
        status = Path(f"/proc/{process.pid}/status")
        assert poll_until(lambda: "State:\tZ" in status.read_text(), timeout=10)
        assert "Threads:\t2" in status.read_text()
        assert not gone(process.pid)
        assert poll_until(lambda: gone(process.pid), timeout=15, interval=0.05)
        assert not status.exists()  # reaped: nothing of it is left
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_its_packaged_files_are_found_outside_the_checkout(tmp_path: Path) -> None:
    """The Kafka files devstack ships (pom.xml, log4j2.xml) are read by package name;
    from a directory outside the checkout only `outcomes.…` names resolve (a top-level
    `devtools` did only where the checkout was on sys.path, as under pytest)."""
    names = set(re.findall(r'resources\.files\("([\w.]+)"\)', Path(devstack.__file__).read_text()))
    assert names
    for name in names:
        code = (
            "import importlib.resources as r, sys\n"
            f"kafka = r.files({name!r}) / 'kafka'\n"
            "sys.exit(not ((kafka / 'pom.xml').is_file() and (kafka / 'log4j2.xml').is_file()))"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, f"{name}: {done.stderr}"


def test_down_leaves_a_reused_pid_alone(tmp_path: Path) -> None:
    """A recorded PID now owned by another program is never signalled."""
    settings = Settings.load(state_dir=str(tmp_path))
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        node = RunningNode(
            1, other.pid, 9092, 9192, str(tmp_path / "server.properties"), str(tmp_path), None
        )
        stack = Stack("4.1.1", 1, 9092, "127.0.0.1:9092", 0.0, (node,))
        (tmp_path / "kafka").mkdir()
        (tmp_path / "kafka" / "stack.json").write_text(stack.to_json())
        assert not is_alive(node)
        messages: list[str] = []
        assert down(settings, echo=messages.append) == []
        assert other.poll() is None  # still running
        assert messages == [f"node 1: pid {other.pid} is no longer its broker; leaving it alone"]
        assert read_stack(settings) is None
    finally:
        other.kill()
        other.wait()


# --------------------------------------------------------------------------- real brokers


def _free_base_port(count: int) -> int:
    """A base port with `count` broker and controller ports free above it."""
    return free_base_port(count, 20000, 26000)


@pytest.fixture
def private_state(
    tmp_path: Path, require_service: Callable[[bool, str], None]
) -> Iterator[Settings]:
    """A state dir of its own; whatever the test started there is stopped and purged."""
    try:
        find_java()
    except DevStackError as exc:
        require_service(False, str(exc))
    settings = Settings.load(state_dir=str(tmp_path / "state"))
    yield settings
    down(settings, purge=True, echo=lambda _m: None)


def test_up_is_idempotent_down_is_exact_and_data_persists(private_state: Settings) -> None:
    layout = Layout(1, _free_base_port(1))
    first = up(private_state, layout, echo=lambda _m: None)
    assert first.started
    assert cluster_brokers(layout.bootstrap) == 1
    pids = [n.pid for n in first.stack.nodes]
    # docs/troubleshooting.md says where a broker logs
    logs = private_state.state_dir / "kafka" / f"cluster-1-{layout.base_port}" / "node-1" / "logs"
    assert Path(first.stack.nodes[0].log_dir) == logs and (logs / "server.log").exists()
    guide = (Path(__file__).parent.parent / "docs" / "troubleshooting.md").read_text()
    assert "`<state_dir>/kafka/cluster-<brokers>-<port>[-secure]/node-<id>/logs/`" in guide

    runner = CliRunner()
    state = ["--state-dir", str(private_state.state_dir)]
    again = runner.invoke(dev, ["up", "--port", str(layout.base_port), *state])
    assert again.exit_code == 0, again.output
    assert "already running" in again.output and "nothing to do" in again.output
    assert [n.pid for n in read_stack(private_state).nodes] == pids  # type: ignore[union-attr]

    status = runner.invoke(dev, ["status", *state])
    assert status.exit_code == 0, status.output
    assert "running" in status.output and "1 broker(s) answer" in status.output

    clash = runner.invoke(main, ["dev", "up", "--brokers", "3", *state])
    assert clash.exit_code == 1 and "already runs" in clash.output

    topic = "persisted.across.restart"
    admin = AdminClient({"bootstrap.servers": layout.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result()

    stopped = runner.invoke(dev, ["down", *state])
    assert stopped.exit_code == 0 and f"pid {pids[0]}" in stopped.output
    assert not os.path.exists(f"/proc/{pids[0]}")
    assert cluster_brokers(layout.bootstrap, timeout=1.0) is None
    status = runner.invoke(dev, ["status", *state])
    assert status.exit_code == 1 and "not running" in status.output
    assert "nothing to stop" in runner.invoke(dev, ["down", *state]).output

    second = up(private_state, layout, echo=lambda _m: None)
    assert second.started and not second.downloaded
    # `up` returned only once every partition, the persisted one included, can be read.
    brokers, unreadable = cluster_health(layout.bootstrap) or (0, -1)
    assert (brokers, unreadable) == (1, 0)
    admin = AdminClient({"bootstrap.servers": layout.bootstrap})
    assert topic in admin.list_topics(timeout=10).topics


def test_taken_port_is_a_clear_error(private_state: Settings) -> None:
    base = _free_base_port(1)
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", base))
        squatter.listen()
        result = CliRunner().invoke(
            main, ["dev", "up", "--port", str(base), "--state-dir", str(private_state.state_dir)]
        )
    assert result.exit_code == 1
    assert f"outcomes dev up: error: port 127.0.0.1:{base} is taken" in result.output
    assert read_stack(private_state) is None


@pytest.mark.slow
def test_three_brokers_replicate_with_min_insync_two(private_state: Settings) -> None:
    layout = Layout(3, _free_base_port(3))
    up(private_state, layout, echo=lambda _m: None)
    assert cluster_brokers(layout.bootstrap) == 3
    conf: dict[str, str | int | float | bool] = {"bootstrap.servers": layout.bootstrap}
    table = TOPICS[:1]
    report = ensure_topics(conf, table)
    assert report.brokers == 3 and report.created == [table[0].name]
    admin = AdminClient(conf)
    # The broker that answers may learn of the new topic a moment after the controller.
    topic = wait_for(
        lambda: admin.list_topics(timeout=10).topics.get(table[0].name),
        timeout=60,
        interval=0.2,
        what="the created topic never reached the metadata",
        error=AssertionError,
    )
    assert all(len(p.replicas) == 3 for p in topic.partitions.values())
    configs = describe_topic_configs(admin, [table[0].name])[table[0].name]
    assert configs["min.insync.replicas"] == "2"
    assert not ensure_topics(conf, table).changed


def test_shared_dev_stack_second_up_is_a_noop(
    kafka_bootstrap: str, require_service: Callable[[bool, str], None]
) -> None:
    """`outcomes dev up` against the running shared stack changes nothing."""
    settings = Settings.load()
    stack = read_stack(settings)
    require_service(
        stack is not None and stack.bootstrap == kafka_bootstrap,
        f"the broker at {kafka_bootstrap} was not started by `outcomes dev up` here",
    )
    assert stack is not None
    before = json.loads((settings.state_dir / "kafka" / "stack.json").read_text())
    result = CliRunner().invoke(
        dev, ["up", "--brokers", str(stack.brokers), "--port", str(stack.base_port)]
    )
    assert result.exit_code == 0, result.output
    assert "already running" in result.output
    assert json.loads((settings.state_dir / "kafka" / "stack.json").read_text()) == before
    status = CliRunner().invoke(dev, ["status"])
    assert status.exit_code == 0, status.output
