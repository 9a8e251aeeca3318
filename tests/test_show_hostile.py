"""`outcomes show` prints data literally (issue 24): control, format and separator
characters in a run id, a snapshot id or a path (an old record, or free text) come out
as visible escapes, so an ESC sequence cannot recolour the terminal and a newline cannot
fake a status line; and nothing else of the block changes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from outcomes.common.text import markdown_text
from tests.cli_support import outcomes

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "five_file_run.jsonl"
RUN = "run-five-files"
# What the records hold -> what the terminal must show instead.
HOSTILE = {
    RUN: ("run\x1b[31m\nStatus: complete", "run\\x1b[31m\\nStatus: complete"),
    "snap-2": ("snap\u202e-2", "snap\\u202e-2"),
    "src/app.py": ("src/app\r.py", "src/app\\r.py"),
}


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("show") / "outputs.jsonl"
    proc = outcomes("replay", str(SAMPLE), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return out.read_text()


def substituted(text: str, pick: int, path: Path) -> Path:
    """The replay output with each HOSTILE value put in (its raw form, or the escaped
    form as plain characters), as JSON string escapes so the file stays valid JSONL."""
    for plain, forms in HOSTILE.items():
        text = text.replace(plain, json.dumps(forms[pick])[1:-1])
    path.write_text(text)
    return path


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_show_escapes_what_the_terminal_would_act_on(
    replayed: str, tmp_path: Path, fmt: str
) -> None:
    hostile = substituted(replayed, 0, tmp_path / "hostile.jsonl")
    literal = substituted(replayed, 1, tmp_path / "literal.jsonl")
    shown = outcomes("show", HOSTILE[RUN][0], "--from", str(hostile), "--format", fmt)
    assert shown.returncode == 0, shown.stderr
    for char in ("\x1b", "\r", "\u202e"):
        assert char not in shown.stdout
    # Exactly the block of a run whose data holds the escapes as plain characters: the
    # same lines, nothing dropped, no line added by the newline in the run id.
    expected = outcomes("show", HOSTILE[RUN][1], "--from", str(literal), "--format", fmt)
    assert expected.returncode == 0, expected.stderr
    assert shown.stdout == expected.stdout
    # The escapes as the terminal shows them; in Markdown, also as literal Markdown text
    # (a backslash or a bracket of the data renders as itself, reports/status.py).
    run, snap = "run\\x1b[31m\\nStatus: complete", "snap\\u202e-2"
    if fmt == "markdown":
        run, snap = f"# Run {markdown_text(run)}", markdown_text(snap)
    else:
        run = f"Run {run}"
    assert shown.stdout.splitlines()[0].startswith(f"{run}: revision 3")
    assert snap in shown.stdout and "src/app\\r.py" in shown.stdout


def test_json_keeps_the_data_as_it_is(replayed: str, tmp_path: Path) -> None:
    hostile = substituted(replayed, 0, tmp_path / "hostile.jsonl")
    shown = outcomes("show", HOSTILE[RUN][0], "--from", str(hostile), "--format", "json")
    assert shown.returncode == 0, shown.stderr
    block = json.loads(shown.stdout)
    assert block["run_id"] == HOSTILE[RUN][0]
    assert "\x1b" not in shown.stdout  # JSON writes it as \u001b itself
