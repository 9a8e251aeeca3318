"""The webhook relay: each notification POSTed, signed, to an HTTP endpoint.

:class:`WebhookRelay` is a handler for :class:`outcomes.streams.sdk.consumer.OutcomesConsumer`:
it POSTs the record's canonical JSON (`{"record": kind, ...}`, sorted keys, the same
bytes on every attempt) with the headers of `outcomes.streams.sdk.webhook` (timestamp, HMAC-SHA256
signature, the record id as `Idempotency-Key`). What the endpoint answers decides:

- 2xx: delivered; the consumer commits the record once the handler returned;
- 5xx, 408, 429, a timeout or a connection error: :class:`RetryLater`, so the consumer
  retries with exponential backoff and jitter (honouring `Retry-After`), until delivered
  by default; the partition waits meanwhile, so a run's notifications stay in order;
- any other status (4xx, and 3xx: redirects are not followed): :class:`Reject`, so the
  record is dead-lettered with the status and the start of the response, and the relay
  goes on.

At least once: a crash between the endpoint's 2xx and the commit sends the record again,
with the same `Idempotency-Key`. Standard library HTTP (`http.client`), one keep-alive
connection.
"""

from __future__ import annotations

import http.client
import logging
import os
import ssl
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

from outcomes.reducers.errors import OutcomesError
from outcomes.streams.sdk.consumer import Item, Reject, RetryLater
from outcomes.streams.sdk.webhook import IDEMPOTENCY_HEADER, MIN_SECRET_BYTES, RECORD_HEADER, sign

log = logging.getLogger(__name__)

REJECTED_BY_ENDPOINT: Final = "webhook_rejected"
"""The dead-letter reason of a record the endpoint refused (a 4xx answer)."""
_RETRYABLE_STATUS: Final = frozenset({408, 429})
_SHOWN_RESPONSE_BYTES: Final = 512


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


def _retry_after(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:  # an HTTP date: fall back on the consumer's own backoff
        return None


class WebhookRelay:
    """POSTs items to `url`, signed with `secret` (or each of `secret`s, while rotating).

    `timeout` bounds the connection and each read (seconds). Use as the consumer's
    handler: `consumer.run(relay.deliver)`.
    """

    def __init__(
        self,
        url: str,
        secret: str | bytes | Iterable[str | bytes],
        *,
        timeout: float = 10.0,
        headers: Mapping[str, str] | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
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
        self._scheme = parts.scheme
        self._host = parts.hostname
        self._port = parts.port
        self._target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._ssl = ssl_context
        self._extra = dict(headers or {})
        self._user_agent = f"outcomes-relay/{version('outcomes')}"
        self._connection: http.client.HTTPConnection | None = None
        self._reused = False  # the connection served a request and was kept open
        self.stats = RelayStats()

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        self._reused = False

    def _connect(self) -> http.client.HTTPConnection:
        if self._connection is None:
            if self._scheme == "https":
                self._connection = http.client.HTTPSConnection(
                    self._host,
                    self._port,
                    timeout=self._timeout,
                    context=self._ssl or ssl.create_default_context(),
                )
            else:
                self._connection = http.client.HTTPConnection(
                    self._host, self._port, timeout=self._timeout
                )
        return self._connection

    def _post(self, body: bytes, headers: Mapping[str, str]) -> tuple[int, bytes, str | None]:
        """One request: the status, the response body, its Retry-After header."""
        connection = self._connect()
        connection.request("POST", self._target, body=body, headers=dict(headers))
        response = connection.getresponse()
        text = response.read()  # all of it, so the connection can be reused
        if response.will_close:
            self.close()
        else:
            self._reused = True
        return response.status, text, response.getheader("Retry-After")

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
        try:
            try:
                status, text, retry_after = self._post(body, headers)
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                if not self._reused:
                    raise
                # The endpoint closed the idle keep-alive connection: once more, anew.
                self.close()
                status, text, retry_after = self._post(body, headers)
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            self.stats.failed_attempts += 1
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
            raise RetryLater(answer, after=_retry_after(retry_after))
        self.stats.rejected += 1
        raise Reject(REJECTED_BY_ENDPOINT, answer)
