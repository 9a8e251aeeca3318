"""`outcomes dev`: start, inspect and stop the dev Kafka (`outcomes.devtools.devstack`)."""

from __future__ import annotations

import time
from pathlib import Path

import click

from outcomes.cli import options
from outcomes.cli.group import Group
from outcomes.common.settings import Settings
from outcomes.devtools.devstack import (
    ADMIN_USER,
    DEFAULT_HEAP,
    DEFAULT_PORT,
    READY_TIMEOUT_S,
    Layout,
    admin_config,
    client_env,
    create_identities,
    down,
    is_alive,
    read_passwords,
    read_stack,
    rss_bytes,
    stack_dir,
    stack_file,
    up,
)
from outcomes.streams.topics import cluster_brokers


def _echo_err(message: str) -> None:
    click.echo(message, err=True)


@click.group(cls=Group)
def dev() -> None:
    """Run a real Apache Kafka (KRaft) on 127.0.0.1 for development and tests."""


@dev.command("up")
@click.option(
    "--brokers",
    type=click.Choice(["1", "3"]),
    default="1",
    show_default=True,
    envvar="OUTCOMES_DEV_BROKERS",
    show_envvar=True,
    help="1: one broker+controller. 3: three nodes, replication 3, min.insync.replicas 2.",
)
@click.option(
    "--port",
    type=int,
    default=DEFAULT_PORT,
    show_default=True,
    envvar="OUTCOMES_DEV_PORT",
    show_envvar=True,
    help="First broker port; others follow; controllers listen 100 above.",
)
@click.option("--heap", default=DEFAULT_HEAP, show_default=True, help="JVM -Xmx per broker.")
@click.option(
    "--timeout",
    type=float,
    default=READY_TIMEOUT_S,
    show_default=True,
    help="Seconds to wait for the cluster to answer and serve every partition.",
)
@click.option(
    "--secure",
    is_flag=True,
    help="SASL (SCRAM-SHA-512) users producer/worker/sink/reader, an admin super user and "
    "ACLs; passwords in files under the state dir (docs/kafka.md).",
)
@options.state_dir
def up_command(
    brokers: str, port: int, heap: str, timeout: float, secure: bool, state_dir: Path | None
) -> None:
    """Start the dev Kafka cluster (a no-op when it already runs).

    The first run fetches Apache Kafka with Maven into ~/.cache/outcomes; later runs
    need no network. Data persists across `down`/`up` until `down --purge`.
    """
    settings = Settings.load(state_dir=state_dir)
    layout = Layout(int(brokers), port, secure)
    result = up(settings, layout, heap=heap, ready_timeout=timeout, echo=_echo_err)
    stack = result.stack
    if result.started:
        click.echo(
            f"Kafka {stack.version} up: {stack.brokers} broker(s) at {stack.bootstrap} "
            f"in {result.seconds:.1f} s (state: {stack_dir(settings)})"
        )
    else:
        click.echo(f"Kafka {stack.version} already running at {stack.bootstrap}; nothing to do")
    if secure:
        # Names and file paths only: the passwords stay in their files.
        click.echo(f"# the stack's admin ({ADMIN_USER}); other identities: same with their name")
        for name, value in client_env(settings, layout, ADMIN_USER).items():
            click.echo(f"export {name}={value}")
    elif stack.bootstrap != Settings().bootstrap:
        click.echo(f"export OUTCOMES_BOOTSTRAP={stack.bootstrap}")


@dev.command("status")
@options.state_dir
def status_command(state_dir: Path | None) -> None:
    """Show the dev cluster's nodes; exit 1 unless every node runs and answers."""
    from rich.console import Console
    from rich.table import Table

    settings = Settings.load(state_dir=state_dir)
    stack = read_stack(settings)
    if stack is None:
        click.echo(f"dev Kafka is not running (no {stack_file(settings)})")
        raise SystemExit(1)
    table = Table(title=f"Kafka {stack.version} dev stack ({stack.bootstrap})")
    for column in ("node", "pid", "state", "broker", "controller", "RSS", "uptime", "logs"):
        table.add_column(column)
    healthy = True
    for node in stack.nodes:
        alive = is_alive(node)
        healthy &= alive
        rss = rss_bytes(node.pid) if alive else None
        table.add_row(
            str(node.node_id),
            str(node.pid),
            "running" if alive else "[red]dead[/red]",
            f"127.0.0.1:{node.port}",
            f"127.0.0.1:{node.controller_port}",
            f"{rss / 2**20:.0f} MiB" if rss else "-",
            f"{time.time() - stack.started_at:.0f} s" if alive else "-",
            node.log_dir,
        )
    Console().print(table)
    answering = cluster_brokers(stack.bootstrap, conf=admin_config(settings)) if healthy else None
    if answering == len(stack.nodes):
        click.echo(f"metadata: {answering} broker(s) answer at {stack.bootstrap}")
    else:
        click.echo(f"metadata: {answering or 0} of {len(stack.nodes)} broker(s) answer")
        raise SystemExit(1)


@dev.command("down")
@click.option("--purge", is_flag=True, help="Also delete the brokers' data (topics, offsets).")
@options.state_dir
def down_command(purge: bool, state_dir: Path | None) -> None:
    """Stop exactly the broker processes `dev up` started."""
    settings = Settings.load(state_dir=state_dir)
    stopped = down(settings, purge=purge, echo=_echo_err)
    if stopped:
        click.echo(f"stopped Kafka (pid {', '.join(map(str, stopped))})")
    else:
        click.echo("dev Kafka was not running; nothing to stop")
    if purge:
        click.echo(f"deleted broker data under {stack_dir(settings)}")


@dev.command("identities")
@click.option(
    "--secrets-dir",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    required=True,
    help="Directory with producer.password, worker.password, sink.password, reader.password.",
)
@options.bootstrap
def identities_command(secrets_dir: Path, bootstrap: str | None) -> None:
    """Create the SCRAM users and ACLs of the secure profile on any broker.

    Run it as a super user (OUTCOMES_KAFKA_SASL_* name the admin). `dev up --secure`
    does the same for the dev stack; docker/compose.yaml's `identities` service runs it.
    """
    settings = Settings.load(bootstrap=bootstrap)
    create_identities(settings.kafka_config(), read_passwords(secrets_dir), click.echo)
