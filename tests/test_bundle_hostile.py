"""Bundles against hostile input (issue 24): `verify-bundle` reads with bounds (a zip
bomb, a symbolic link in a directory, two entries of one name, unsafe names are one
line each), `export --out` never replaces a file without --force nor writes through a
link, a run id holding quotes, markup or a newline makes a bundle that verifies, and
report.md shows the narrative's HTML and links as text."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from tests.cli_support import ROOT, outcomes

SAMPLE = ROOT / "samples" / "five_file_run.jsonl"
RUN = "run-five-files"


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("hostile-bundle") / "outputs.jsonl"
    proc = outcomes("replay", str(SAMPLE), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def good_zip(replayed: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("good") / "bundle.zip"
    proc = outcomes(
        "export", RUN, "--from", str(replayed), "--events", str(SAMPLE), "--out", str(out)
    )
    assert proc.returncode == 0, proc.stderr
    return out


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The command failed with exactly one line, and no traceback."""
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def entries(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {i.filename: archive.read(i) for i in archive.infolist()}


# -- verify-bundle reads with bounds ----------------------------------------------------


def test_a_zip_bomb_is_refused_before_it_inflates(tmp_path: Path) -> None:
    """A 1 MB zip holding one 1 GiB entry: refused with one line, under an address-space
    limit far below what inflating it would take."""
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w") as archive:
        info = zipfile.ZipInfo("events.jsonl")
        info.compress_type = zipfile.ZIP_DEFLATED
        with archive.open(info, "w", force_zip64=True) as entry:
            zeros = b"\0" * (1 << 24)
            for _ in range(64):
                entry.write(zeros)
    assert bomb.stat().st_size < 2 * 1024 * 1024

    def limited() -> None:  # 768 MiB of address space: the entry alone is 1 GiB
        resource.setrlimit(resource.RLIMIT_AS, (768 << 20, 768 << 20))

    proc = subprocess.run(
        [sys.executable, "-m", "outcomes.cli", "verify-bundle", str(bomb)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        preexec_fn=limited,  # sets the limit in the child only
        check=False,
        timeout=120,
    )
    line = one_error_line(proc)
    assert line == (
        f"outcomes verify-bundle: error: {bomb}: refused: its entries declare 1073741824 "
        "bytes inflated, over the limit of 536870912 (--max-bytes raises it)"
    )


def test_max_bytes_bounds_what_is_read_as_it_inflates(good_zip: Path, tmp_path: Path) -> None:
    line = one_error_line(outcomes("verify-bundle", "--max-bytes", "10000", str(good_zip)))
    assert f"{good_zip}: refused: its entries declare" in line
    # A directory's files are counted as they are read (no size is declared there).
    folder = tmp_path / "dir"
    with zipfile.ZipFile(good_zip) as archive:
        archive.extractall(folder)
    line = one_error_line(outcomes("verify-bundle", "--max-bytes", "10000", str(folder)))
    assert "takes the bundle past 10000 bytes inflated (--max-bytes raises the limit)" in line
    assert outcomes("verify-bundle", str(folder)).returncode == 0  # the bundle is intact


@pytest.mark.parametrize("target", ["outside", "inside"])
def test_a_symbolic_link_in_a_directory_bundle_is_refused(
    good_zip: Path, tmp_path: Path, target: str
) -> None:
    folder = tmp_path / "bundle"
    with zipfile.ZipFile(good_zip) as archive:
        archive.extractall(folder)
    secret = tmp_path / "secret.txt"
    secret.write_text("not part of any bundle\n")
    link = folder / "narratives" / "final-answer.json"
    saved = link.read_bytes()
    if target == "outside":
        link.unlink()
        link.symlink_to(secret)
    else:  # a link to a file of the bundle is refused too: links are never followed
        (folder / "narratives" / "copy.json").write_bytes(saved)
        link.unlink()
        link.symlink_to(folder / "narratives" / "copy.json")
    proc = outcomes("verify-bundle", str(folder))
    line = one_error_line(proc)
    assert line == (
        f"outcomes verify-bundle: error: {folder}: refused: narratives/final-answer.json is "
        "a symbolic link (a bundle holds regular files only; links are not followed)"
    )
    assert "verified" not in proc.stdout + proc.stderr
    assert secret.read_text() == "not part of any bundle\n"


def test_a_zip_with_two_entries_of_one_name_is_refused(good_zip: Path, tmp_path: Path) -> None:
    files = entries(good_zip)
    forged = tmp_path / "forged.zip"
    with warnings.catch_warnings(), zipfile.ZipFile(forged, "w") as archive:
        warnings.simplefilter("ignore", UserWarning)  # zipfile warns of the duplicate
        archive.writestr("manifest.json", b'{"format": "forged"}')  # the one a reader opens
        for name, data in files.items():
            archive.writestr(name, data)
    line = one_error_line(outcomes("verify-bundle", str(forged)))
    assert line == (
        f"outcomes verify-bundle: error: {forged}: refused: two entries named manifest.json "
        "(a reader would see only one of them)"
    )


@pytest.mark.parametrize(
    "name",
    ["../escape.json", "/abs.json", "a//b.json", "./report.md", "a\\b.json", "x\x1b[2J.json"],
)
def test_a_zip_entry_name_that_is_not_a_plain_relative_path_is_refused(
    good_zip: Path, tmp_path: Path, name: str
) -> None:
    forged = tmp_path / "names.zip"
    with zipfile.ZipFile(forged, "w") as archive:
        for entry, data in entries(good_zip).items():
            archive.writestr(entry, data)
        archive.writestr(zipfile.ZipInfo(name), b"{}")
    proc = outcomes("verify-bundle", str(forged))
    line = one_error_line(proc)
    assert f"{forged}: refused: entry {name!r} is not a plain relative path" in line
    assert "\x1b" not in proc.stdout + proc.stderr


def test_problem_lines_print_file_names_escaped(good_zip: Path, tmp_path: Path) -> None:
    folder = tmp_path / "bundle"
    with zipfile.ZipFile(good_zip) as archive:
        archive.extractall(folder)
    (folder / "x\x1b[31m\nmanifest.json: ok.json").write_text("{}")
    proc = outcomes("verify-bundle", str(folder))
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        "x\\x1b[31m\\nmanifest.json: ok.json: in the bundle but not in the manifest"
    ]
    assert "\x1b" not in proc.stdout + proc.stderr


# -- export --out never replaces a file without --force nor writes through a link -------


def export_to(replayed: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return outcomes("export", RUN, "--from", str(replayed), "--out", str(out), *extra)


def test_export_does_not_replace_an_existing_file(replayed: Path, tmp_path: Path) -> None:
    out = tmp_path / "run.zip"
    out.write_bytes(b"someone's file")
    line = one_error_line(export_to(replayed, out))
    assert line == f"outcomes export: error: {out} exists (--force replaces it)"
    assert out.read_bytes() == b"someone's file"
    assert list(tmp_path.iterdir()) == [out]  # no temporary file left behind
    proc = export_to(replayed, out, "--force")
    assert proc.returncode == 0, proc.stderr
    assert outcomes("verify-bundle", str(out)).returncode == 0


def test_export_never_writes_through_a_symbolic_link(replayed: Path, tmp_path: Path) -> None:
    target = tmp_path / "target.txt"
    target.write_text("keep me\n")
    out = tmp_path / "run.zip"
    out.symlink_to(target)
    line = one_error_line(export_to(replayed, out))
    assert line == f"outcomes export: error: {out} exists (--force replaces it)"
    dangling = tmp_path / "dangling.zip"
    dangling.symlink_to(tmp_path / "nowhere.zip")
    one_error_line(export_to(replayed, dangling))
    assert not (tmp_path / "nowhere.zip").exists()
    # --force replaces the link itself, never what it points to.
    assert export_to(replayed, out, "--force").returncode == 0
    assert not out.is_symlink() and zipfile.is_zipfile(out)
    assert target.read_text() == "keep me\n"


def test_export_to_a_directory_follows_no_link(replayed: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    link = tmp_path / "bundle-link"
    link.symlink_to(target, target_is_directory=True)
    line = one_error_line(export_to(replayed, link))
    assert line == f"outcomes export: error: {link} is a symbolic link; export writes no link"
    assert list(target.iterdir()) == []
    # With --force into an existing bundle directory, a link planted in it is refused.
    out = tmp_path / "bundle"
    assert export_to(replayed, out).returncode == 0
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    (out / "report.md").unlink()
    (out / "report.md").symlink_to(victim)
    line = one_error_line(export_to(replayed, out, "--force"))
    assert line.startswith(f"outcomes export: error: cannot write {out}: ")
    assert victim.read_text() == "keep me\n"
    (out / "report.md").unlink()
    assert export_to(replayed, out, "--force").returncode == 0
    assert outcomes("verify-bundle", str(out)).returncode == 0


# -- any run id makes a bundle that verifies ------------------------------------------


@pytest.mark.parametrize(
    "run_id", ["run'\"<>&-x", "run\nx", "run <b>bold</b> & `tick`", "run\x1b[31m\u202ex"]
)
def test_a_bundle_verifies_whatever_its_run_id_holds(
    replayed: Path, tmp_path: Path, run_id: str
) -> None:
    """The replay output and events with the run id replaced (the export reads them as
    they are, as it would read records ingested before identifiers were checked)."""
    as_json = json.dumps(run_id)[1:-1]
    records = tmp_path / "outputs.jsonl"
    records.write_text(replayed.read_text().replace(RUN, as_json))
    events = tmp_path / "events.jsonl"
    events.write_text(SAMPLE.read_text().replace(RUN, as_json))
    for out in (tmp_path / "b.zip", tmp_path / "b"):
        proc = outcomes(
            "export", run_id, "--from", str(records), "--events", str(events), "--out", str(out)
        )
        assert proc.returncode == 0, proc.stderr
        proc = outcomes("verify-bundle", str(out))
        assert (proc.returncode, proc.stdout) == (0, ""), proc.stdout
        assert proc.stderr.endswith("12 files verified\n")


# -- report.md shows the narrative's markup as text -------------------------------------

HOSTILE_TEXT = (
    "All <script>alert(4)</script> tests pass.\n"  # a claim whose words hold a tag
    "Done! <script>alert('x')</script> See [the notes](javascript:alert(1)) and "
    "<img src=x onerror=alert(2)> or <javascript:alert(3)>.\n"
    "# not a heading\n"
    "1. not a list | not a cell\n"
    "![pixel](https://example.invalid/p.png)"
)


def test_report_md_escapes_the_narratives_html_and_links(tmp_path: Path) -> None:
    lines = SAMPLE.read_text().splitlines()
    for index, line in enumerate(lines):
        if '"narrative.submitted"' in line:
            event = json.loads(line)
            event["text"] = HOSTILE_TEXT
            lines[index] = json.dumps(event)
    events = tmp_path / "events.jsonl"
    events.write_text("\n".join(lines) + "\n")
    replayed = tmp_path / "outputs.jsonl"  # the claims are read from this narrative
    assert outcomes("replay", str(events), "--out", str(replayed)).returncode == 0
    out = tmp_path / "b"
    proc = outcomes(
        "export", RUN, "--from", str(replayed), "--events", str(events), "--out", str(out)
    )
    assert proc.returncode == 0, proc.stderr
    report = (out / "report.md").read_text()
    # The whole report (the status block with its claim table, the timeline, the
    # narratives, the claim maps), rendered with raw HTML enabled (CommonMark's
    # default): the narrative and the claims quoted from it are text, no tag, no link,
    # no image; the one heading of level 1 is the report's title.
    rendered = MarkdownIt("commonmark").render(report)
    for made in ("<script", "<img", "href=", "<ol"):
        assert made not in rendered, made
    assert rendered.count("<h1") == 1 and rendered.startswith("<h1>Run ")
    status_part = report[: report.index("## Revision timeline")]
    # The status block's claim table quotes the claim with its tag, as text.
    assert "| “All \\<script\\>alert(4)\\</script\\> tests pass” | supported |" in status_part
    assert "&lt;script&gt;alert(4)&lt;/script&gt; tests pass" in rendered
    assert "&lt;script&gt;alert('x')&lt;/script&gt;" in rendered
    assert "[the notes](javascript:alert(1))" in rendered
    assert outcomes("verify-bundle", str(out)).returncode == 0
