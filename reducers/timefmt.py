"""Timestamps: RFC 3339 strings on the outside, integer microseconds since the epoch inside.

Integers compare and hash cheaply and make ordering by (`occurred_at`, `event_id`) exact.
This module is the project's one timestamp parser and formatter: replay's validation
(reducers/validate.py), the Avro codec (common/codec/) and the ClickHouse rows
(sinks/rows.py) all use it, so a timestamp means the same everywhere.

The rules :func:`parse_rfc3339` applies (RFC 3339 section 5.6 `date-time`, narrowed to
what Avro `timestamp-micros` holds):

- the shape is ``YYYY-MM-DDTHH:MM:SS[.fraction]zone``, ASCII digits only, every field
  two digits (four for the year); nothing before or after it (no spaces);
- the separator is ``T`` or ``t`` (RFC 3339 allows the lower case); a space is refused;
- the date is a real calendar date; hours 00-23, minutes and seconds 00-59 (a leap
  second, ``:60``, has no microsecond count and is refused);
- the zone is required: ``Z``, ``z`` or a numeric offset ``+HH:MM`` / ``-HH:MM`` with
  hours 00-23 and minutes 00-59 (``-00:00`` is UTC); offsets without the colon, with
  seconds or hours only are refused;
- the fraction is ``.`` and 1 to 9 digits; digits after the sixth must be zeros: a
  timestamp finer than a microsecond is refused, never rounded or truncated, so nothing
  is lost silently;
- the instant, in UTC, lies in years 1..9999 (:data:`MIN_MICROS`..:data:`MAX_MICROS`).

Anything else raises ValueError with the text in its message.

:func:`format_rfc3339` writes the canonical form (docs/records.md): UTC, six fraction
digits and ``Z``, for any count in that range (OverflowError outside it). What it
writes, :func:`parse_rfc3339` reads back to the same count.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Final

EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_NAIVE_EPOCH: Final = datetime(1970, 1, 1)
MICROSECOND: Final = timedelta(microseconds=1)
MIN_MICROS: Final = (datetime(1, 1, 1, tzinfo=UTC) - EPOCH) // MICROSECOND
MAX_MICROS: Final = (datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC) - EPOCH) // MICROSECOND

_RFC3339: Final = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,9}))?"
    r"(?:[Zz]|([+-])([0-9]{2}):([0-9]{2}))"
)


def parse_rfc3339(text: str) -> int:
    """Microseconds since the epoch (UTC) for an RFC 3339 timestamp with a zone.

    Raises ValueError for anything the module's rules refuse.
    """
    # Fast path: a UTC timestamp with 0 to 6 fraction digits, such as the canonical form
    # every output carries. Its separators are checked here, so `fromisoformat` (C) only
    # reads digits; whatever it refuses takes the general path, which says why.
    # (tests/test_timefmt.py checks that both paths agree.)
    size = len(text)
    if (
        text[4:17:3] == "--T::"
        and text[-1] == "Z"
        and (size == 20 or (22 <= size <= 27 and text[19] == "."))
    ):
        try:
            return (datetime.fromisoformat(text) - EPOCH) // MICROSECOND
        except ValueError:
            pass
    return _parse_general(text)


def _parse_general(text: str) -> int:
    """:func:`parse_rfc3339` for every shape the rules allow (the reference path)."""
    match = _RFC3339.fullmatch(text)
    if match is None:
        raise ValueError(f"not an RFC 3339 timestamp with a zone: {text!r}")
    year, month, day, hour, minute, second = (int(g) for g in match.group(1, 2, 3, 4, 5, 6))
    fraction = match.group(7) or ""
    if len(fraction) > 6 and fraction[6:].strip("0"):
        raise ValueError(f"timestamp finer than microseconds: {text!r}")
    try:
        local = datetime(year, month, day, hour, minute, second)
    except ValueError as exc:
        raise ValueError(f"{exc}: {text!r}") from None
    micros = (local - _NAIVE_EPOCH) // MICROSECOND
    if fraction:
        micros += int(fraction[:6].ljust(6, "0"))
    sign = match.group(8)
    if sign is not None:
        hours, minutes = int(match.group(9)), int(match.group(10))
        if hours > 23 or minutes > 59:
            raise ValueError(f"zone offset out of range: {text!r}")
        offset = (hours * 60 + minutes) * 60_000_000
        micros += -offset if sign == "+" else offset
    if not MIN_MICROS <= micros <= MAX_MICROS:
        raise ValueError(f"timestamp out of range (years 1..9999): {text!r}")
    return micros


def format_rfc3339(micros: int) -> str:
    """The canonical form: UTC, six fraction digits, `Z` (`2026-11-30T10:00:00.000000Z`).

    OverflowError, naming the count, for one outside years 1..9999 (datetime's own
    messages, `date value out of range` or `days=1157407407; must have magnitude <=
    999999999`, say neither which value nor which range)."""
    try:
        moment = _NAIVE_EPOCH + timedelta(microseconds=micros)
    except OverflowError:
        raise OverflowError(f"{micros} microseconds is outside years 1..9999") from None
    return moment.isoformat(timespec="microseconds") + "Z"


def datetime_micros(moment: datetime) -> int:
    """Microseconds since the epoch of an aware datetime (TypeError if it is naive)."""
    return (moment - EPOCH) // MICROSECOND
