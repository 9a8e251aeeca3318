"""mini-swe-agent trajectories (`*.traj.json`).

A JSON object with `messages` (system, the task as the first user message, then
assistant turns each holding one ```` ```bash ```` block, each answered by a user message
`<returncode>N</returncode>` with `<output>` or a `<warning>` for long output) and `info`
(`exit_status`, `submission`: the final `git diff` of the repository). Assistant turns
carry their model response's `created` time in `extra.response`. The last assistant turn
(its THOUGHT and the submit command) is the final message.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from outcomes.importers.base import Importer, moment, obj, text_of, unreadable
from outcomes.importers.patch import patch_changes
from outcomes.importers.trace import (
    Finish,
    Message,
    Skipped,
    Step,
    ToolCall,
    Trace,
    ends_with_a_result,
)

# mini-swe-agent's own action pattern: a fenced block tagged `bash`
_BLOCK = re.compile(r"```(?:bash|sh)\s*\n(.*?)\n```", re.S)
_RETURN = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")
_OUTPUT = re.compile(r"<output>\n?(.*?)</output>", re.S)
_HEADTAIL = re.compile(r"<output_(?:head|tail)>\n?(.*?)</output_(?:head|tail)>", re.S)


class MiniSweAgentImporter(Importer):
    name = "mini-swe-agent"
    summary = "mini-swe-agent trajectory (.traj.json)"

    def sniff(self, head: str) -> bool:
        return ('"trajectory_format"' in head and "mini-swe-agent" in head) or (
            '"messages"' in head and "<returncode>" in head
        )

    def read(self, path: Path, text: str) -> Trace:
        try:
            data: Any = json.loads(text)
        except ValueError as exc:
            raise unreadable(path, self.name, f"not JSON: {exc}") from None
        if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
            raise unreadable(path, self.name, "no `messages` list")
        info = obj(data.get("info"))
        steps: list[Step] = []
        skipped: list[Skipped] = []
        pending: dict[str, Any] | None = None
        records: list[dict[str, Any] | Message] = []
        at: int | None = None
        for index, message in enumerate(data["messages"]):
            where = f"message {index}"
            if not isinstance(message, dict):
                skipped.append(Skipped(where, "not a message object"))
                continue
            role = message.get("role")
            content = text_of(message.get("content"))
            extra = obj(message.get("extra"))
            response = obj(extra.get("response"))
            at = moment(response.get("created")) or at
            if role == "system":
                continue
            if role == "assistant":
                records.append(Message("assistant", content, at, where))
                blocks = _BLOCK.findall(content)
                if len(blocks) == 1:
                    pending = {
                        "call_id": f"message-{index}",
                        "tool": "bash",
                        "kind": "shell",
                        "command": blocks[0].strip(),
                        "where": where,
                        "at": at,
                    }
                    records.append(pending)
                else:
                    pending = None
                    if blocks:
                        skipped.append(
                            Skipped(where, f"{len(blocks)} bash blocks (the agent runs none)")
                        )
                continue
            if role == "user":
                code = _RETURN.search(content)
                if pending is not None and code is not None:
                    out = _OUTPUT.search(content)
                    body = out.group(1) if out else "\n".join(_HEADTAIL.findall(content)) or content
                    pending["output"] = body
                    pending["exit_code"] = int(code.group(1))
                    pending["timed_out"] = "timed out" in content[:300].lower() and out is None
                    pending = None
                elif pending is not None and index > 1:
                    # the submit step's answer, or a format error: its text is the output
                    pending["output"] = content
                    pending = None
                else:
                    records.append(Message("user", content, at, where))
                continue
            skipped.append(Skipped(where, f"role {role!r} is not mapped"))
        for r in records:
            steps.append(r if isinstance(r, Message) else ToolCall(**r))
        if not steps:
            raise unreadable(path, self.name, "no user or assistant messages")
        submission = info.get("submission")
        final = (
            patch_changes(submission, "info.submission")
            if isinstance(submission, str) and submission.strip()
            else None
        )
        steps.append(Finish(f"message {len(data['messages']) - 1}", at))
        version = str(info.get("mini_version") or data.get("trajectory_format") or "")
        model = ""
        config = obj(info.get("config"))
        if isinstance(config.get("model"), dict):
            model = str(config["model"].get("model_name") or "")
        agent = f"mini-swe-agent {version}".strip() + (f" ({model})" if model else "")
        return Trace(
            self.name,
            agent,
            str(path),
            tuple(steps),
            final_inventory=final,
            skipped=tuple(skipped),
            complete=ends_with_a_result(steps),
        )
