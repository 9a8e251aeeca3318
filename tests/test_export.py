"""`outcomes export` and `outcomes verify-bundle` (reports/bundle.py, reports/verify.py):
the seed's five-file run exported from a replay output file and from ClickHouse gives
the same bundle, which verifies; each way of tampering with it is caught, one line per
problem; the narrative can be redacted, and the manifest says so."""

from __future__ import annotations

import hashlib
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from outcomes.cli.main import main
from outcomes.reports.bundle import MANIFEST, pretty
from outcomes.reports.verify import problems
from outcomes.sinks import clickhouse
from tests.cli_support import outcomes

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "five_file_run.jsonl"
RUN = "run-five-files"
Files = dict[str, bytes]


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    tmp = tmp_path_factory.mktemp("export")
    out, dsn = tmp / "outputs.jsonl", f"chdb://{tmp}/chdb"
    proc = outcomes("replay", str(SAMPLE), "--out", str(out), "--clickhouse", dsn)
    assert proc.returncode == 0, proc.stderr
    yield out, dsn
    clickhouse.close_all()


def export(*args: str) -> None:
    result = CliRunner().invoke(main, ["export", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output


def verify(path: Path) -> tuple[int, list[str]]:
    result = CliRunner().invoke(main, ["verify-bundle", str(path)])
    return result.exit_code, result.stdout.splitlines()


def read_dir(path: Path) -> Files:
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in path.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def bundle(replayed: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory) -> Files:
    out = tmp_path_factory.mktemp("bundle") / "b"
    export(RUN, "--from", str(replayed[0]), "--events", str(SAMPLE), "--out", str(out))
    return read_dir(out)


def test_the_bundle_holds_report_account_and_evidence(bundle: Files) -> None:
    assert sorted(bundle) == [
        "account/revision-1.json",
        "account/revision-2.json",
        "account/revision-3.json",
        "artifacts.json",
        "claims/verdicts.json",
        "events.jsonl",
        "manifest.json",
        "narratives/final-answer.json",
        "receipts.json",
        "report.html",
        "report.md",
        "verification.json",
    ]
    manifest = orjson.loads(bundle[MANIFEST])
    assert (manifest["latest_revision_id"], manifest["status"]) == ("run-five-files:3", "complete")
    assert manifest["observation_cutoff"] == "2026-11-30T10:10:00.000000Z"
    assert manifest["redactions"] == [] and manifest["events_included"] is True
    for name, entry in manifest["files"].items():
        assert hashlib.sha256(bundle[name]).hexdigest() == entry["sha256"]
    assert set(manifest["files"]) == set(bundle) - {MANIFEST}
    revision = orjson.loads(bundle["account/revision-3.json"])
    assert (
        bundle["account/revision-3.json"]
        == orjson.dumps(revision, option=orjson.OPT_SORT_KEYS) + b"\n"
    )  # canonical JSON
    receipts = orjson.loads(bundle["receipts.json"])
    assert [(r["receipt_id"], r["event_id"]) for r in receipts["effect_receipts"]] == [
        ("rcpt-77", "run-five-files-13")
    ]
    assert [r["check_id"] for r in receipts["verification_receipts"]] == ["chk-1", "chk-2"]
    claim_map = orjson.loads(bundle["narratives/final-answer.json"])
    assert claim_map["text"].startswith("Done! I changed three files")
    stale = claim_map["claims"][1]
    assert (stale["span_text"], stale["first_verdict"], stale["verdict"]) == (
        "all tests pass",
        "contradicted",
        "supported",
    )
    assert stale["first_supported"] == (
        "the unit check has not passed on the final candidate snap-2: its pass was against snap-1"
    )
    assert problems(bundle) == []


def test_replay_file_and_clickhouse_export_the_same_zip(
    replayed: tuple[Path, str], tmp_path: Path
) -> None:
    out, dsn = replayed
    a, b = tmp_path / "a.zip", tmp_path / "b.zip"
    export(RUN, "--from", str(out), "--events", str(SAMPLE), "--out", str(a))
    proc = outcomes("export", RUN, "--clickhouse", dsn, "--events", str(SAMPLE), "--out", str(b))
    assert proc.returncode == 0, proc.stderr
    assert a.read_bytes() == b.read_bytes()
    assert verify(a) == (0, [])
    proc = outcomes("verify-bundle", str(b))
    assert proc.returncode == 0 and proc.stdout == "", proc.stdout
    assert proc.stderr.strip() == f"{b}: 12 files verified"


def write(files: Files, path: Path) -> Path:
    for name, data in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_bytes(data)
    return path


def resealed(files: Files) -> Files:
    """The bundle with its manifest's digests recomputed: a tamperer who knows the format."""
    manifest = orjson.loads(files[MANIFEST])
    manifest["files"] = {
        name: {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
        for name, data in sorted(files.items())
        if name != MANIFEST
    }
    return {**files, MANIFEST: pretty(manifest)}


def edit_json(files: Files, name: str, change: Callable[[Any], None]) -> Files:
    value = orjson.loads(files[name])
    change(value)
    return resealed({**files, name: pretty(value)})


def _drop_revision_2(files: Files) -> Files:
    out = {k: v for k, v in files.items() if k != "account/revision-2.json"}
    manifest = orjson.loads(out[MANIFEST])
    manifest["revisions"].remove("account/revision-2.json")
    return resealed({**out, MANIFEST: pretty(manifest)})


def _cite_unknown_event(files: Files) -> Files:
    name = "account/revision-3.json"
    body = orjson.loads(files[name])
    body["predicates"][1]["evidence"] = ["run-five-files-99"]
    return resealed({**files, name: orjson.dumps(body, option=orjson.OPT_SORT_KEYS) + b"\n"})


def _drop_verdict(value: Any) -> None:
    value[:] = [v for v in value if v["verdict_id"] != "run-five-files:final-answer:1@2"]


def _claim_about_nothing(value: Any) -> None:
    value["claims"][2]["judged_on"]["subject"] = "effect:never-requested"


def _report_names_revision_2(files: Files) -> Files:
    md = files["report.md"].replace(b"revision 3 of 3", b"revision 2 of 3", 1)
    return resealed({**files, "report.md": md})


def _broken_link(files: Files) -> Files:
    html = files["report.html"].replace(b'id="event-run-five-files-10"', b'id="gone"')
    return resealed({**files, "report.html": html})


def _drop_receipt(value: Any) -> None:
    value["effect_receipts"] = []


TAMPERING: dict[str, tuple[Callable[[Files], Files], list[str]]] = {
    "a changed byte": (
        lambda f: {**f, "artifacts.json": f["artifacts.json"].replace(b'"d4"', b'"d9"')},
        ["artifacts.json: SHA-256 "],
    ),
    "a file added": (
        lambda f: {**f, "notes.txt": b"trust me"},
        ["notes.txt: in the bundle but not in the manifest"],
    ),
    "a listed file removed": (
        lambda f: {k: v for k, v in f.items() if k != "verification.json"},
        ["verification.json: listed in the manifest but missing from the bundle"],
    ),
    "a revision removed from the chain": (
        _drop_revision_2,
        [
            "account: the revision chain is not contiguous: revision(s) 2 missing before 3",
            "narratives/final-answer.json: claim run-five-files:final-answer:2 was judged on "
            "run-five-files:2, which the bundle does not hold",
        ],
    ),
    "evidence citing an event the bundle lacks": (
        _cite_unknown_event,
        [
            "account/revision-3.json: predicate check:unit cites event run-five-files-99, "
            "which is not in the bundle's events or receipts"
        ],
    ),
    "a claim's verdict removed": (
        lambda f: edit_json(f, "claims/verdicts.json", _drop_verdict),
        [
            "narratives/final-answer.json: claim run-five-files:final-answer:1 settlement 2 "
            "(run-five-files:final-answer:1@2) is not a verdict in claims/verdicts.json"
        ],
    ),
    "a claim about an entry the account lacks": (
        lambda f: edit_json(f, "narratives/final-answer.json", _claim_about_nothing),
        [
            "narratives/final-answer.json: claim run-five-files:final-answer:2 is about "
            "effect:never-requested, which run-five-files:2 does not have"
        ],
    ),
    "the report naming another revision": (
        _report_names_revision_2,
        ["report.md: reports revision 2 of 3; the account's latest is 3"],
    ),
    "a link without its target": (
        _broken_link,
        ["report.html: the link #event-run-five-files-10 has no target in the page"],
    ),
    "a receipt reference removed": (
        lambda f: edit_json(f, "receipts.json", _drop_receipt),
        [
            "account/revision-2.json: receipt rcpt-77 of effect draft-release-notes not in "
            "receipts.json",
            "account/revision-3.json: receipt rcpt-77 of effect draft-release-notes not in "
            "receipts.json",
        ],
    ),
}


@pytest.mark.parametrize("how", sorted(TAMPERING))
def test_each_tampering_is_caught(bundle: Files, how: str, tmp_path: Path) -> None:
    tamper, expected = TAMPERING[how]
    path = write(tamper(dict(bundle)), tmp_path / "b")
    code, lines = verify(path)
    assert code == 1, lines
    for want in expected:
        assert any(line.startswith(want) for line in lines), (want, lines)
    # Nothing unrelated is reported: each line is about what was tampered with.
    assert len(lines) <= len(expected) + 2, lines
    result = CliRunner().invoke(main, ["verify-bundle", str(path)])
    assert f"outcomes verify-bundle: error: {path}: {len(lines)} problem(s)" in result.stderr


def test_a_tampered_zip_is_caught_too(bundle: Files, tmp_path: Path) -> None:
    path = tmp_path / "b.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in sorted(bundle.items()):
            archive.writestr(name, data.replace(b"snap-2", b"snap-3"))
    code, lines = verify(path)
    assert code == 1 and lines
    assert all(": SHA-256 " in line for line in lines), lines


def test_redacted_narrative_is_out_of_every_file_and_declared(
    replayed: tuple[Path, str], tmp_path: Path
) -> None:
    out = tmp_path / "r"
    export(
        RUN,
        "--from",
        str(replayed[0]),
        "--events",
        str(SAMPLE),
        "--out",
        str(out),
        "--redact",
        "narrative",
    )
    files = read_dir(out)
    for phrase in (b"I changed three files", b"all tests pass", b"release-notes draft is"):
        leaks = [name for name, data in files.items() if phrase in data]
        assert leaks == [], (phrase, leaks)
    manifest = orjson.loads(files[MANIFEST])
    [declared] = manifest["redactions"]
    assert declared["what"] == "narrative text"
    assert "claim_verdict span_text (claims/verdicts.json, narratives/*.json)" in declared["fields"]
    claim_map = orjson.loads(files["narratives/final-answer.json"])
    text = "Done! I changed three files, all tests pass, and the release-notes draft is published."
    assert claim_map["text"] is None
    events = [orjson.loads(line) for line in files["events.jsonl"].splitlines()]
    [narrative] = [e for e in events if e["type"] == "narrative.submitted"]
    assert narrative["text"] is None
    assert narrative["text_sha256"] == hashlib.sha256(text.encode()).hexdigest()
    assert "The narrative text is redacted" in files["report.md"].decode()
    assert "(characters 29-43, text redacted)" in files["report.md"].decode()
    assert verify(out) == (0, [])


def test_export_without_events_declares_it(replayed: tuple[Path, str], tmp_path: Path) -> None:
    out = tmp_path / "n"
    export(RUN, "--from", str(replayed[0]), "--out", str(out))
    files = read_dir(out)
    assert "events.jsonl" not in files
    assert orjson.loads(files[MANIFEST])["events_included"] is False
    assert "The narrative text is not in this report's source." in files["report.md"].decode()
    assert verify(out) == (0, [])


def test_export_refuses_a_directory_that_holds_something(
    replayed: tuple[Path, str], tmp_path: Path
) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    proc = outcomes("export", RUN, "--from", str(replayed[0]), "--out", str(tmp_path / "full"))
    assert proc.returncode == 1
    assert proc.stderr.strip().endswith(
        "exists and is not an empty directory (--force writes into it)"
    )
