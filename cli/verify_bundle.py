"""`outcomes verify-bundle`: check an export bundle offline.

The bundle is untrusted input: it is read with bounds before anything of it is checked.
A directory bundle holds regular files only (a symbolic link, even to a file inside it,
is refused: it is never followed); a zip bundle holds each name once, as a plain
relative path; neither may inflate past `--max-bytes` in total (a zip entry is read in
chunks and counted as it inflates, whatever size its header declares).
"""

from __future__ import annotations

import os
import stat
import zipfile
import zlib
from pathlib import Path
from typing import IO

import click

from outcomes.common.text import terminal_safe
from outcomes.reports.bundle import Files
from outcomes.reports.errors import BundleInvalid, UnreadableSource
from outcomes.reports.verify import problems

# The largest bundle read (all its files, inflated), unless --max-bytes says otherwise.
MAX_BUNDLE_BYTES = 512 * 1024 * 1024
# The most files a bundle may hold (one run: revisions, narratives and a few more).
MAX_BUNDLE_FILES = 100_000
_CHUNK = 1024 * 1024


@click.command("verify-bundle")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--max-bytes",
    type=click.IntRange(min=1),
    default=MAX_BUNDLE_BYTES,
    show_default=True,
    help="Refuse a bundle whose files inflate past this many bytes in total.",
)
def verify_bundle(path: Path, max_bytes: int) -> None:
    """Check the bundle at PATH (a directory or a .zip from `outcomes export`) offline.

    Every file's SHA-256 against the manifest, the revision chain, that the reports name
    the account's latest revision, that every event the account cites is in the bundle's
    events or receipts, that every claim of a claim map is a verdict judged on a
    revision the bundle holds, and every link of the HTML report. One line per problem
    on standard output, and exit code 1; nothing printed but a summary when it holds.
    A bundle that cannot be read safely (a symbolic link in a directory, a zip holding
    a name twice or an unsafe name, more than --max-bytes inflated) is refused with one
    line. Names and data in the lines are printed with control characters escaped.
    """
    files = read_bundle(path, max_bytes)
    found = problems(files)
    for line in found:
        click.echo(terminal_safe(line))
    if found:
        raise BundleInvalid(f"{_shown(path)}: {len(found)} problem(s)")
    click.echo(f"{_shown(path)}: {len(files)} files verified", err=True)


def _shown(path: Path | str) -> str:
    return terminal_safe(str(path))


def read_bundle(path: Path, max_bytes: int = MAX_BUNDLE_BYTES) -> Files:
    """The bundle's files by relative path, from a directory or a zip file, read within
    `max_bytes` in total; UnreadableSource (one line) for anything refused."""
    budget = _Budget(path, max_bytes)
    try:
        if path.is_dir():
            return _read_dir(path, budget)
        return _read_zip(path, budget)
    except (OSError, zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as exc:
        raise UnreadableSource(f"cannot read the bundle {_shown(path)}: {exc}") from exc
    except RuntimeError as exc:  # zipfile: an encrypted entry
        raise UnreadableSource(f"cannot read the bundle {_shown(path)}: {exc}") from exc


class _Budget:
    """The bytes still allowed, counted as they are read."""

    def __init__(self, bundle: Path, max_bytes: int) -> None:
        self.bundle = bundle
        self.max_bytes = max_bytes
        self.left = max_bytes
        self.files = 0

    def add_file(self, count: int = 1) -> None:
        self.files += count
        if self.files > MAX_BUNDLE_FILES:
            raise UnreadableSource(
                f"{_shown(self.bundle)}: refused: more than {MAX_BUNDLE_FILES} files "
                "(an export bundle holds one run)"
            )

    def take(self, name: str, size: int) -> None:
        self.left -= size
        if self.left < 0:
            raise UnreadableSource(
                f"{_shown(self.bundle)}: refused: {_shown(name)} takes the bundle past "
                f"{self.max_bytes} bytes inflated (--max-bytes raises the limit)"
            )

    def read(self, name: str, stream: IO[bytes]) -> bytes:
        """All of `stream`, chunk by chunk, refused as soon as it passes the budget."""
        chunks: list[bytes] = []
        while True:
            chunk = stream.read(min(_CHUNK, self.left + 1))
            if not chunk:
                return b"".join(chunks)
            self.take(name, len(chunk))
            chunks.append(chunk)


def _read_dir(root: Path, budget: _Budget) -> Files:
    files: Files = {}
    pending = [root]
    while pending:
        folder = pending.pop()
        with os.scandir(folder) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                name = Path(entry.path).relative_to(root).as_posix()
                if entry.is_symlink():
                    raise UnreadableSource(
                        f"{_shown(root)}: refused: {_shown(name)} is a symbolic link "
                        "(a bundle holds regular files only; links are not followed)"
                    )
                if entry.is_dir(follow_symlinks=False):
                    pending.append(Path(entry.path))
                    continue
                if not entry.is_file(follow_symlinks=False):
                    raise UnreadableSource(
                        f"{_shown(root)}: refused: {_shown(name)} is not a regular file"
                    )
                budget.add_file()
                files[name] = _read_regular(Path(entry.path), name, budget)
    return dict(sorted(files.items()))


def _read_regular(path: Path, name: str, budget: _Budget) -> bytes:
    """A regular file's bytes, opened without following a link (in case one replaced it
    since the directory was listed)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise UnreadableSource(f"{_shown(name)}: not a regular file")
        return budget.read(name, handle)


def _read_zip(path: Path, budget: _Budget) -> Files:
    files: Files = {}
    with zipfile.ZipFile(path) as archive:
        infos = archive.infolist()
        budget.add_file(len(infos))  # counted before any is read
        declared = sum(info.file_size for info in infos)
        if declared > budget.max_bytes:  # refused before anything inflates
            raise UnreadableSource(
                f"{_shown(path)}: refused: its entries declare {declared} bytes inflated, "
                f"over the limit of {budget.max_bytes} (--max-bytes raises it)"
            )
        seen: set[str] = set()
        for info in infos:
            name = info.filename
            problem = _unsafe_name(name)
            if problem is not None:
                raise UnreadableSource(f"{_shown(path)}: refused: entry {name!r} {problem}")
            if name in seen:
                raise UnreadableSource(
                    f"{_shown(path)}: refused: two entries named {_shown(name)} (a reader "
                    "would see only one of them)"
                )
            seen.add(name)
            if stat.S_ISLNK(info.external_attr >> 16):
                raise UnreadableSource(
                    f"{_shown(path)}: refused: entry {_shown(name)} is a symbolic link"
                )
            if info.is_dir():
                continue
            with archive.open(info) as entry:
                files[name] = budget.read(name, entry)
    return files


def _unsafe_name(name: str) -> str | None:
    """Why a zip entry name is not a plain relative path inside the bundle, or None."""
    if "\\" in name or terminal_safe(name) != name:
        return "is not a plain relative path (a backslash or a control character)"
    segments = name.removesuffix("/").split("/")
    if name.startswith("/") or any(s in ("", ".", "..") for s in segments):
        return "is not a plain relative path (absolute, or an empty, . or .. segment)"
    return None
