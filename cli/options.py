"""Click options generated from the settings table (`outcomes.common.settings.SETTINGS_DOC`).

A setting with a flag becomes one option: the flag, the parameter named after the
setting (so `Settings.load(**{name: value})` takes it as is), the table's help text with
the environment variable and the default named. The option's own default is None: an
unset flag leaves the value to `Settings.load`, which reads the variable, then the
default. Each command declares `@options.bootstrap` and so on once.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from outcomes.common.settings import SETTINGS_DOC, Setting

F = TypeVar("F", bound=Callable[..., Any])

# How each flag reads on the command line: its metavar and click type (None: text).
_FORMS: dict[str, tuple[str, click.ParamType | None]] = {
    "bootstrap": ("SERVERS", None),
    "schema_registry_url": ("URL", None),
    "clickhouse": ("DSN", None),
    "state_dir": ("DIR", click.Path(file_okay=False, path_type=Path)),
    "purge_actor": ("NAME", None),
    "gate_url": ("URL", None),
}


def setting(name: str) -> Setting:
    """The table's row for the setting `name`."""
    for doc in SETTINGS_DOC:
        if doc.name == name:
            return doc
    raise KeyError(f"no setting named {name!r} in outcomes.common.settings.SETTINGS_DOC")


def option_help(
    doc: Setting, *, help: str | None = None, default: str | None = None, from_env: bool = True
) -> str:
    """`<help>  [env var: <ENV>; default: <default>]`, the way click shows its own."""
    notes = []
    if from_env:
        notes.append(f"env var: {doc.env}")
    shown = default if default is not None else doc.default
    if shown is not None:
        notes.append(f"default: {shown}")
    text = help if help is not None else doc.help
    return f"{text}  [{'; '.join(notes)}]" if notes else text


def setting_option(
    name: str, *, help: str | None = None, default: str | None = None, from_env: bool = True
) -> Callable[[F], F]:
    """The click option of the setting `name`.

    `help` replaces the table's text and `default` the default it names, for a command
    whose flag means more than the setting (replay's --clickhouse also sinks). A command
    that reads the flag only, never the variable, says so with `from_env=False`, and the
    help then names no variable.
    """
    doc = setting(name)
    if doc.flag is None:
        raise ValueError(f"setting {name!r} has no flag (its table row says flag=None)")
    metavar, kind = _FORMS[name]
    return click.option(
        doc.flag,
        name,
        metavar=metavar,
        type=kind,
        default=None,
        help=option_help(doc, help=help, default=default, from_env=from_env),
    )


bootstrap = setting_option("bootstrap")
schema_registry = setting_option("schema_registry_url")
clickhouse = setting_option("clickhouse")
state_dir = setting_option("state_dir")
purge_actor = setting_option("purge_actor")
gate_url = setting_option("gate_url")
