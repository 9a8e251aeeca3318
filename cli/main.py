"""The `outcomes` command line: one entry point, one subcommand per job.

Every command lives in `cli/`; the modules behind them hold plain functions. One handler,
`LazyGroup.invoke`, turns any `OutcomesError` a command raises into one line on standard
error, `outcomes <command>: error: <message>`, and exit code 1 (see `outcomes.cli.group`);
usage errors stay click's, and any other exception keeps its traceback. The dev tooling's
commands exist only in a checkout; with the SDK alone installed, a pipeline command says
which install it needs.
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
    "import": "outcomes.cli.import_cmd:import_",
    "hook": "outcomes.cli.hook:hook",
    "otlp": "outcomes.cli.otlp:otlp",
    "ui": "outcomes.cli.ui:ui",
    "check": "outcomes.cli.check:check",
}


# The dev tooling's commands: they run from a checkout, where `outcomes.devtools` exists;
# an installed wheel has no devtools, and lists none of them.
DEV_COMMANDS = frozenset({"dev", "demo", "loadgen", "bench", "chaos"})

PIPELINE_HINT = "pip install 'outcomes[pipeline]'"


def _needs_pipeline(name: str, missing: str) -> click.Command:
    """A stand-in for a command whose module needs what only the pipeline install has."""

    def refuse() -> None:
        raise click.ClickException(
            f"outcomes {name} needs the pipeline install (no module {missing!r} here): "
            f"{PIPELINE_HINT}"
        )

    return click.Command(
        name,
        callback=refuse,
        help=f"(needs the pipeline install: {PIPELINE_HINT})",
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
        add_help_option=False,
    )


class LazyGroup(Group):
    """The `outcomes` group: subcommands live in modules imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name in COMMANDS if self._available(name))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        if not self._available(cmd_name):
            raise click.UsageError(
                f"'{cmd_name}' is dev tooling: it runs from a checkout of the repository "
                "(bash scripts/setup.sh), not from an installed package"
            )
        module_name, attr = target.split(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            # The SDK alone (`pip install outcomes`) has the command line but not what
            # the worker, the sink or the reports import.
            if exc.name is None or exc.name.split(".")[0] == "outcomes":
                raise
            return _needs_pipeline(cmd_name, exc.name)
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
        if name in DEV_COMMANDS and importlib.util.find_spec("outcomes.devtools") is None:
            return False
        return importlib.util.find_spec(COMMANDS[name].split(":")[0]) is not None


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version("outcomes"), prog_name="outcomes")
def main() -> None:
    """Fold AI-agent run events into deterministic outcome accounts."""
