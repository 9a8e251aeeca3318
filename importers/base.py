"""The one small interface every trace importer has, and the helpers they share."""

from __future__ import annotations

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


def text_of(content: object) -> str:
    """The text of a message content: a string, or a list of blocks with `text`."""
    if content is None:
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
                    parts.append(text_of(block["content"]))
        return "\n".join(p for p in parts if p)
    if isinstance(content, dict):
        return text_of(content.get("text") or content.get("content"))
    return str(content)


def unreadable(path: Path, fmt: str, why: str) -> TraceUnreadable:
    return TraceUnreadable(f"{path}: not a {fmt} trace ({why})")


def obj(value: object) -> dict[str, Any]:
    """`value` if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def role(value: object) -> Role:
    return "user" if value == "user" else "assistant"
