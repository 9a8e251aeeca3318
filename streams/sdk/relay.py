"""The webhook relay: each notification POSTed, signed, to an HTTP endpoint.

:class:`WebhookRelay` is a handler for :class:`outcomes.streams.sdk.consumer.OutcomesConsumer`:
it POSTs the record's canonical JSON (`{"record": kind, ...}`, sorted keys, the same
bytes on every attempt) with the headers of `outcomes.streams.sdk.webhook` (timestamp, HMAC-SHA256
signature, the record id as `Idempotency-Key`). What the endpoint answers decides:

- 2xx: delivered; the consumer commits the record once the handler returned;
- 5xx, 408, 429, a timeout or a connection error: :class:`RetryLater`, so the consumer
  retries with exponential backoff and jitter (honouring `Retry-After`, in seconds or as
  an HTTP date, up to `max_backoff`), until delivered by default; the partition waits
  meanwhile, so a run's notifications stay in order;
- any other status (4xx, and 3xx: redirects are not followed): :class:`Reject`, so the
  record is dead-lettered with the status and the start of the response, and the relay
  goes on.

The relay keeps its own limits whatever the endpoint does: one attempt (connecting,
sending, reading the status, the headers and the body) has `timeout` seconds in all,
however slowly the endpoint trickles its bytes (each socket operation gets what is left
of that time); the response body is read up to `max_response_bytes` (the rest is not
read: the connection is closed instead); a `Retry-After` longer than `max_backoff` counts
as `max_backoff`. The status decides: a 2xx whose body is cut short by the deadline is
delivered (the connection is closed). Name resolution is the system resolver's, outside
the deadline: give an address or a name your resolver answers at once.

At least once: a crash between the endpoint's 2xx and the commit sends the record again,
with the same `Idempotency-Key`. Standard library HTTP (`http.client`), one keep-alive
connection.
"""

from __future__ import annotations

import email.utils
import http.client
import io
import logging
import math
import os
import socket
import ssl
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from outcomes.reducers.errors import OutcomesError
from outcomes.streams.sdk.consumer import Item, Reject, RetryLater
from outcomes.streams.sdk.webhook import IDEMPOTENCY_HEADER, MIN_SECRET_BYTES, RECORD_HEADER, sign

log = logging.getLogger(__name__)

REJECTED_BY_ENDPOINT: Final = "webhook_rejected"
"""The dead-letter reason of a record the endpoint refused (a 4xx answer)."""
_RETRYABLE_STATUS: Final = frozenset({408, 429})
_SHOWN_RESPONSE_BYTES: Final = 512
_MAX_TIMEOUT: Final = 86_400.0  # a socket timeout must fit the platform's time_t
MAX_RESPONSE_BYTES: Final = 64 * 1024
"""Response body bytes read at most (only the start is shown; the rest is not read)."""


class RelayError(OutcomesError):
    """The relay cannot start as configured (no secret, a bad URL). Operators: set
    OUTCOMES_RELAY_SECRET or --secret-file, and give an http(s) URL."""


@dataclass
class RelayStats:
    """What the endpoint answered."""

    delivered: int = 0
    failed_attempts: int = 0
    rejected: int = 0


SECRET_ENV: Final = "OUTCOMES_RELAY_SECRET"
SECRET_FILE_ENV: Final = "OUTCOMES_RELAY_SECRET_FILE"


def load_secret(path: Path | None = None, env: Mapping[str, str] | None = None) -> str:
    """The shared secret: the file `path` if given, else OUTCOMES_RELAY_SECRET_FILE's
    file, else OUTCOMES_RELAY_SECRET. Raises RelayError when there is none: the relay
    never sends unsigned. The secret itself never appears in a message."""
    env = os.environ if env is None else env
    if path is None and env.get(SECRET_FILE_ENV):
        path = Path(env[SECRET_FILE_ENV])
    if path is not None:
        try:
            secret = path.expanduser().read_text(encoding="utf-8").rstrip("\r\n")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            raise RelayError(f"relay secret file {path}: cannot read it ({reason})") from None
        if not secret:
            raise RelayError(f"relay secret file {path} is empty")
        return secret
    secret = env.get(SECRET_ENV, "")
    if not secret:
        raise RelayError(
            f"no relay secret: set {SECRET_ENV} or give --secret-file "
            f"({SECRET_FILE_ENV}); the relay never sends unsigned notifications"
        )
    return secret


def _public_url(url: str) -> str:
    """The URL without credentials or query (which may hold tokens), for logs."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """The seconds a `Retry-After` value asks to wait: a number of seconds, or an HTTP
    date (RFC 9110: IMF-fixdate, or the obsolete forms), 0 for a date past; None when
    absent or unreadable (the consumer's own backoff then decides)."""
    if value is None:
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        if when.tzinfo is None:  # an HTTP date is GMT
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if math.isnan(seconds):
        return None
    return max(0.0, seconds)


class _DeadlineSocket:
    """A connected socket whose every send and receive gets what is left of the attempt's
    deadline as its timeout, so an endpoint trickling bytes cannot stretch an attempt.

    It stands in for the socket `http.client` holds: `sendall`, `makefile("rb")` (over
    `recv_into`) and `close` are what the connection and its response use; anything
    else goes to the socket itself.
    """

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock = sock
        self.deadline = deadline
        self._readers = 0  # open makefile() readers: a close waits for them, as socket's
        self._closed = False

    def _left(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the attempt's deadline passed")
        return left

    def sendall(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            self._sock.settimeout(self._left())
            sent = self._sock.send(view)
            view = view[sent:]

    def recv_into(self, buffer: Any, *args: Any) -> int:
        self._sock.settimeout(self._left())
        received: int = self._sock.recv_into(buffer, *args)  # TLS: its own defaults
        return received

    def makefile(self, mode: str = "rb", *args: Any, **kwargs: Any) -> io.BufferedReader:
        if mode != "rb":
            raise ValueError(f"only 'rb' is supported, not {mode!r}")
        self._readers += 1
        raw = socket.SocketIO(self, "rb")  # type: ignore[arg-type]
        return io.BufferedReader(raw, io.DEFAULT_BUFFER_SIZE)

    def _decref_socketios(self) -> None:  # SocketIO.close calls it
        self._readers -= 1
        if self._closed and self._readers <= 0:
            self._sock.close()

    def close(self) -> None:
        self._closed = True
        if self._readers <= 0:
            self._sock.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


class _Connection(http.client.HTTPConnection):
    """An HTTP connection whose attempts each end by `deadline` (`time.monotonic`)."""

    deadline: float = math.inf

    def connect(self) -> None:
        self.timeout = max(0.001, self.deadline - time.monotonic())
        super().connect()
        self.sock = _DeadlineSocket(self.sock, self.deadline)


class _TLSConnection(http.client.HTTPSConnection):
    """`_Connection` over TLS (the handshake is bounded by the deadline too)."""

    deadline: float = math.inf

    def connect(self) -> None:
        self.timeout = max(0.001, self.deadline - time.monotonic())
        super().connect()
        self.sock = _DeadlineSocket(self.sock, self.deadline)


class WebhookRelay:
    """POSTs items to `url`, signed with `secret` (or each of `secret`s, while rotating).

    `timeout` bounds each attempt as a whole (seconds); `max_backoff` caps the wait a
    `Retry-After` asks for; `max_response_bytes` caps the response body read. Use as the
    consumer's handler: `consumer.run(relay.deliver)`.
    """

    def __init__(
        self,
        url: str,
        secret: str | bytes | Iterable[str | bytes],
        *,
        timeout: float = 10.0,
        max_backoff: float | None = None,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
        headers: Mapping[str, str] | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        if not 0 < timeout <= _MAX_TIMEOUT or (max_backoff is not None and not max_backoff >= 0):
            raise RelayError(
                f"--timeout must be > 0 and at most {_MAX_TIMEOUT:g}, "
                "and --max-backoff >= 0 (seconds)"
            )
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise RelayError(f"--url must be an http:// or https:// URL, got {_public_url(url)!r}")
        secrets = [secret] if isinstance(secret, str | bytes) else list(secret)
        if not secrets or any(
            len(s.encode() if isinstance(s, str) else s) < MIN_SECRET_BYTES for s in secrets
        ):
            raise RelayError(
                f"the relay secret must be at least {MIN_SECRET_BYTES} bytes "
                "(set OUTCOMES_RELAY_SECRET or --secret-file)"
            )
        self.url = url
        self.public_url = _public_url(url)
        self._secrets = secrets
        self._timeout = timeout
        self._max_backoff = max_backoff
        self._max_response = max(_SHOWN_RESPONSE_BYTES, max_response_bytes)
        self._scheme = parts.scheme
        self._host = parts.hostname
        self._port = parts.port
        self._target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._ssl = ssl_context
        self._extra = dict(headers or {})
        self._user_agent = f"outcomes-relay/{version('outcomes')}"
        self._connection: _Connection | _TLSConnection | None = None
        self._reused = False  # the connection served a request and was kept open
        self.stats = RelayStats()

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        self._reused = False

    def _connect(self, deadline: float) -> _Connection | _TLSConnection:
        connection = self._connection
        if connection is None:
            if self._scheme == "https":
                connection = _TLSConnection(
                    self._host,
                    self._port,
                    timeout=self._timeout,
                    context=self._ssl or ssl.create_default_context(),
                )
            else:
                connection = _Connection(self._host, self._port, timeout=self._timeout)
            self._connection = connection
        connection.deadline = deadline
        if isinstance(connection.sock, _DeadlineSocket):  # kept alive from an earlier attempt
            connection.sock.deadline = deadline
        return connection

    def _post(
        self, body: bytes, headers: Mapping[str, str], deadline: float
    ) -> tuple[int, bytes, str | None]:
        """One request: the status, the start of the response body, its Retry-After."""
        connection = self._connect(deadline)
        connection.request("POST", self._target, body=body, headers=dict(headers))
        response = connection.getresponse()
        status, after = response.status, response.getheader("Retry-After")
        try:
            text = response.read(self._max_response)
        except (OSError, http.client.HTTPException) as exc:
            # The status is the answer; its body was cut short (the deadline, a reset).
            self.close()
            return status, f"(answer body unread: {type(exc).__name__})".encode(), after
        if response.will_close or not response.isclosed():
            self.close()  # said so, or more body than is read: not reusable
        else:
            self._reused = True
        return status, text, after

    def deliver(self, item: Item) -> None:
        """POST one item; return when the endpoint accepted it (2xx), else raise
        RetryLater (try again later) or Reject (dead-letter it)."""
        body = item.to_json_bytes()
        headers = {
            **self._extra,
            "Content-Type": "application/json",
            "User-Agent": self._user_agent,
            IDEMPOTENCY_HEADER: item.id,
            RECORD_HEADER: item.record,
            **sign(self._secrets, body),
        }
        deadline = time.monotonic() + self._timeout
        try:
            try:
                status, text, asked = self._post(body, headers, deadline)
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                if not self._reused:
                    raise
                # The endpoint closed the idle keep-alive connection: once more, anew.
                self.close()
                status, text, asked = self._post(body, headers, deadline)
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            self.stats.failed_attempts += 1
            if time.monotonic() >= deadline:
                raise RetryLater(
                    f"POST {self.public_url}: no complete answer within {self._timeout:g} s"
                ) from None
            raise RetryLater(
                f"POST {self.public_url}: {type(exc).__name__}: {exc or 'no answer'}"
            ) from None
        if 200 <= status < 300:
            self.stats.delivered += 1
            return
        shown = text[:_SHOWN_RESPONSE_BYTES].decode("utf-8", "replace").strip()
        more = "…" if len(text) > _SHOWN_RESPONSE_BYTES else ""
        answer = f"HTTP {status} from {self.public_url}: {shown}{more}"
        if status >= 500 or status in _RETRYABLE_STATUS:
            self.stats.failed_attempts += 1
            after = retry_after(asked)
            if after is not None and self._max_backoff is not None:
                after = min(after, self._max_backoff)
            raise RetryLater(answer, after=after)
        self.stats.rejected += 1
        raise Reject(REJECTED_BY_ENDPOINT, answer)
