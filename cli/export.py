"""`outcomes export`: one run's bundle (the human report beside the evidence) into a
directory or a zip file."""

from __future__ import annotations

import zipfile
from pathlib import Path

import click

from outcomes.cli.show import load_view, source_options
from outcomes.reports.bundle import Files, build
from outcomes.reports.errors import UnreadableSource

# A zip entry's fixed time (the zip format's earliest), so the same bundle is the same bytes.
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


@click.command()
@click.argument("run_id")
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(path_type=Path),
    help="A directory to create (or an empty one), or a file ending in .zip.",
)
@click.option(
    "--events",
    "events",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The run's input events (JSONL or Avro; repeatable): narratives and the events "
    "the evidence cites go into the bundle.",
)
@click.option(
    "--redact",
    type=click.Choice(["narrative"]),
    multiple=True,
    help="Leave the narrative text out (its SHA-256 stays); listed in the manifest.",
)
@source_options
def export(
    run_id: str,
    out: Path,
    events: tuple[Path, ...],
    redact: tuple[str, ...],
    clickhouse: str | None,
    from_file: Path | None,
) -> None:
    """Export RUN_ID as a bundle: the report (Markdown and a self-contained HTML page),
    every account revision as canonical JSON, the claim verdicts and each narrative's
    claim map, artifact digests, receipt references, the verification manifest, the
    run's events (with --events), and manifest.json with the SHA-256 of every file.
    `outcomes verify-bundle` checks it offline.

    \b
        outcomes export run-five-files --from outputs.jsonl \\
            --events samples/five_file_run.jsonl --out run-five-files.zip
    """
    view = load_view(run_id, clickhouse, from_file, events)
    files = build(view, redact=tuple(sorted(set(redact))))
    if out.suffix == ".zip":
        write_zip(files, out)
    else:
        write_dir(files, out)
    click.echo(f"{out}: {len(files)} files, revision {view.latest['revision_id']}", err=True)


def write_dir(files: Files, out: Path) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UnreadableSource(f"{out} exists and is not an empty directory")
    try:
        for name in sorted(files):
            target = out / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(files[name])
    except OSError as exc:
        raise UnreadableSource(f"cannot write {out}: {exc.strerror or exc}") from exc


def write_zip(files: Files, out: Path) -> None:
    try:
        with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for name in sorted(files):
                info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                archive.writestr(info, files[name])
    except OSError as exc:
        raise UnreadableSource(f"cannot write {out}: {exc.strerror or exc}") from exc
