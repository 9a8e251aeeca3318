"""The command line as one room: every command answers --help, the one error path,
options generated from the settings table, and no click outside `cli/`."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from outcomes.cli import options
from outcomes.cli.group import Group
from outcomes.cli.main import COMMANDS, main
from outcomes.common.settings import SETTINGS_DOC, Settings
from outcomes.reducers.errors import OutcomesError

ROOT = Path(__file__).resolve().parent.parent
BAD_PROTOCOL = "OUTCOMES_KAFKA_SECURITY_PROTOCOL"


def _command_paths(
    group: click.Group, ctx: click.Context, prefix: tuple[str, ...]
) -> Iterator[tuple[str, ...]]:
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        yield (*prefix, name)
        if isinstance(command, click.Group):
            yield from _command_paths(command, ctx, (*prefix, name))


def _all_paths() -> list[tuple[str, ...]]:
    assert isinstance(main, click.Group)
    return list(_command_paths(main, click.Context(main), ()))


def test_every_command_and_subcommand_answers_help() -> None:
    paths = _all_paths()
    assert {p[0] for p in paths} == set(COMMANDS)
    assert ("dev", "up") in paths and ("clickhouse", "migrate") in paths
    for path in [(), *paths]:
        result = CliRunner().invoke(main, [*path, "--help"])
        assert result.exit_code == 0, (path, result.output)
        assert result.output.startswith("Usage: ") and "--help" in result.output


def test_every_command_lives_in_cli() -> None:
    assert all(target.startswith("outcomes.cli.") for target in COMMANDS.values())


def test_feature_modules_import_no_click() -> None:
    """Commands live in cli/; the modules they call hold plain functions."""
    offenders = []
    for package in ("reducers", "schemas", "common", "streams", "sinks", "reports", "devtools"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module]
                else:
                    continue
                if any(name == "click" or name.startswith("click.") for name in names):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


# --------------------------------------------------------------------------- errors


class _Boom(OutcomesError):
    """A project error a command raises on purpose."""


@click.group(cls=Group)
def boom() -> None:
    """A test group whose subcommands fail."""


@boom.command("deep")
def boom_deep() -> None:
    raise _Boom("the broker said no\nsecond line")


@boom.command("data")
def boom_data() -> None:
    raise _Boom("no run \x1b[2Jrun-\u202eevil\rfake: ok")


@boom.command("bug")
def boom_bug() -> None:
    raise RuntimeError("a programming error")


@pytest.fixture
def with_boom(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(COMMANDS, "boom", "tests.test_cli:boom")


@pytest.mark.usefixtures("with_boom")
def test_an_outcomes_error_is_one_line_on_stderr_naming_the_command() -> None:
    result = CliRunner().invoke(main, ["boom", "deep"])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == "outcomes boom deep: error: the broker said no | second line\n"


@pytest.mark.usefixtures("with_boom")
def test_data_in_an_error_line_is_printed_literally() -> None:
    """An ESC sequence, a bidi override or a carriage return quoted from the data is
    shown as an escape, and a line break (a carriage return too) becomes " | ": the
    error stays one visible line."""
    result = CliRunner().invoke(main, ["boom", "data"])
    assert result.exit_code == 1
    assert result.stderr == (
        "outcomes boom data: error: no run \\x1b[2Jrun-\\u202eevil | fake: ok\n"
    )


@pytest.mark.usefixtures("with_boom")
def test_unexpected_exceptions_are_not_swallowed() -> None:
    result = CliRunner().invoke(main, ["boom", "bug"])
    assert isinstance(result.exception, RuntimeError)
    assert result.exit_code == 1


def test_usage_errors_stay_clicks() -> None:
    result = CliRunner().invoke(main, ["query"])
    assert result.exit_code == 2
    assert "Usage: " in result.stderr and "Error: Missing argument 'SQL'." in result.stderr
    assert ": error: " not in result.stderr


@pytest.mark.parametrize(
    ("argv", "env", "command"),
    [
        # replay had no handler: a bad setting printed a traceback
        (["replay", "{sample}"], {"OUTCOMES_MAX_EVENT_BYTES": "lots"}, "outcomes replay"),
        (["query", "SELECT 1", "--clickhouse", "ftp://nowhere"], {}, "outcomes query"),
        (["produce", "{sample}", "--bootstrap", " "], {}, "outcomes produce"),
        (["dev", "status"], {BAD_PROTOCOL: "CARRIER_PIGEON"}, "outcomes dev status"),
        (["worker"], {BAD_PROTOCOL: "CARRIER_PIGEON"}, "outcomes worker"),
    ],
)
def test_a_real_command_error_is_one_stderr_line_without_traceback(
    tmp_path: Path, argv: list[str], env: dict[str, str], command: str
) -> None:
    sample = tmp_path / "events.jsonl"
    sample.write_text("")
    args = [a.replace("{sample}", str(sample)) for a in argv]
    proc = subprocess.run(
        [sys.executable, "-m", "outcomes.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    lines = proc.stderr.splitlines()
    assert proc.returncode == 1, proc.stderr
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"{command}: error: "), lines
    assert "Traceback" not in proc.stderr


# --------------------------------------------------------------------------- options


def test_generated_options_name_their_variable_and_default() -> None:
    for doc in SETTINGS_DOC:
        if doc.flag is None:
            continue
        help_text = options.option_help(doc)
        assert help_text.startswith(doc.help)
        assert f"env var: {doc.env}" in help_text
        assert doc.default is not None and f"default: {doc.default}]" in help_text
    bootstrap = options.setting("bootstrap")
    assert bootstrap.default == Settings().bootstrap


def test_a_command_shows_the_generated_help() -> None:
    result = CliRunner().invoke(main, ["topics", "ensure", "--help"])
    assert "--bootstrap SERVERS" in result.output
    assert "OUTCOMES_BOOTSTRAP" in result.output and "127.0.0.1:9092" in result.output


def test_a_flag_only_option_names_no_variable() -> None:
    text = options.option_help(options.setting("clickhouse"), default="x", from_env=False)
    assert "OUTCOMES_CLICKHOUSE" not in text and text.endswith("[default: x]")


def test_an_unset_flag_leaves_the_value_to_the_environment() -> None:
    seen: dict[str, str | None] = {}

    @click.command()
    @options.bootstrap
    def probe(bootstrap: str | None) -> None:
        seen["flag"] = bootstrap
        seen["in force"] = Settings.load(bootstrap=bootstrap).bootstrap

    CliRunner().invoke(probe, [], env={"OUTCOMES_BOOTSTRAP": "from-env:1"})
    assert seen == {"flag": None, "in force": "from-env:1"}
    CliRunner().invoke(probe, ["--bootstrap", "flag:2"], env={"OUTCOMES_BOOTSTRAP": "env:1"})
    assert seen == {"flag": "flag:2", "in force": "flag:2"}
