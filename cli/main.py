"""The `outcomes` command line: one entry point, one subcommand per job.

Subcommands are imported lazily so `outcomes --help` and `outcomes replay` do not pay
for importing faust, confluent-kafka or ClickHouse drivers they do not use.
"""

from __future__ import annotations

import importlib
import importlib.util
from importlib.metadata import version

import click

# name -> "module:attribute" of a click command or group.
COMMANDS: dict[str, str] = {
    "replay": "cli.replay:replay",
    "produce": "cli.produce:produce",
    "dev": "devtools.devstack:dev",
    "topics": "streams.topics:topics",
    "worker": "streams.worker:worker",
    "sink": "cli.clickhouse:sink",
    "clickhouse": "cli.clickhouse:clickhouse",
    "query": "cli.clickhouse:query",
    "purge": "cli.clickhouse:purge",
    "demo": "devtools.demo:demo",
    "loadgen": "devtools.loadgen:loadgen",
    "bench": "devtools.bench:bench",
}


class LazyGroup(click.Group):
    """A click group whose subcommands live in modules imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name in COMMANDS if self._available(name))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        module = importlib.import_module(module_name)
        command = getattr(module, attr)
        if not isinstance(command, click.Command):
            raise TypeError(f"{target} is not a click command")
        return command

    @staticmethod
    def _available(name: str) -> bool:
        module_name = COMMANDS[name].split(":")[0]
        return importlib.util.find_spec(module_name) is not None


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version("outcomes"), prog_name="outcomes")
def main() -> None:
    """Fold AI-agent run events into deterministic outcome accounts."""
