"""The `outcomes` command line: one entry point, one subcommand per job.

Every command lives in `cli/`; the modules behind them hold plain functions. One handler,
`LazyGroup.invoke`, turns any `OutcomesError` a command raises into one line on standard
error, `outcomes <command>: error: <message>`, and exit code 1 (see `outcomes.cli.group`); usage
errors stay click's, and any other exception keeps its traceback.
"""

from __future__ import annotations

import importlib
import importlib.util
from importlib.metadata import version

import click

from outcomes.cli.group import CommandFailed, Group, command_path
from outcomes.reducers.errors import OutcomesError

# name -> "module:attribute" of a click command or group.
#
# Lazy on purpose: a command's module, and what it imports (confluent-kafka, faust, the
# ClickHouse drivers), loads only when that command runs. Measured once, best of 11 runs
# on the 2-core dev machine, lazy vs every module imported up front: `outcomes dev --help`
# 114 vs 315 ms, `outcomes query --help` 164 vs 315 ms, `outcomes replay --help` 265 vs
# 315 ms. `outcomes --help` gains nothing (315 ms both ways): to print each command's
# one-line help, click imports every module.
COMMANDS: dict[str, str] = {
    "replay": "outcomes.cli.replay:replay",
    "produce": "outcomes.cli.produce:produce",
    "dev": "outcomes.cli.dev:dev",
    "topics": "outcomes.cli.topics:topics",
    "worker": "outcomes.cli.worker:worker",
    "sink": "outcomes.cli.sink:sink",
    "clickhouse": "outcomes.cli.clickhouse:clickhouse",
    "query": "outcomes.cli.query:query",
    "purge": "outcomes.cli.purge:purge",
    "demo": "outcomes.cli.demo:demo",
    "loadgen": "outcomes.cli.loadgen:loadgen",
    "bench": "outcomes.cli.bench:bench",
    "chaos": "outcomes.cli.chaos:chaos",
    "relay": "outcomes.cli.relay:relay",
    "follow": "outcomes.cli.follow:follow",
    "show": "outcomes.cli.show:show",
    "export": "outcomes.cli.export:export",
    "verify-bundle": "outcomes.cli.verify_bundle:verify_bundle",
}


class LazyGroup(Group):
    """The `outcomes` group: subcommands live in modules imported on first use."""

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

    def invoke(self, ctx: click.Context) -> object:
        """Run the subcommand; an `OutcomesError` becomes the one error line."""
        try:
            return super().invoke(ctx)
        except OutcomesError as exc:
            raise CommandFailed(command_path(ctx), exc) from None

    @staticmethod
    def _available(name: str) -> bool:
        return importlib.util.find_spec(COMMANDS[name].split(":")[0]) is not None


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version("outcomes"), prog_name="outcomes")
def main() -> None:
    """Fold AI-agent run events into deterministic outcome accounts."""
