"""The trace formats `outcomes import` reads, and how a file's format is found."""

from __future__ import annotations

from pathlib import Path

from outcomes.common.files import NotReadable, require_regular
from outcomes.importers.aider import AiderImporter
from outcomes.importers.base import Importer
from outcomes.importers.claude_code import ClaudeCodeImporter
from outcomes.importers.gemini_cli import GeminiCliImporter
from outcomes.importers.mini_swe_agent import MiniSweAgentImporter
from outcomes.importers.openhands import OpenHandsImporter
from outcomes.importers.trace import Trace, TraceUnreadable

IMPORTERS: dict[str, Importer] = {
    i.name: i
    for i in (
        ClaudeCodeImporter(),
        OpenHandsImporter(),
        MiniSweAgentImporter(),
        GeminiCliImporter(),
        AiderImporter(),
    )
}
FORMATS = tuple(IMPORTERS)
# Detection looks at a file's start and, when that is not enough, its end: a format that
# writes its marker last (mini-swe-agent's `trajectory_format` closes the file) is found
# there. Neither slice is more than this many characters, whatever the file's size.
_HEAD = 256 * 1024
_TAIL = 4 * 1024


def _regular(path: Path) -> None:
    """TraceUnreadable unless `path` is a regular file (a FIFO would block the read, a
    device such as /dev/zero would never end it)."""
    try:
        require_regular(path)
    except FileNotFoundError:
        raise TraceUnreadable(f"{path}: no such file") from None
    except NotReadable as exc:
        raise TraceUnreadable(str(exc)) from None
    except OSError as exc:
        raise TraceUnreadable(f"{path}: cannot be read ({exc.strerror})") from None


def read_text(path: Path) -> str:
    _regular(path)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TraceUnreadable(f"{path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise TraceUnreadable(
            f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from None
    except OSError as exc:
        raise TraceUnreadable(f"{path}: cannot be read ({exc.strerror})") from None


def detect_file(path: Path) -> Importer:
    """The importer for the file at `path`, from its first and last bytes only: a file
    of no known format is refused without being read whole."""
    _regular(path)
    try:
        with path.open("rb") as handle:
            head = handle.read(_HEAD * 4)  # a character is at most 4 bytes
            size = handle.seek(0, 2)
            tail = b""
            if size > _HEAD:
                handle.seek(max(0, size - _TAIL * 4))
                tail = handle.read()
    except OSError as exc:
        raise TraceUnreadable(f"{path}: cannot be read ({exc.strerror})") from None
    head_text = head.decode("utf-8", errors="ignore")[:_HEAD]
    tail_text = tail.decode("utf-8", errors="ignore")[-_TAIL:]
    text = head_text + "\n" + tail_text if tail_text else head_text
    return detect(path, text, len(head_text))


def detect(path: Path, text: str, head: int = _HEAD) -> Importer:
    """The importer whose format the file's start (or, failing that, its end) looks like.
    Only those two slices are looked at (`head` characters, then the last _TAIL), and
    every sniffer reads them without recursing into nested values, so a file of any size
    or nesting is detected in bounded work."""
    for part in (text[:head], text[-_TAIL:] if len(text) > head else ""):
        if not part:
            continue
        for importer in IMPORTERS.values():
            if importer.sniff(part):
                return importer
    raise TraceUnreadable(
        f"{path}: not a trace of a known format (give --format: {', '.join(FORMATS)})"
    )


def read_trace(path: Path, fmt: str | None = None) -> Trace:
    """The trace in `path`, read as `fmt` (found from the content when None)."""
    if fmt is None:
        importer = detect_file(path)
    elif fmt in IMPORTERS:
        importer = IMPORTERS[fmt]
    else:
        raise TraceUnreadable(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
    text = read_text(path)
    try:
        return importer.read(path, text)
    except RecursionError:
        # every reader bounds its own nesting; this is the backstop, one line
        raise TraceUnreadable(
            f"{path}: cannot be read as {importer.name} (nested too deeply)"
        ) from None
