"""Where a command writes its output file (`--out`).

An output is written to a temporary file in the target's directory and renamed over the
target once complete: a command that fails or is interrupted leaves the target as it was,
never half written. An output that is one of the command's own inputs is refused before
anything is read (writing it would empty the input first). A target that exists and is not
a regular file (`/dev/null`, a FIFO) is written in place: renaming over it would replace
the device.

Inputs are read with `outcomes.common.files.read_regular` (regular files only, without
blocking, up to a size cap).
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

import click

from outcomes.cli.group import CommandFailed, command_path
from outcomes.reducers.errors import OutcomesError


class OutputUnusable(OutcomesError):
    """The `--out` target cannot be written, or is one of the command's inputs.

    Operators: point `--out` at a new path in an existing, writable directory, never at a
    file the command reads.
    """


class UsageFailed(CommandFailed):
    """A command line that cannot work as given (exit code 2, like click's usage errors),
    reported as the one error line."""

    exit_code = 2


def usage_failed(error: OutcomesError) -> UsageFailed:
    """`error` as the command's one error line with exit code 2."""
    return UsageFailed(command_path(click.get_current_context()), error)


def same_file(one: Path, other: Path) -> bool:
    """Whether two paths name one file: the same inode when both exist, else the same
    resolved path."""
    try:
        first, second = one.stat(), other.stat()
    except OSError:
        return one.resolve() == other.resolve()
    return (first.st_dev, first.st_ino) == (second.st_dev, second.st_ino)


def refuse_inputs(out: Path, inputs: Iterable[Path]) -> None:
    """Raise OutputUnusable when `out` is one of `inputs`."""
    for path in inputs:
        if same_file(out, path):
            raise OutputUnusable(f"--out {out} is the input {path}: it would be overwritten")


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def check_target(out: Path, inputs: Iterable[Path]) -> None:
    """Raise OutputUnusable, before anything is read, when `out` is one of `inputs` or
    its directory does not exist."""
    refuse_inputs(out, inputs)
    if not out.parent.is_dir():
        raise OutputUnusable(f"cannot write {out}: no such directory {out.parent}")


@contextmanager
def atomic_output(path: Path) -> Iterator[BinaryIO]:
    """A binary file to write `path`'s new contents to; renamed over `path` when the block
    ends without an exception, removed otherwise. A symbolic link is written through
    (its target is replaced, not the link)."""
    if path.is_symlink():
        path = path.resolve()
    try:
        existing = path.stat()
    except FileNotFoundError:
        existing = None
    except OSError as exc:
        raise OutputUnusable(f"cannot write {path}: {exc.strerror or exc}") from None
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        if stat.S_ISDIR(existing.st_mode):
            raise OutputUnusable(f"cannot write {path}: it is a directory")
        try:
            handle = path.open("wb")
        except OSError as exc:
            raise OutputUnusable(f"cannot write {path}: {exc.strerror or exc}") from None
        with handle:
            yield handle
        return
    directory = path.parent
    if not directory.is_dir():
        raise OutputUnusable(f"cannot write {path}: no such directory {directory}")
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{path.name[:64]}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise OutputUnusable(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        # A new file gets the mode an ordinary open would give it; a replaced one keeps its own.
        mode = stat.S_IMODE(existing.st_mode) if existing is not None else 0o666 & ~_umask()
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            yield handle
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
