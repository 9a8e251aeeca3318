"""The one small interface every trace importer has, and the helpers they share."""

from __future__ import annotations

import json
import math
import re
from abc import ABC, abstractmethod
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from outcomes.importers.trace import Role, Trace, TraceUnreadable
from outcomes.reducers.timefmt import datetime_micros


class Importer(ABC):
    """Reads one trace format. `name` is the `--format` value; `sniff` says whether the
    start of a file looks like this format; `read` turns a whole file into a `Trace`
    (raising TraceUnreadable when it is not one)."""

    name: str = ""
    summary: str = ""

    @abstractmethod
    def sniff(self, head: str) -> bool: ...

    @abstractmethod
    def read(self, path: Path, text: str) -> Trace: ...


def moment(value: object) -> int | None:
    """Microseconds since the epoch for a trace's timestamp: RFC 3339 (a timestamp
    without a zone is read as UTC, the way these tools write UTC clocks), or Unix
    seconds. None when there is none or it cannot be read."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
        if not math.isfinite(seconds) or abs(seconds) > 1e21:
            return None  # NaN, an infinity or past any calendar: no time
        if seconds > 1e14:  # already micro- or milliseconds
            seconds = seconds / 1e6 if seconds > 1e17 else seconds / 1e3
        return int(seconds * 1_000_000)
    if not isinstance(value, str):
        return None
    text = value.strip().replace(" ", "T", 1) if re.match(r"\d{4}-\d\d-\d\d \d", value) else value
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return datetime_micros(parsed)


# How deep a reader follows nested content or keeps nested arguments: the formats read
# here nest a few levels; a deeper value is cut, never followed without bound.
MAX_NESTING = 16


class TooDeep(ValueError):
    """A JSON value nested deeper than the parser can follow."""


def load_json(text: str | bytes) -> Any:
    """`json.loads`, with a document nested past the parser's limit (which raises
    RecursionError inside the parser) as a ValueError like any other unreadable JSON."""
    try:
        return json.loads(text)
    except RecursionError:
        raise TooDeep("nested too deeply to read") from None


def json_lines(text: str) -> list[tuple[int, Any, str | None]]:
    """Each non-blank line of a JSONL text as (line number, value, None), or
    (line number, None, why) when the line is not JSON (or nested too deeply)."""
    rows: list[tuple[int, Any, str | None]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append((number, load_json(line), None))
        except ValueError as exc:
            rows.append((number, None, f"not JSON: {str(exc)[:120]}"))
    return rows


def first_json_lines(head: str, count: int) -> list[Any]:
    """The first `count` lines of a file's start that parse as JSON (for `sniff`)."""
    found: list[Any] = []
    for line in head.splitlines()[:count]:
        try:
            found.append(load_json(line))
        except ValueError:
            continue
    return found


def bounded(value: Any, depth: int = MAX_NESTING) -> Any:
    """`value` with containers nested deeper than `depth` replaced by "…": what a reader
    keeps of a tool's arguments, so nothing downstream follows a value without bound."""
    if isinstance(value, dict):
        if depth <= 0:
            return "…"
        return {k: bounded(v, depth - 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        if depth <= 0:
            return "…"
        return [bounded(v, depth - 1) for v in value]
    return value


def text_of(content: object, _depth: int = 0) -> str:
    """The text of a message content: a string, or a list of blocks with `text` (blocks
    nested deeper than MAX_NESTING are not followed)."""
    if content is None or _depth > MAX_NESTING:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict):
                if isinstance(block.get("text"), str):
                    parts.append(block["text"])
                elif isinstance(block.get("content"), str | list):
                    parts.append(text_of(block["content"], _depth + 1))
        return "\n".join(p for p in parts if p)
    if isinstance(content, dict):
        return text_of(content.get("text") or content.get("content"), _depth + 1)
    return str(content)


def unreadable(path: Path, fmt: str, why: str) -> TraceUnreadable:
    return TraceUnreadable(f"{path}: not a {fmt} trace ({why})")


def obj(value: object) -> dict[str, Any]:
    """`value` if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def word(value: object) -> str:
    """A field that names a kind, status or role: the string, or "" for any other value
    (a reader compares it with the names it knows and never hashes a list by mistake)."""
    return value if isinstance(value, str) else ""


def path_of(*values: object) -> str | None:
    """The first of `values` that is a non-empty string: a file path field."""
    return next((v for v in values if isinstance(v, str) and v), None)


def key_of(value: object) -> str | int | None:
    """An id field as a dictionary key (a string or an integer), else None."""
    return value if isinstance(value, str | int) and not isinstance(value, bool) else None


def role(value: object) -> Role:
    return "user" if value == "user" else "assistant"
