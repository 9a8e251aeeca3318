"""How `outcomes` groups run commands, and the one line a failed command prints.

Every group of the command line is a :class:`Group`: it notes in the context the
subcommand it runs, so the top-level handler (`outcomes.cli.main.LazyGroup.invoke`) can name the
whole command (`outcomes dev up`) in the error line it prints for an `OutcomesError`.
"""

from __future__ import annotations

from typing import IO, Any

import click

from outcomes.common.text import terminal_safe
from outcomes.reducers.errors import OutcomesError

_PATH = "outcomes.command_path"
"""`ctx.meta` key (meta is shared by every context of one invocation): subcommand names."""


class Group(click.Group):
    """A click group that notes which subcommand it runs."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        if name is not None:
            ctx.meta.setdefault(_PATH, []).append(name)
        return name, command, rest


def command_path(ctx: click.Context) -> str:
    """`outcomes` and the subcommands this invocation ran (`outcomes clickhouse migrate`)."""
    return " ".join(["outcomes", *ctx.meta.get(_PATH, [])])


class CommandFailed(click.ClickException):
    """An `OutcomesError` as the command line reports it.

    One line on standard error, `outcomes <command>: error: <message>`, and exit code 1;
    no traceback (the error was raised on purpose; its message says what to do). The
    message often quotes data (a run id, a path, a value from a file): it is printed
    `terminal_safe`, so an ESC or a newline in the data is shown, never acted on.
    """

    exit_code = 1

    def __init__(self, command: str, error: OutcomesError) -> None:
        lines = (terminal_safe(line.strip()) for line in str(error).splitlines())
        message = " | ".join(line for line in lines if line)
        super().__init__(message or type(error).__name__)
        self.command = command

    def format_message(self) -> str:
        return f"{self.command}: error: {self.message}"

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(self.format_message(), file=file, err=file is None)
