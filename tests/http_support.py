"""Raw HTTP over a socket, for the HTTP doors' tests: requests no client library would
send (malformed headers, lying lengths, slow bodies), and answers read strictly."""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass
from email.message import Message
from email.parser import BytesHeaderParser

import h11


@dataclass
class Reply:
    """One answer: its status, headers (names in any case), body, and whether the server
    closed the connection after it."""

    status: int
    headers: Message
    body: bytes
    closed: bool

    def header_names(self) -> list[str]:
        return [name.lower() for name in self.headers]


class NoAnswer(AssertionError):
    """The server sent no complete answer in time."""


def exchange(
    address: tuple[str, int],
    *parts: bytes,
    pause: float = 0.0,
    timeout: float = 10.0,
    method: bytes = b"GET",
) -> Reply:
    """Send `parts` (with `pause` seconds between them) and read one answer, strictly
    (h11 as the client: a malformed answer raises). Raises NoAnswer when none arrives
    within `timeout` seconds of the last part."""
    with socket.create_connection(address, timeout=timeout) as sock:
        for index, part in enumerate(parts):
            if index and pause:
                time.sleep(pause)
            try:
                sock.sendall(part)
            except (BrokenPipeError, ConnectionResetError):
                break  # the server answered and closed: read what it said
        return read_reply(sock, timeout, method)


def read_reply(sock: socket.socket, timeout: float, method: bytes = b"GET") -> Reply:
    client = h11.Connection(h11.CLIENT, max_incomplete_event_size=1 << 20)
    # h11 reads an answer only after a request: tell it what kind was sent.
    verb = method if method in (b"HEAD",) else b"GET"
    client.send(h11.Request(method=verb, target="/", headers=[("Host", "x")]))
    client.send(h11.EndOfMessage())
    deadline = time.monotonic() + timeout
    status = 0
    raw_headers: list[tuple[bytes, bytes]] = []
    body = bytearray()
    while True:
        event = client.next_event()
        if event is h11.NEED_DATA:
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                data = sock.recv(65536)
            except TimeoutError:
                raise NoAnswer(f"no complete answer within {timeout} s") from None
            except ConnectionResetError:
                data = b""
            if not data and status == 0:
                raise NoAnswer("the server closed the connection without an answer")
            client.receive_data(data)
            continue
        if isinstance(event, h11.InformationalResponse):
            continue
        if isinstance(event, h11.Response):
            status = event.status_code
            raw_headers = list(event.headers)
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
            break
    text = b"".join(name + b": " + value + b"\r\n" for name, value in raw_headers)
    headers = BytesHeaderParser().parsebytes(text + b"\r\n")
    closed = client.their_state is h11.MUST_CLOSE or _peer_closed(sock)
    return Reply(status, headers, bytes(body), closed)


def _peer_closed(sock: socket.socket) -> bool:
    """Whether the server closed the connection (it said nothing more within 0.1 s)."""
    sock.settimeout(0.1)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def request_bytes(
    method: str, target: str, headers: list[tuple[str, str]], body: bytes = b""
) -> bytes:
    """A request as bytes, exactly as given (no header added but Host)."""
    lines = [f"{method} {target} HTTP/1.1", "Host: test", *(f"{k}: {v}" for k, v in headers)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def chunked(*pieces: bytes) -> bytes:
    """A chunked body of `pieces`, with its last chunk."""
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces if p) + b"0\r\n\r\n"
