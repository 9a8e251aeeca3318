"""A fault-injecting TCP proxy on loopback: the network between clients and a broker.

`CutProxy` listens on 127.0.0.1:`port` and relays each connection to the broker's
target port. `cut()` stops relaying in both directions without closing anything, as a
partition between two hosts does (no RST, no FIN: the clients see silence and time
out); connections opened during the cut are accepted and held silent too. `restore()`
lets bytes flow again. The broker advertises the proxy's port on a listener of its own
(`proxied_listener`), so clients that bootstrap through the proxy keep using it.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
from pathlib import Path

PROXY_PORT = 19500
"""The proxy's port (19500-19510 are the scenarios')."""
PROXIED_LISTENER = "CHAOS"


class CutProxy:
    """Relays 127.0.0.1:`port` to 127.0.0.1:`target`; `cut` and `restore` the flow."""

    def __init__(self, port: int, target: int) -> None:
        self.port = port
        self.target = target
        self.flowing = threading.Event()
        self.flowing.set()
        self._closed = threading.Event()
        self._server = socket.create_server(("127.0.0.1", port), reuse_port=False)
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._accept, daemon=True, name="cut-proxy")

    def __enter__(self) -> CutProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def cut(self) -> None:
        self.flowing.clear()

    def restore(self) -> None:
        self.flowing.set()

    def close(self) -> None:
        self._closed.set()
        self.flowing.set()
        self._server.close()
        with self._lock:
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.close()
        self._thread.join(5)

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._server.accept()
            except OSError:
                return  # closed
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target), timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        """Copy bytes from `source` to `sink` while flowing; hold them while cut."""
        try:
            while not self._closed.is_set():
                self.flowing.wait()
                ready, _, _ = select.select([source], [], [], 0.2)
                if not ready or not self.flowing.is_set():
                    continue
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass  # either side closed: the relay ends, as the connection has
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


def proxied_listener(config: Path, listen_port: int, proxy_port: int) -> None:
    """Add a listener on `listen_port` that advertises the proxy's port to a node's
    server.properties (takes effect when the node restarts)."""
    props = dict(line.split("=", 1) for line in config.read_text().splitlines() if "=" in line)
    if f"{PROXIED_LISTENER}://" in props["listeners"]:
        return
    props["listeners"] += f",{PROXIED_LISTENER}://127.0.0.1:{listen_port}"
    props["advertised.listeners"] += f",{PROXIED_LISTENER}://127.0.0.1:{proxy_port}"
    props["listener.security.protocol.map"] += f",{PROXIED_LISTENER}:PLAINTEXT"
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
