"""The processes of a chaos scenario: workers (`outcomes worker`, or the hooked one when
a scenario breaks it on purpose) and sinks (`outcomes.devtools.chaos.hooked sink`: the real sink
with merges stopped). Logs go to files, never to pipes a stopped reader could fill."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from outcomes.devtools.chaos.hooked import HOOK_ENV
from outcomes.devtools.harness import LoggedProcess, WorkerProcess


@dataclass
class ChaosWorker(WorkerProcess):
    """A worker of the scenario's app; with `hook`, the hooked worker (devtools/chaos/hooked.py)."""

    hook: str | None = None

    def _command(self) -> list[str]:
        if self.hook is None:
            return super()._command()
        return [sys.executable, "-m", "outcomes.devtools.chaos.hooked", "worker"]

    def _environment(self) -> dict[str, str]:
        env = super()._environment()
        if self.hook is not None:
            env[HOOK_ENV] = self.hook
        return env


@dataclass
class SinkProcess(LoggedProcess):
    """One sink subprocess writing to the scenario's ClickHouse."""

    bootstrap: str
    dsn: str
    group: str
    log_path: Path
    hook: str | None = None
    batch_rows: int | None = None
    """Records per write (None: the sink's default)."""
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0
    _log: IO[bytes] | None = field(default=None, repr=False)

    def start(self) -> SinkProcess:
        args = [
            sys.executable,
            "-m",
            "outcomes.devtools.chaos.hooked",
            "sink",
            "--bootstrap",
            self.bootstrap,
            "--clickhouse",
            self.dsn,
            "--group-id",
            self.group,
        ]
        if self.batch_rows is not None:
            args += ["--batch-rows", str(self.batch_rows)]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        env.pop(HOOK_ENV, None)
        if self.hook is not None:
            env[HOOK_ENV] = self.hook
        self._spawn(args, env)
        self.starts += 1
        return self

    def _describe(self) -> str:
        return "sink"

    def kill(self) -> None:
        """SIGKILL: no flush, no commit; then reap it."""
        self.signal(signal.SIGKILL)
        self.wait(30)
