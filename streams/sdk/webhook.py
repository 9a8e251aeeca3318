"""Signed webhooks: what `outcomes relay` sends, and the check a receiver runs.

Every POST the relay makes carries:

- `X-Outcomes-Timestamp`: when it was signed, whole seconds since the Unix epoch;
- `X-Outcomes-Signature`: `v1=<hex HMAC-SHA256 of "<timestamp>.<body>">` keyed with the
  shared secret (one `v1=` entry per secret while a secret is being rotated, separated
  by commas);
- `Idempotency-Key`: the record's deterministic id (a notification's `<run_id>:<revision>`),
  the same on every retry and redelivery, so the receiver can drop duplicates;
- `X-Outcomes-Record`: the record kind (`notification`, `claim_notification`).

A receiver calls :func:`verify` with the raw body bytes (before any JSON parsing) and the
headers: it checks the signature in constant time and rejects a timestamp outside the
tolerance window (default 5 minutes), so a captured request cannot be replayed later.
Standard library only, so a receiver can copy this module alone (tests/test_relay.py runs
a copy outside the project). That is why `WebhookVerificationError` is a `ValueError` and
not, like the project's other errors, an `OutcomesError`: the root error lives in a
package a receiver does not have.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Iterable, Mapping
from typing import Final

TIMESTAMP_HEADER: Final = "X-Outcomes-Timestamp"
SIGNATURE_HEADER: Final = "X-Outcomes-Signature"
IDEMPOTENCY_HEADER: Final = "Idempotency-Key"
RECORD_HEADER: Final = "X-Outcomes-Record"
SCHEME: Final = "v1"
DEFAULT_TOLERANCE: Final = 300.0
MIN_SECRET_BYTES: Final = 16


class WebhookVerificationError(ValueError):
    """A webhook request failed verification (missing header, bad signature, stale or
    future timestamp). Receivers: answer 400 or 401 and do not act on the body."""


def _key(secret: str | bytes) -> bytes:
    return secret.encode("utf-8") if isinstance(secret, str) else secret


def signature(secret: str | bytes, timestamp: int, body: bytes) -> str:
    """The hex HMAC-SHA256 of `<timestamp>.<body>` under `secret`."""
    message = str(timestamp).encode("ascii") + b"." + body
    return hmac.new(_key(secret), message, hashlib.sha256).hexdigest()


def sign(
    secrets: str | bytes | Iterable[str | bytes], body: bytes, *, timestamp: int | None = None
) -> dict[str, str]:
    """The timestamp and signature headers for `body` (one signature per secret)."""
    keys = [secrets] if isinstance(secrets, str | bytes) else list(secrets)
    if not keys:
        raise ValueError("at least one secret is needed to sign")
    stamp = int(time.time()) if timestamp is None else timestamp
    signatures = ",".join(f"{SCHEME}={signature(k, stamp, body)}" for k in keys)
    return {TIMESTAMP_HEADER: str(stamp), SIGNATURE_HEADER: signatures}


def _header(headers: Mapping[str, str], name: str) -> str:
    wanted = name.lower()
    for key, value in headers.items():
        if key.lower() == wanted:
            return value
    raise WebhookVerificationError(f"missing header {name}")


def verify(
    secrets: str | bytes | Iterable[str | bytes],
    body: bytes,
    headers: Mapping[str, str],
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    now: float | None = None,
) -> int:
    """Check a webhook request; return its timestamp, or raise WebhookVerificationError.

    `body` is the raw request body; `headers` any mapping (names compared without case).
    `secrets` may list several during a rotation: any one matching is enough.
    """
    keys = [secrets] if isinstance(secrets, str | bytes) else list(secrets)
    if not keys:
        raise ValueError("at least one secret is needed to verify")
    raw_stamp = _header(headers, TIMESTAMP_HEADER).strip()
    if not raw_stamp.isdigit():
        raise WebhookVerificationError(f"{TIMESTAMP_HEADER} is not whole seconds: {raw_stamp!r}")
    stamp = int(raw_stamp)
    current = time.time() if now is None else now
    if abs(current - stamp) > tolerance:
        raise WebhookVerificationError(
            f"timestamp {stamp} is {current - stamp:+.0f} s from now, outside ±{tolerance:g} s"
        )
    offered = [
        part.strip()[len(SCHEME) + 1 :]
        for part in _header(headers, SIGNATURE_HEADER).split(",")
        if part.strip().startswith(f"{SCHEME}=")
    ]
    if not offered:
        raise WebhookVerificationError(f"{SIGNATURE_HEADER} has no {SCHEME}= signature")
    expected = [signature(k, stamp, body) for k in keys]
    # Compare every pair, so the time taken does not say which one matched.
    matched = False
    for candidate in offered:
        for good in expected:
            matched |= hmac.compare_digest(candidate, good)
    if not matched:
        raise WebhookVerificationError("signature does not match the body and timestamp")
    return stamp
