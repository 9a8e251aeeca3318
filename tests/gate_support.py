"""A worker's gate as the gate tests run it: a real door with the gate's route, and a
thread serving its desk over states the reducers fold (`replay`), as the worker's poll
loop would. `owns` says whether it holds the runs; `owner` (a one-item list, so a test
can change it) names the door a check it does not own is forwarded to."""

from __future__ import annotations

import threading

from outcomes.common import door
from outcomes.streams.gate import GateDesk
from outcomes.streams.gate_door import GateHost, gate_component
from tests.builders import Replay


class GateWorker:
    def __init__(self, token: str, owns: bool = True, owner: list[str | None] | None = None):
        self.replay = Replay()
        self.desk = GateDesk()
        self.stop = threading.Event()
        self.forgot = 0
        self.owner = owner if owner is not None else [None]
        host = GateHost(
            desk=self.desk,
            token=token,
            owns=lambda run_id: owns,
            owner_url=lambda run_id: self.owner[0],
            forget_owners=self._forget,
        )
        self.server = door.DoorServer(door.app(gate_component(host)), "127.0.0.1", 0).start()
        self.loop = threading.Thread(target=self._serve, daemon=True)
        self.loop.start()

    def _forget(self) -> None:
        self.forgot += 1

    def _serve(self) -> None:
        while not self.stop.is_set():
            self.desk.serve(self.replay.engine.runs.get)
            self.stop.wait(0.01)

    @property
    def url(self) -> str:
        host, port = self.server.address
        return f"http://{host}:{port}"

    def close(self) -> None:
        self.stop.set()
        self.server.stop()
