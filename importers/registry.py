"""The trace formats `outcomes import` reads, and how a file's format is found."""

from __future__ import annotations

from pathlib import Path

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
_HEAD = 256 * 1024


def read_text(path: Path) -> str:
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


def detect(path: Path, text: str) -> Importer:
    """The importer whose format the file's start looks like."""
    head = text[:_HEAD]
    matches = [i for i in IMPORTERS.values() if i.sniff(head)]
    if not matches:
        raise TraceUnreadable(
            f"{path}: not a trace of a known format (give --format: {', '.join(FORMATS)})"
        )
    return matches[0]


def read_trace(path: Path, fmt: str | None = None) -> Trace:
    """The trace in `path`, read as `fmt` (found from the content when None)."""
    text = read_text(path)
    if fmt is None:
        importer = detect(path, text)
    elif fmt in IMPORTERS:
        importer = IMPORTERS[fmt]
    else:
        raise TraceUnreadable(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
    return importer.read(path, text)
