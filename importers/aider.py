"""aider chat histories (`.aider.chat.history.md`).

Markdown, appended to across sessions (`# aider chat started at <time>`): `#### ` lines
are the user's, `> ` lines are aider's own output (`> Running <command>`,
`> Applied edit to <path>`, `> Commit <sha> <message>`, `> Create new file? … y`), and
the rest is the assistant's prose. A session's first lines name the version
(`> Aider v0.85.2`): the file has no other version mark, and its form has not changed
across the versions that write it. aider records that a command ran, never its output or
exit status, so every command's outcome is unknown: the ones the model proposed
(`> Running <command>`) and the ones the user typed (`#### /run <command>`,
`#### !<command>`, `#### /test <command>`). An edit block whose SEARCH part is empty
creates its file. Not read: `/undo` (the commit it removes is not taken back from the
changes) and `/lint` output.
"""

from __future__ import annotations

import re
from pathlib import Path

from outcomes.importers.base import Importer, moment, unreadable
from outcomes.importers.trace import FileChange, Finish, Message, Step, ToolCall, Trace

_SESSION = re.compile(r"^# aider chat started at (.+?)\s*$")
_VERSION = re.compile(r"^> Aider v(\d[\w.\-+]*)")
# A session's header names its model: `> Main model: gpt-4o with diff edit format` (older
# releases: `> Model: gpt-4 with whole edit format`); the first session's is the run's.
_MAIN_MODEL = re.compile(r"^(?:Main model|Model): (\S+)(?: with\b|\s*$)")
_USER_RUN = re.compile(r"^(?:/run |/test |!)(.+)$")
_NEW_FILE_BLOCK = re.compile(r"^(\S[^\n]*?)\s*\n```[^\n]*\n<<<<<<< SEARCH\n=======\n", re.M)


class AiderImporter(Importer):
    name = "aider-history"
    summary = "aider chat history (.aider.chat.history.md)"

    def sniff(self, head: str) -> bool:
        return bool(re.search(r"^# aider chat started at ", head, re.M))

    def read(self, path: Path, text: str) -> Trace:
        lines = text.splitlines()
        if not any(_SESSION.match(line) for line in lines[:50]):
            raise unreadable(path, self.name, "no `# aider chat started at` line")
        steps: list[Step] = []
        at: int | None = None
        user: list[str] = []
        user_start = 0
        prose: list[str] = []
        prose_start = 0
        created_by_block: set[str] = set()
        pending_new = 0
        sessions = 0
        version = ""
        model: str | None = None

        def flush_user() -> None:
            nonlocal user
            if user and any(u.strip() for u in user):
                steps.append(Message("user", "\n".join(user).strip(), at, f"line {user_start}"))
            user = []

        def flush_prose() -> None:
            nonlocal prose
            body = "\n".join(prose).strip()
            if body:
                steps.append(Message("assistant", body, at, f"line {prose_start}"))
                created_by_block.update(
                    m.group(1).strip("`* ") for m in _NEW_FILE_BLOCK.finditer(body + "\n")
                )
            prose = []

        for number, raw in enumerate(lines, start=1):
            line = raw.rstrip()
            session = _SESSION.match(line)
            if session:
                flush_user()
                flush_prose()
                at = moment(session.group(1)) or at
                sessions += 1
                continue
            if line.startswith("####"):
                flush_prose()
                typed = _USER_RUN.match(line[4:].strip())
                alone = not user and not (number < len(lines) and lines[number].startswith("####"))
                if typed and alone:
                    # a command the user ran through aider (one line of its own)
                    steps.append(
                        ToolCall(
                            f"line-{number}",
                            "user-run",
                            "shell",
                            f"line {number}",
                            at,
                            command=typed.group(1).strip(),
                        )
                    )
                    continue
                if not user:
                    user_start = number
                user.append(line[4:].strip())
                continue
            if line.startswith(">"):
                flush_user()
                flush_prose()
                body = line[1:].strip()
                where = f"line {number}"
                if found := _VERSION.match(line):
                    version = found.group(1)
                if model is None and (named := _MAIN_MODEL.match(body)):
                    model = named.group(1)
                if body.startswith("Running "):
                    last = steps[-1] if steps else None
                    if (
                        isinstance(last, ToolCall)
                        and last.tool == "user-run"
                        and last.command == body[len("Running ") :]
                    ):
                        steps.pop()  # the typed command, reported running: one call
                    steps.append(
                        ToolCall(
                            f"line-{number}",
                            "run",
                            "shell",
                            where,
                            at,
                            command=body[len("Running ") :],
                        )
                    )
                elif body.startswith("Create new file?") and body.rstrip().endswith(("y", "Yes")):
                    pending_new += 1
                elif body.startswith("Applied edit to "):
                    target = body[len("Applied edit to ") :].strip()
                    new = target in created_by_block
                    if not new and pending_new and not created_by_block:
                        new = True
                    if new:
                        pending_new = max(0, pending_new - 1)
                        created_by_block.discard(target)
                    steps.append(FileChange(target, "added" if new else "modified", where, at))
                elif m := re.match(r"^Commit ([0-9a-f]{7,40}) (.*)$", body):
                    steps.append(
                        ToolCall(
                            f"line-{number}",
                            "aider.commit",
                            "other",
                            where,
                            at,
                            output=body,
                            arguments={"sha": m.group(1)},
                        )
                    )
                elif body.startswith("Added ") and body.endswith(" to .gitignore"):
                    steps.append(FileChange(".gitignore", "modified", where, at))
                continue
            if not prose:
                prose_start = number
            prose.append(line)
        flush_user()
        flush_prose()
        if not steps:
            raise unreadable(path, self.name, "no messages")
        steps.append(Finish(f"line {len(lines)}", at))
        agent = f"aider {version}".strip() + f" ({sessions} sessions)"
        return Trace(self.name, agent, str(path), tuple(steps), model=model)
