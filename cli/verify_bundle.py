"""`outcomes verify-bundle`: check an export bundle offline."""

from __future__ import annotations

import zipfile
from pathlib import Path

import click

from outcomes.reports.bundle import Files
from outcomes.reports.errors import BundleInvalid, UnreadableSource
from outcomes.reports.verify import problems


@click.command("verify-bundle")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
def verify_bundle(path: Path) -> None:
    """Check the bundle at PATH (a directory or a .zip from `outcomes export`) offline.

    Every file's SHA-256 against the manifest, the revision chain, that the reports name
    the account's latest revision, that every event the account cites is in the bundle's
    events or receipts, that every claim of a claim map is a verdict judged on a
    revision the bundle holds, and every link of the HTML report. One line per problem
    on standard output, and exit code 1; nothing printed but a summary when it holds.
    """
    files = read_bundle(path)
    found = problems(files)
    for line in found:
        click.echo(line)
    if found:
        raise BundleInvalid(f"{path}: {len(found)} problem(s)")
    click.echo(f"{path}: {len(files)} files verified", err=True)


def read_bundle(path: Path) -> Files:
    """The bundle's files by relative path, from a directory or a zip file."""
    try:
        if path.is_dir():
            return {
                p.relative_to(path).as_posix(): p.read_bytes()
                for p in sorted(path.rglob("*"))
                if p.is_file()
            }
        with zipfile.ZipFile(path) as archive:
            return {
                info.filename: archive.read(info)
                for info in archive.infolist()
                if not info.is_dir()
            }
    except (OSError, zipfile.BadZipFile) as exc:
        raise UnreadableSource(f"cannot read the bundle {path}: {exc}") from exc
