"""`outcomes hook install` (cli/hook_install.py): the Claude Code hook written with the
absolute path of the running outcomes, other settings and other hooks kept."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from outcomes.cli.hook_install import EVENTS, InstallError, install, install_command, merged

OUTCOMES = Path(sys.executable).parent / "outcomes"


def test_the_settings_name_the_hook_by_its_absolute_path(tmp_path: Path) -> None:
    result = CliRunner().invoke(install_command, ["--project-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    path = tmp_path / ".claude" / "settings.json"
    settings = orjson.loads(path.read_bytes())
    assert sorted(settings["hooks"]) == sorted(name for name, _ in EVENTS)
    (entry,) = settings["hooks"]["Stop"]
    (hook,) = entry["hooks"]
    assert hook["type"] == "command" and hook["timeout"] == 30
    program = hook["command"].split()[0]
    assert Path(program).is_absolute() and Path(program).name == "outcomes"
    assert hook["command"].endswith(" hook claude-code")
    assert settings["hooks"]["PostToolUse"][0]["matcher"] == "*"
    assert f"wrote {path}" in result.output


def test_the_written_command_runs_where_path_has_no_outcomes(tmp_path: Path) -> None:
    CliRunner().invoke(install_command, ["--project-dir", str(tmp_path)])
    settings = orjson.loads((tmp_path / ".claude" / "settings.json").read_bytes())
    command = settings["hooks"]["Stop"][0]["hooks"][0]["command"]
    done = subprocess.run(
        f"{command} --help",
        shell=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "claude-code" in done.stdout.lower() or "hook" in done.stdout.lower()


def test_other_settings_and_hooks_are_kept_and_ours_replaced(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    theirs = {"matcher": "Bash", "hooks": [{"type": "command", "command": "lint-guard"}]}
    path.write_bytes(
        orjson.dumps(
            {
                "model": "opus",
                "hooks": {
                    "PreToolUse": [theirs],
                    "PostToolUse": [
                        theirs,
                        {"hooks": [{"type": "command", "command": "outcomes hook claude-code"}]},
                    ],
                },
            }
        )
    )
    install(path, f"{OUTCOMES} hook claude-code --bootstrap 127.0.0.1:9092")
    install(path, f"{OUTCOMES} hook claude-code --bootstrap 127.0.0.1:9092")  # idempotent
    settings = orjson.loads(path.read_bytes())
    assert settings["model"] == "opus"
    assert settings["hooks"]["PreToolUse"] == [theirs]
    post = settings["hooks"]["PostToolUse"]
    assert post[0] == theirs and len(post) == 2
    assert post[1]["hooks"][0]["command"].endswith("--bootstrap 127.0.0.1:9092")


@pytest.mark.parametrize("content", [b"{not json", b"[1, 2]", b'{"hooks": []}'])
def test_settings_that_are_not_settings_are_left_alone(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "settings.json"
    path.write_bytes(content)
    with pytest.raises(InstallError):
        install(path, "x hook claude-code")
    assert path.read_bytes() == content


def test_a_hook_list_that_is_not_a_list_is_refused() -> None:
    with pytest.raises(InstallError, match=r"hooks\.Stop"):
        merged({"hooks": {"Stop": "outcomes"}}, "x hook claude-code")


def test_it_is_outcomes_hook_install(tmp_path: Path) -> None:
    from outcomes.cli.hook import hook

    result = CliRunner().invoke(hook, ["install", "--project-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / ".claude" / "settings.json").exists()


def test_the_gate_url_and_budget_are_written_into_the_command(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        install_command,
        ["--project-dir", str(tmp_path), "--gate-url", "http://127.0.0.1:6066",
         "--gate-budget", "2.5"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    settings = orjson.loads((tmp_path / ".claude" / "settings.json").read_bytes())
    command = settings["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert command.endswith(" hook claude-code --gate-url http://127.0.0.1:6066 --gate-budget 2.5")
    assert "--gate-url http://127.0.0.1:6066" in result.output
    alone = CliRunner().invoke(
        install_command, ["--project-dir", str(tmp_path), "--gate-budget", "2"]
    )
    assert alone.exit_code == 2 and "--gate-url" in alone.output
