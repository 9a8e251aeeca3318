"""What a shell command is, and what its output says: the entry point every importer
(and the OTLP receiver's tool spans) uses.

A command line is split into its simple commands (`outcomes.importers.shell`, linear in
the line's length, capped); each is classified by the program it runs, a row of the
tool catalogue (`outcomes.importers.catalogue`), never by what the agent said it meant.
Checks and their verdicts are read by `outcomes.importers.checks`, effects by
`outcomes.importers.effects`; this module puts them together for one command line.

Pure: strings in, values out. No clock, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from outcomes.importers.checks import (
    Check,
    CheckResult,
    Scripts,
    Summary,
    Verdict,
    check_of,
    check_verdict,
    shared_summaries,
    summary_of,
    verdict,
)
from outcomes.importers.effects import (
    Effect,
    EffectOutcome,
    git_effects,
    shell_effects,
    tool_effect,
)
from outcomes.importers.shell import MAX_COMMAND_CHARS, Simple, split_command

__all__ = [
    "MAX_CHECKS_PER_LINE",
    "MAX_COMMAND_CHARS",
    "Check",
    "CheckResult",
    "CommandReading",
    "Effect",
    "EffectOutcome",
    "Scripts",
    "Simple",
    "Summary",
    "Verdict",
    "check_of",
    "check_verdict",
    "git_effects",
    "own_statuses",
    "read_command",
    "shell_effects",
    "split_command",
    "summary_of",
    "tool_effect",
]


# Checks read from one command line; past this many the rest of the line's commands are
# read for effects only (a line of thousands of `pytest;` is no run any agent makes, and
# each check costs a receipt, a snapshot and a share of the output's reading).
MAX_CHECKS_PER_LINE = 64


@dataclass(frozen=True, slots=True)
class CommandReading:
    """Everything one command line shows: its checks (with verdicts) and its effects."""

    checks: tuple[tuple[Check, Verdict], ...] = ()
    effects: tuple[Effect, ...] = field(default_factory=tuple)


def own_statuses(simples: tuple[Simple, ...], exit_code: int | None) -> list[int | None]:
    """Each simple command's own exit status, as far as the line's status shows it.

    The line's status is its last command's. An earlier command joined to the rest by
    `&&` alone exited 0 when the line did (the chain would have stopped at it otherwise);
    a command whose output a pipe took (`cmd | tail`) has no status of its own, and
    after `;`, `||` or `&` nothing is known."""
    out: list[int | None] = [None] * len(simples)
    if not simples:
        return out
    out[-1] = exit_code
    if exit_code != 0:
        return out
    chained = True  # every separator from here to the end is `&&` or a pipe within a stage
    for index in range(len(simples) - 2, -1, -1):
        simple = simples[index]
        if simple.then not in {"&&", "|", "|&"}:
            chained = False
        if chained and simple.then == "&&" and not simple.background:
            out[index] = 0
    return out


def read_command(
    line: str,
    output: str | None,
    exit_code: int | None,
    *,
    timed_out: bool = False,
    scripts: Scripts | None = None,
) -> CommandReading:
    """Classify the command line `line` and read its output.

    Output is shared by every simple command of the line. With one check, the summary
    lines in it are that check's; with several, each line goes to the check whose tool
    prints it, in order (`checks.shared_summaries`). A command's exit status is its own
    only as `own_statuses` shows it. `scripts`: the package.json scripts and recipes the
    trace showed, to read `npm run x` / `make x` through."""
    simples = split_command(line)
    statuses = own_statuses(simples, exit_code)
    chained = _chained_to_end(simples)
    found: list[tuple[int, Check]] = []
    effects: list[Effect] = []
    for index, simple in enumerate(simples):
        check = check_of(simple, scripts) if len(found) < MAX_CHECKS_PER_LINE else None
        if check is not None:
            found.append((index, check))
        effects.extend(shell_effects(simple, output, statuses[index], scripts))
    text = output or ""
    summaries = shared_summaries(text, [c for _, c in found]) if text and found else []
    checks: list[tuple[Check, Verdict]] = []
    stopped = False  # an earlier check of an `&&` chain failed: what follows did not run
    for position, (index, check) in enumerate(found):
        simple = simples[index]
        status = None if simple.piped_out or simple.background else statuses[index]
        summary = summaries[position] if summaries else None
        if stopped and summary is None:
            status = None  # the line's status is the failed check's, not this one's
        checks.append((check, verdict(check, summary, status, text, timed_out=timed_out)))
        if summary is not None and summary.result == "fail" and chained[index]:
            stopped = True
    return CommandReading(tuple(checks), tuple(effects))


def _chained_to_end(simples: tuple[Simple, ...]) -> list[bool]:
    """For each simple command: is it joined to the end of the line by `&&` (and pipes
    within a stage) alone, with at least one `&&`? One pass from the end."""
    out = [False] * len(simples)
    only_and = True  # every separator after this one is `&&` or a pipe
    any_and = False
    for index in range(len(simples) - 2, -1, -1):
        then = simples[index].then
        only_and = only_and and then in {"&&", "|", "|&"}
        any_and = any_and or then == "&&"
        out[index] = only_and and any_and
    return out
