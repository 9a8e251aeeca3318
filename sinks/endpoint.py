"""Where a running sink's live query endpoint is, for the clients that look for it.

The sink writes `<chdb dir>.live.json` (mode 0600) when its endpoint starts
(outcomes.sinks.live); `outcomes query` on a chDB directory another process holds reads
it here (outcomes.sinks.clickhouse) and sends its statement there.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

LOOPBACK = "127.0.0.1"
ANALYST_USER = "analyst"
PASSWORD_ENV = "OUTCOMES_ANALYST_PASSWORD"


@dataclass(frozen=True)
class Endpoint:
    """Where a running sink serves queries, and the credential it expects."""

    host: str
    port: int
    user: str
    password: str
    pid: int
    database: str

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


def endpoint_file(chdb_path: str) -> Path:
    """The file next to a chDB directory that names its sink's endpoint."""
    return Path(chdb_path.rstrip("/") + ".live.json")


def read_endpoint(chdb_path: str) -> Endpoint | None:
    """The endpoint of the sink holding `chdb_path`, or None if none is advertised.

    The password is `OUTCOMES_ANALYST_PASSWORD` when set, else the file's token.
    """
    path = endpoint_file(chdb_path)
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict):
        return None
    try:
        pid = int(info["pid"])
        os.kill(pid, 0)
    except (KeyError, TypeError, ValueError, ProcessLookupError):
        return None  # stale: its sink is gone
    except PermissionError:
        pass  # alive, another user's
    password = os.environ.get(PASSWORD_ENV) or str(info.get("token") or "")
    return Endpoint(
        host=str(info.get("host", LOOPBACK)),
        port=int(info.get("port", 0)),
        user=str(info.get("user", ANALYST_USER)),
        password=password,
        pid=pid,
        database=str(info.get("database", "")),
    )
