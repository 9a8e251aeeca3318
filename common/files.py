"""Reading an input file without blocking and without bound: only a regular file is read,
opened non-blocking, up to a size cap. A FIFO would wait for a writer forever (holding
whatever lock the reader holds), `/dev/zero` never ends, and a file of any size would be
read whole into memory."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from outcomes.reducers.errors import OutcomesError


class NotReadable(OutcomesError):
    """An input that is not a regular file, or is larger than the command reads.

    Operators: give the path of a regular file (not a FIFO, a device or a directory), or
    raise the command's size limit if the file is that large on purpose.
    """


def read_regular(path: str | Path, max_bytes: int) -> bytes:
    """The bytes of `path` if it is a regular file of at most `max_bytes` bytes; raises
    NotReadable otherwise, and OSError (FileNotFoundError, PermissionError) when it cannot
    be opened. Opened without blocking, so a FIFO is refused instead of waited on."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotReadable(f"{path}: not a regular file ({_kind(info.st_mode)})")
        if info.st_size > max_bytes:
            raise NotReadable(f"{path}: {info.st_size} bytes, more than the {max_bytes} read")
        data = handle.read(max_bytes + 1)  # a file still growing stops at the cap
    if len(data) > max_bytes:
        raise NotReadable(f"{path}: more than the {max_bytes} bytes read")
    return data


def require_regular(path: str | Path) -> None:
    """NotReadable unless `path` is a regular file (OSError when it cannot be looked at):
    the check to make before a file is opened by code that would block on a FIFO."""
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise NotReadable(f"{path}: not a regular file ({_kind(mode)})")


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a file"
