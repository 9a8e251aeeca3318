"""Timestamps: RFC 3339 strings on the outside, integer microseconds since the epoch inside.

Integers compare and hash cheaply and make ordering by (`occurred_at`, `event_id`) exact.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NAIVE_EPOCH = datetime(1970, 1, 1)
_MICRO = timedelta(microseconds=1)


def parse_rfc3339(text: str) -> int:
    """Microseconds since the epoch for an RFC 3339 timestamp that carries a zone.

    Raises ValueError for malformed text or a timestamp without a zone.
    """
    if len(text) < 20 or text[10] not in "Tt ":
        raise ValueError(f"not an RFC 3339 timestamp: {text!r}")
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError(f"timestamp has no zone: {text!r}")
    return (moment - _EPOCH) // _MICRO


def format_rfc3339(micros: int) -> str:
    """The canonical form: UTC, six fraction digits, `Z` (`2026-11-30T10:00:00.000000Z`)."""
    return (_NAIVE_EPOCH + timedelta(microseconds=micros)).isoformat(timespec="microseconds") + "Z"
