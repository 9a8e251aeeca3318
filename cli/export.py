"""`outcomes export`: one run's bundle (the human report beside the evidence) into a
directory or a zip file.

The target is never written through a symbolic link, and an existing file is never
replaced without `--force`: a zip is written to a new temporary file beside the target
and then linked (or, with `--force`, renamed) into place, so the target is the whole
new bundle or untouched; a directory's files are created without following links.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import zipfile
from pathlib import Path
from typing import BinaryIO

import click

from outcomes.cli.show import load_view, source_options
from outcomes.common.text import terminal_safe
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
    help="A directory to create (or an empty one), or a file ending in .zip. Never "
    "written through a symbolic link.",
)
@click.option(
    "--force",
    is_flag=True,
    help="Replace an existing .zip file (the link itself, if it is a symbolic link), or "
    "write into a non-empty directory, replacing the bundle's files there.",
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
    force: bool,
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
        write_zip(files, out, force=force)
    else:
        write_dir(files, out, force=force)
    done = f"{out}: {len(files)} files, revision {view.latest['revision_id']}"
    click.echo(terminal_safe(done), err=True)


def write_dir(files: Files, out: Path, *, force: bool = False) -> None:
    """The bundle's files under `out`, a new or empty directory (with `force`, any
    directory). No link is followed: not `out`, not a folder or file inside it."""
    if out.is_symlink():
        raise UnreadableSource(f"{_shown(out)} is a symbolic link; export writes no link")
    if out.exists() and not out.is_dir():
        raise UnreadableSource(f"{_shown(out)} exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise UnreadableSource(
            f"{_shown(out)} exists and is not an empty directory (--force writes into it)"
        )
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    flags |= os.O_TRUNC if force else os.O_EXCL  # O_EXCL: never an existing file
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name in sorted(files):
            target = out / name
            _real_folders(out, target.parent)
            fd = os.open(target, flags, 0o644)
            with os.fdopen(fd, "wb") as handle:
                handle.write(files[name])
    except FileExistsError as exc:
        raise UnreadableSource(
            f"cannot write {_shown(out)}: {_shown(exc.filename)} exists (--force replaces it)"
        ) from exc
    except OSError as exc:
        raise UnreadableSource(f"cannot write {_shown(out)}: {exc.strerror or exc}") from exc


def _real_folders(root: Path, folder: Path) -> None:
    """Create `folder` under `root`, each level a real directory, never a link."""
    current = root
    for part in folder.relative_to(root).parts:
        current = current / part
        if current.is_symlink():
            raise UnreadableSource(
                f"{_shown(current)} is a symbolic link; export writes no file through one"
            )
        current.mkdir(exist_ok=True)


def write_zip(files: Files, out: Path, *, force: bool = False) -> None:
    """The bundle as a zip at `out`: written to a temporary file beside it, then linked
    into place (refused if `out` exists, a dangling link included) or, with `force`,
    renamed over it (which replaces a link itself, never its target)."""
    if os.path.lexists(out) and not force:
        raise UnreadableSource(f"{_shown(out)} exists (--force replaces it)")
    if out.is_dir() and not out.is_symlink():
        raise UnreadableSource(f"{_shown(out)} is a directory")
    folder = out.parent
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise UnreadableSource(f"cannot write {_shown(out)}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            _zip_into(files, handle)
        os.chmod(temporary, 0o644)
        if force:
            os.replace(temporary, out)
        else:
            os.link(temporary, out)  # fails if `out` appeared meanwhile; follows nothing
    except FileExistsError as exc:
        raise UnreadableSource(f"{_shown(out)} exists (--force replaces it)") from exc
    except OSError as exc:
        raise UnreadableSource(f"cannot write {_shown(out)}: {exc.strerror or exc}") from exc
    finally:
        with contextlib.suppress(FileNotFoundError):  # renamed into place: nothing left
            os.unlink(temporary)


def _zip_into(files: Files, handle: BinaryIO) -> None:
    with zipfile.ZipFile(handle, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, files[name])


def _shown(path: Path | str) -> str:
    return terminal_safe(str(path))
