"""The change list of a unified git diff (a run's final patch against its base)."""

from __future__ import annotations

import re

from outcomes.importers.trace import FileChange

_FILE = re.compile(r"^diff --git a/(.+?) b/(.+?)\s*$")


def patch_changes(patch: str, where: str) -> tuple[FileChange, ...]:
    """One FileChange per file of `patch`: added (`new file mode`), deleted (`deleted
    file mode`), a rename as deleted + added, otherwise modified."""
    out: list[FileChange] = []
    current: list[str] | None = None

    def close(block: list[str] | None) -> None:
        if not block:
            return
        m = _FILE.match(block[0])
        if m is None:
            return
        a, b = m.group(1), m.group(2)
        body = block[1:8]
        if any(line.startswith("new file mode") for line in body):
            out.append(FileChange(b, "added", where, None))
        elif any(line.startswith("deleted file mode") for line in body):
            out.append(FileChange(a, "deleted", where, None))
        elif a != b or any(line.startswith("rename from") for line in body):
            out.append(FileChange(a, "deleted", where, None))
            out.append(FileChange(b, "added", where, None))
        else:
            out.append(FileChange(b, "modified", where, None))

    for line in patch.splitlines():
        if line.startswith("diff --git "):
            close(current)
            current = [line]
        elif current is not None:
            current.append(line)
    close(current)
    return tuple(out)
