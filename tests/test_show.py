"""`outcomes show` (reports/status.py): the status block of the seed's five-file run from a
replay output file and from ClickHouse (chDB) gives the same bytes; the copy says "not
confirmed" for what is unknown and marks failed only what failed; then and now."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from outcomes.cli.main import main
from outcomes.reports.model import RunView
from outcomes.reports.status import FAILED, UNKNOWN, render, status_block, then_and_now
from outcomes.sinks import clickhouse
from tests.cli_support import outcomes

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "five_file_run.jsonl"
RUN = "run-five-files"


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """The sample replayed once: its output file and the chDB database it was sunk into
    (by a separate process, so this one's engine stays free)."""
    tmp = tmp_path_factory.mktemp("show")
    out, dsn = tmp / "outputs.jsonl", f"chdb://{tmp}/chdb"
    proc = outcomes("replay", str(SAMPLE), "--out", str(out), "--clickhouse", dsn)
    assert proc.returncode == 0, proc.stderr
    yield out, dsn
    clickhouse.close_all()


def view_of(path: Path) -> RunView:
    records = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    return RunView.of(
        RUN,
        [r for r in records if r["record"] == "account_revision"],
        [r for r in records if r["record"] == "claim_verdict"],
    )


def show(*args: str) -> str:
    result = CliRunner().invoke(main, ["show", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_replay_file_and_clickhouse_give_the_same_bytes(
    replayed: tuple[Path, str], fmt: str
) -> None:
    out, dsn = replayed
    from_file = show(RUN, "--from", str(out), "--format", fmt)
    again = show(RUN, "--from", str(out), "--format", fmt)
    assert from_file == again  # the same input, the same bytes
    proc = outcomes("show", RUN, "--clickhouse", dsn, "--format", fmt)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == from_file
    then_file = show(RUN, "--from", str(out), "--format", fmt, "--revision", "1")
    then_db = outcomes("show", RUN, "--clickhouse", dsn, "--format", fmt, "--revision", "1")
    assert then_db.stdout == then_file and then_file != from_file


def test_the_current_block_of_the_five_file_run(replayed: tuple[Path, str]) -> None:
    text = show(RUN, "--from", str(replayed[0]))
    assert text.startswith("Run run-five-files: revision 3 of 3\n\nStatus: Complete (complete)\n")
    assert "observation cutoff 2026-11-30T10:10:00.000000Z" in text
    for line in (
        "  unit   passing  pass    43     snap-2  chk-2",
        "  draft-release-notes  external_draft  completed  rcpt-77",
        "  tests/test_retry.py  added     d3      yes",
        "  ▶ 3       Complete ",
    ):
        assert line in text, line
    assert "Open obligations\n----------------\nnone" in text


def test_unknown_reads_not_confirmed_and_is_never_styled_as_failed(
    replayed: tuple[Path, str],
) -> None:
    """Revision 1: the check is stale and the draft's outcome unknown. The block says
    "not confirmed" for both, never "almost done", and nothing in it is failed."""
    view = view_of(replayed[0])
    block = status_block(view, 1)
    assert block["status_label"] == "Unresolved: not confirmed" and block["tone"] == UNKNOWN
    states = [*block["why"], *block["checks"], *block["effects"]]
    assert all(s["tone"] == UNKNOWN for s in states)
    assert [s["state_label"] for s in block["checks"]] == ["not confirmed: stale"]
    assert [s["state_label"] for s in block["effects"]] == ["not confirmed: unknown"]
    assert [o["text"] for o in block["open"]] == [
        "the unit check has not passed on the final candidate snap-2: its pass was against snap-1",
        "draft-release-notes (external draft) is not confirmed: its outcome is unknown "
        "(no receipt)",
    ]
    for fmt in ("text", "markdown", "json"):
        rendered = render(block, fmt).lower()
        assert "almost" not in rendered
    # The only "failed" tone in revision 1 is on the claims the account contradicts.
    tones = {c["verdict"]: c["tone"] for c in block["claims"]}
    assert tones == {"contradicted": FAILED}
    markdown = render(block, "markdown")
    assert "**contradicted**" in markdown and "**not confirmed" not in markdown


def test_a_failed_check_is_marked_failed() -> None:
    body = {
        "run_id": "r",
        "revision": 1,
        "revision_id": "r:1",
        "supersedes": None,
        "status": "failed",
        "workflow_status": "finalized",
        "observation_cutoff": "2026-11-30T10:00:00.000000Z",
        "trigger_event_id": "e1",
        "state_revision": "x",
        "schema_version": 1,
        "assembler_version": "1.0.0",
        "goal_revision": 1,
        "candidate_snapshot": "s",
        "dimensions": {"verification": "fail"},
        "predicates": [
            {"id": "check:unit", "required": True, "state": "unsatisfied", "reason": "failing",
             "evidence": ["e1"]},
        ],
        "artifacts": [],
        "checks": [{"label": "unit", "state": "failing", "result": "fail", "tests_executed": 3,
                    "candidate_snapshot": "s", "check_id": "c1", "required": True}],
        "effects": [],
        "actions": [],
        "contradictions": [],
        "provenance_findings": [],
        "changes": [],
    }  # fmt: skip
    block = status_block(RunView.of("r", [body], []))
    assert (block["status_label"], block["tone"]) == ("Failed", FAILED)
    assert [(c["state_label"], c["tone"]) for c in block["checks"]] == [("failing", FAILED)]
    assert block["open"] == [{"subject": "check:unit", "text": "the unit check failed on s"}]


def test_then_and_now_names_what_changed(replayed: tuple[Path, str]) -> None:
    doc = then_and_now(view_of(replayed[0]), 1)
    assert (doc["then"]["revision"], doc["now"]["revision"]) == (1, 3)
    changed = {d["item"]: (d["then"], d["now"]) for d in doc["differences"]}
    assert changed["status"] == ("Unresolved: not confirmed", "Complete")
    assert changed["check unit"] == ("not confirmed: stale", "passing")
    assert changed["effect draft-release-notes"] == (
        "not confirmed: unknown",
        "completed (receipts: rcpt-77)",
    )
    assert changed["final-answer “all tests pass”"] == ("contradicted", "supported")
    text = render(doc, "text")
    assert "== Then: what was true at revision 1 ==" in text
    assert "== Now: what is true at revision 3 ==" in text
    # The latest revision asked for is the plain block, not a comparison with itself.
    assert show(RUN, "--from", str(replayed[0]), "--revision", "3") == show(
        RUN, "--from", str(replayed[0])
    )


def test_mistakes_get_one_line(replayed: tuple[Path, str]) -> None:
    proc = outcomes("show", "no-such-run", "--from", str(replayed[0]))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == (
        "outcomes show: error: run 'no-such-run' has no account revision in this source"
    )
    proc = outcomes("show", RUN, "--from", str(replayed[0]), "--revision", "7")
    assert proc.stderr.strip().endswith("has no revision 7 (it has 1, 2, 3)")
    proc = outcomes("show", RUN, "--from", str(SAMPLE))
    assert proc.returncode == 1
    assert "no `record` field: is this `outcomes replay` output?" in proc.stderr
