"""reducers/timefmt.py, the one RFC 3339 parser and formatter, against the three it replaced.

Until the codec split, timestamps were parsed in three places with three sets of rules:
replay's validation (reducers/timefmt.py), the codec (common/codec.py) and the ClickHouse
rows (sinks/rows.py). The functions below marked "oracle" are those pre-unification
implementations, copied as they were, kept as oracles: on every timestamp the agreed rules
accept, each old parser gave the same microseconds (or, for the two that did not take a
lower-case `z`, refused it), and every old formatter gave the same text. Where an old
parser accepted what the agreed rules refuse, `EDGES` says so, case by case:

- all three took a zone offset with minutes over 59 (`+00:75`);
- the old codec took non-ASCII digits (its regex's `\\d`), and its fast path took an ISO
  week date (`2026-W48-1T10:00:00.123456Z`) that its own general path refused;
- the old replay and sink parsers (`datetime.fromisoformat`) truncated fractions finer
  than a microsecond, and took a space or `,` where RFC 3339 has `T` or `.`, an empty
  fraction, offsets without a colon, with seconds or with hours only, week dates and
  instants outside years 1..9999 in UTC; the sink's took any separator character, no
  seconds, and the basic format (`20261130T100000Z`) too;
- the old replay and sink parsers refused a lower-case `z`, which RFC 3339 allows.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, Final

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from outcomes.reducers.timefmt import (
    MAX_MICROS,
    MIN_MICROS,
    _parse_general,
    format_rfc3339,
    parse_rfc3339,
)

# ---------------------------------------------------------------------------------------
# Oracles: the pre-unification implementations, copied unchanged but for their names.

# -- reducers/timefmt.py (replay's validation) --

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NAIVE_EPOCH = datetime(1970, 1, 1)
_MICRO = timedelta(microseconds=1)


def old_reducers_parse_rfc3339(text: str) -> int:
    """Microseconds since the epoch for an RFC 3339 timestamp that carries a zone.

    Raises ValueError for malformed text or a timestamp without a zone.
    """
    if len(text) < 20 or text[10] not in "Tt ":
        raise ValueError(f"not an RFC 3339 timestamp: {text!r}")
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError(f"timestamp has no zone: {text!r}")
    return (moment - _EPOCH) // _MICRO


def old_reducers_format_rfc3339(micros: int) -> str:
    """The canonical form: UTC, six fraction digits, `Z` (`2026-11-30T10:00:00.000000Z`)."""
    return (_NAIVE_EPOCH + timedelta(microseconds=micros)).isoformat(timespec="microseconds") + "Z"


# -- common/codec.py (the Avro codec) --

OLD_MIN_MICROS: Final = (datetime(1, 1, 1, tzinfo=UTC) - _EPOCH) // _MICRO
OLD_MAX_MICROS: Final = (datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC) - _EPOCH) // _MICRO
_RFC3339: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))"
)


def old_codec_parse_timestamp(text: str) -> int:
    """RFC 3339 with a zone (``2026-11-30T10:00:00.000Z``) -> int microseconds (UTC).

    More than 6 fractional digits are accepted only if the extra ones are zeros:
    Avro `timestamp-micros` cannot hold them, and the codec never loses data silently.
    """
    # Fast path: the canonical form this project writes (`format_timestamp`), which
    # every output timestamp has. `fromisoformat` (C) reads it exactly; anything it
    # refuses, or any other shape, takes the general path below.
    if len(text) == 27 and text[26] == "Z" and text[10] == "T" and text[19] == ".":
        try:
            return (datetime.fromisoformat(text) - _EPOCH) // _MICRO
        except ValueError:
            pass
    return old_codec_parse_timestamp_general(text)


def old_codec_parse_timestamp_general(text: str) -> int:
    match = _RFC3339.fullmatch(text)
    if match is None:
        raise ValueError(f"not an RFC 3339 timestamp with a zone: {text!r}")
    year, month, day, hour, minute, second = (int(g) for g in match.group(1, 2, 3, 4, 5, 6))
    fraction = match.group(7) or ""
    if len(fraction) > 6 and fraction[6:].strip("0"):
        raise ValueError(f"timestamp finer than microseconds: {text!r}")
    micros = int(fraction[:6].ljust(6, "0")) if fraction else 0
    if match.group(8):
        zone: timezone = UTC
    else:
        offset = timedelta(hours=int(match.group(10)), minutes=int(match.group(11)))
        zone = timezone(-offset if match.group(9) == "-" else offset)
    moment = datetime(year, month, day, hour, minute, second, tzinfo=zone)
    return (moment - _EPOCH) // _MICRO + micros


def old_codec_format_timestamp(micros: int) -> str:
    """int microseconds (UTC) -> ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` (docs/records.md)."""
    t = _EPOCH + timedelta(microseconds=micros)
    return (
        f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:"
        f"{t.second:02d}.{t.microsecond:06d}Z"
    )


def old_codec_timestamp_micros(value: Any) -> int:
    """Accept an RFC 3339 string, an aware datetime or int micros; give int micros."""
    if isinstance(value, str):
        micros = old_codec_parse_timestamp(value)
    elif isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError("datetime without a time zone")
        micros = (value - _EPOCH) // _MICRO
    elif isinstance(value, int) and not isinstance(value, bool):
        micros = value
    else:
        raise ValueError(f"expected an RFC 3339 timestamp string, got {type(value).__name__}")
    if not OLD_MIN_MICROS <= micros <= OLD_MAX_MICROS:
        raise ValueError(f"timestamp out of range (years 1..9999): {value!r}")
    return micros


# -- sinks/rows.py (ClickHouse rows; it also had an lru_cache, which changes no result) --


def old_sinks_ts(value: str) -> int:
    """An RFC 3339 timestamp string (docs/records.md) as microseconds since the epoch."""
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        raise ValueError(f"timestamp without a zone: {value!r}")
    return (parsed - _EPOCH) // _MICRO


# ---------------------------------------------------------------------------------------
# Helpers and generators.

OLD_PARSERS = {
    "codec": old_codec_timestamp_micros,  # what the codec applied to a string
    "reducers": old_reducers_parse_rfc3339,
    "sinks": old_sinks_ts,
}


def outcome(parse: Any, text: str) -> int | None:
    """The microseconds `parse` gives, or None if it refuses the text (ValueError)."""
    try:
        return int(parse(text))
    except ValueError:
        return None


def verdict(parse: Any, text: str) -> tuple[str, Any]:
    """The result or the error message: two parsers agree only if both are the same."""
    try:
        return "ok", parse(text)
    except ValueError as exc:
        return "error", str(exc)


FIRST: Final = datetime(1, 1, 1)
LAST: Final = datetime(9999, 12, 31, 23, 59, 59, 999999)


@st.composite
def valid_timestamps(draw: st.DrawFn) -> tuple[str, int]:
    """(text, microseconds) of a timestamp the agreed rules accept, in any allowed form:
    `T`/`t`, `Z`/`z`/`+00:00`/`-00:00` or an offset, 0 to 9 fraction digits (the digits
    after the instant's last significant one are zeros)."""
    local = draw(st.datetimes(min_value=FIRST, max_value=LAST))
    zone = draw(st.sampled_from(["Z", "z", "+00:00", "-00:00", "offset"]))
    offset_minutes = 0
    if zone == "offset":
        offset_minutes = draw(st.integers(-(23 * 60 + 59), 23 * 60 + 59))
        sign = "-" if offset_minutes < 0 else "+"
        hours, minutes = divmod(abs(offset_minutes), 60)
        zone = f"{sign}{hours:02d}:{minutes:02d}"
    micros = (local - _NAIVE_EPOCH) // _MICRO - offset_minutes * 60_000_000
    if not MIN_MICROS <= micros <= MAX_MICROS:  # the offset took it out of years 1..9999
        micros = min(max(micros, MIN_MICROS), MAX_MICROS)
        local = _NAIVE_EPOCH + timedelta(microseconds=micros + offset_minutes * 60_000_000)
    needed = len(f"{local.microsecond:06d}".rstrip("0"))
    digits = draw(st.integers(needed, 9))
    fraction = f".{f'{local.microsecond:06d}'[:digits]:0<{digits}}" if digits else ""
    separator = draw(st.sampled_from("Tt"))
    date = f"{local.year:04d}-{local.month:02d}-{local.day:02d}"
    time = f"{local.hour:02d}:{local.minute:02d}:{local.second:02d}"
    return f"{date}{separator}{time}{fraction}{zone}", micros


# Characters a bent timestamp may get: digits, every separator the grammar or the old
# parsers know, letters of other ISO 8601 forms, spaces, non-ASCII digits.
BENDS = st.sampled_from([*"0123456789-:.,+TtZzW ", "\uff12", "\u0665", "\u00b2", ""])


@st.composite
def bent_timestamps(draw: st.DrawFn) -> str:
    """A valid timestamp with one to three characters replaced, dropped or added."""
    text, _ = draw(valid_timestamps())
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.integers(0, len(text)))
        keep = draw(st.booleans())  # insert before `where`, or replace the character there
        text = text[:where] + draw(BENDS) + text[where + (0 if keep else 1) :]
    return text


@st.composite
def fast_path_shapes(draw: st.DrawFn) -> str:
    """A UTC `...Z` timestamp with 0 to 6 fraction digits (the parser's fast path), with
    up to three characters bent (same length, so the shape checks still run)."""
    micros = draw(st.integers(MIN_MICROS, MAX_MICROS))
    digits = draw(st.sampled_from([0, 1, 2, 3, 4, 5, 6]))
    text = format_rfc3339(micros)
    text = text[:19] + (text[19 : 20 + digits] if digits else "") + "Z"
    for _ in range(draw(st.integers(0, 3))):
        where = draw(st.integers(0, len(text) - 1))
        char = draw(BENDS) or "0"
        text = text[:where] + char + text[where + 1 :]
    return text


# ---------------------------------------------------------------------------------------
# Every form the rules accept: the new parser and the old ones.


@given(valid_timestamps())
@example(("0001-01-01T00:00:00Z", MIN_MICROS))
@example(("9999-12-31T23:59:59.999999Z", MAX_MICROS))
@example(("0001-01-01T01:00:00+01:00", MIN_MICROS))
@example(("9999-12-31T22:59:59.999999-01:00", MAX_MICROS))
@example(("2026-11-30T10:00:00.123456000Z", 1796032800123456))
def test_every_valid_form_reads_the_same_in_the_new_and_the_old_parsers(
    case: tuple[str, int],
) -> None:
    text, micros = case
    assert parse_rfc3339(text) == _parse_general(text) == micros
    # The old codec took every form the rules accept, with the same result.
    assert old_codec_timestamp_micros(text) == micros
    assert old_codec_parse_timestamp(text) == old_codec_parse_timestamp_general(text) == micros
    # The old replay and sink parsers too, but for a lower-case `z`, which they refused.
    for name in ("reducers", "sinks"):
        expected = None if text.endswith("z") else micros
        assert outcome(OLD_PARSERS[name], text) == expected, name


@given(st.integers(MIN_MICROS, MAX_MICROS))
@example(MIN_MICROS)
@example(MAX_MICROS)
@example(0)
@example(-1)
def test_the_formatters_agree_and_read_back(micros: int) -> None:
    text = format_rfc3339(micros)
    assert text == old_reducers_format_rfc3339(micros) == old_codec_format_timestamp(micros)
    assert len(text) == 27 and text.endswith("Z")
    assert parse_rfc3339(text) == micros


@pytest.mark.parametrize("micros", [MIN_MICROS - 1, MAX_MICROS + 1])
def test_formatting_outside_years_1_to_9999_overflows_as_before(micros: int) -> None:
    for format_ in (format_rfc3339, old_reducers_format_rfc3339, old_codec_format_timestamp):
        with pytest.raises(OverflowError):
            format_(micros)


# ---------------------------------------------------------------------------------------
# Anything else: the new rules only ever narrow the old codec's, and where they narrow
# it (or any old parser), the text is one of the documented cases.


def _ascii_digits_only(text: str) -> bool:
    return not any(c.isdigit() and not ("0" <= c <= "9") for c in text)


_OFFSET_MINUTES: Final = re.compile(r".*[+-]\d\d:(\d\d)")


def _old_codec_leniency(text: str) -> str | None:
    """Why the old codec accepted `text`, which the agreed rules refuse (None: no known
    reason, which the tests treat as a disagreement)."""
    if not _ascii_digits_only(text):
        return "non-ASCII digits (the old regex's \\d)"
    offset = _OFFSET_MINUTES.fullmatch(text)
    if offset is not None and int(offset.group(1)) > 59:
        return "zone offset minutes over 59"
    if outcome(old_codec_parse_timestamp_general, text) is None:
        return "the old fast path (fromisoformat) took a shape its general path refused"
    return None


@given(bent_timestamps())
@example("2026-11-30T10:00:00+00:75")
@example("\uff12\uff10\uff12\uff16-11-30T10:00:00Z")
@example("2026-W48-1T10:00:00.123456Z")
def test_the_new_rules_only_narrow_the_old_codec(text: str) -> None:
    new = outcome(parse_rfc3339, text)
    old = outcome(old_codec_timestamp_micros, text)
    if new is not None:
        assert old == new
    elif old is not None:
        assert _old_codec_leniency(text) is not None, f"old codec took {text!r}"


@given(bent_timestamps())
def test_what_the_new_rules_accept_the_old_replay_and_sink_parsers_read_alike(
    text: str,
) -> None:
    new = outcome(parse_rfc3339, text)
    if new is None:
        return
    for name in ("reducers", "sinks"):
        old = outcome(OLD_PARSERS[name], text)
        # Their only refusal of a valid timestamp: a lower-case `z`.
        assert old == new or (old is None and text.endswith("z")), name


# ---------------------------------------------------------------------------------------
# The fast path (fromisoformat on the UTC shapes) agrees with the general path.


@given(fast_path_shapes())
@example("2026-W48-1T10:00:00.123456Z")
@example("2026-W48-1T10:00:00Z")
@example("2026-11-30T10:00:00.Z")
@example("2026-11-30T24:00:00.000000Z")
@example("2026-11-30T10:00:00.12:45Z")
@example("20261130T10:00:00.12345Z")
def test_the_fast_path_agrees_with_the_general_path(text: str) -> None:
    assert verdict(parse_rfc3339, text) == verdict(_parse_general, text)


@given(bent_timestamps())
def test_the_fast_path_agrees_with_the_general_path_on_any_bend(text: str) -> None:
    assert verdict(parse_rfc3339, text) == verdict(_parse_general, text)


# ---------------------------------------------------------------------------------------
# Hand-picked edge cases: what the new parser and each old one gave.

BASE: Final = 1796032800000000  # 2026-11-30T10:00:00Z
S: Final = 1_000_000
R = None  # refused

# (text, new, old codec, old reducers (replay), old sinks, why it is here)
EDGES: Final[list[tuple[str, int | None, int | None, int | None, int | None, str]]] = [
    ("2026-11-30T10:00:00Z", BASE, BASE, BASE, BASE, "no fraction"),
    ("2026-11-30T10:00:00.123456Z", BASE + 123456, BASE + 123456, BASE + 123456,
     BASE + 123456, "the canonical form"),
    ("2026-11-30T10:00:00.000Z", BASE, BASE, BASE, BASE, "SPEC's example: milliseconds"),
    ("2026-11-30T11:00:00.5+01:00", BASE + S // 2, BASE + S // 2, BASE + S // 2,
     BASE + S // 2, "an offset"),
    ("2026-11-30T10:00:00-00:00", BASE, BASE, BASE, BASE, "-00:00 is UTC"),
    ("2026-11-30T15:30:00.123+05:30", BASE + 123000, BASE + 123000, BASE + 123000,
     BASE + 123000, "a half-hour offset"),
    ("2026-11-30t10:00:00Z", BASE, BASE, BASE, BASE, "lower-case t (RFC 3339 allows it)"),
    ("2026-11-30T10:00:00z", BASE, BASE, R, R,
     "DISAGREED: lower-case z (RFC 3339 allows it); old replay and sinks refused it"),
    ("2026-11-30T10:00:00.123456000Z", BASE + 123456, BASE + 123456, BASE + 123456,
     BASE + 123456, "nine digits, the last three zeros"),
    ("2026-11-30T10:00:00.1234567Z", R, R, BASE + 123456, BASE + 123456,
     "DISAGREED: finer than a microsecond; old replay and sinks truncated it"),
    ("2026-11-30T10:00:00.9999999Z", R, R, BASE + 999999, BASE + 999999,
     "DISAGREED: old replay and sinks truncated (did not round) it"),
    ("2026-11-30T10:00:00.1234567891Z", R, R, BASE + 123456, BASE + 123456,
     "DISAGREED: ten fraction digits; old replay and sinks truncated them"),
    ("2026-11-30T10:00:00.Z", R, R, BASE, BASE,
     "DISAGREED: an empty fraction; old replay and sinks took it"),
    ("2026-11-30T10:00:00,5Z", R, R, BASE + S // 2, BASE + S // 2,
     "DISAGREED: a decimal comma; old replay and sinks took it"),
    ("2026-11-30 10:00:00Z", R, R, BASE, BASE,
     "DISAGREED: a space for T; old replay and sinks took it"),
    ("2026-11-30T10:00:00 Z", R, R, BASE, BASE,
     "DISAGREED: a space before the zone; old replay and sinks took it"),
    ("2026-11-30X10:00:00Z", R, R, R, BASE, "DISAGREED: any separator; old sinks took it"),
    ("2026-11-30T10:00Z", R, R, R, BASE, "DISAGREED: no seconds; old sinks took it"),
    ("20261130T100000Z", R, R, R, BASE, "DISAGREED: ISO 8601 basic format; old sinks took it"),
    ("2026-11-30T11:00:00+0100", R, R, BASE, BASE,
     "DISAGREED: an offset without its colon; old replay and sinks took it"),
    ("2026-11-30T11:00:00+01", R, R, BASE, BASE,
     "DISAGREED: an offset of hours only; old replay and sinks took it"),
    ("2026-11-30T11:00:30+01:00:30", R, R, BASE, BASE,
     "DISAGREED: an offset with seconds; old replay and sinks took it"),
    ("2026-11-30T11:15:00+00:75", R, BASE, BASE, BASE,
     "DISAGREED: offset minutes over 59; every old parser took them as 75 minutes"),
    ("2026-11-30T10:00:00+24:00", R, R, R, R, "an offset of a day"),
    ("2026-W49-1T10:00:00Z", R, R, BASE, BASE,
     "DISAGREED: an ISO week date (Monday of week 49); old replay and sinks took it"),
    ("2026-W49-1T10:00:00.123456Z", R, BASE + 123456, BASE + 123456, BASE + 123456,
     "DISAGREED: a week date in the canonical length; the old codec's fast path took it"),
    ("\uff12\uff10\uff12\uff16-11-30T10:00:00Z", R, BASE, R, R,
     "DISAGREED: full-width digits; the old codec's regex (\\d) took them"),
    ("2026-11-30T10:00:00.12\u0665Z", R, BASE + 125000, R, R,
     "DISAGREED: an Arabic-Indic digit; the old codec's regex (\\d) took it"),
    ("0001-01-01T00:00:00Z", MIN_MICROS, MIN_MICROS, MIN_MICROS, MIN_MICROS, "the first instant"),
    ("9999-12-31T23:59:59.999999Z", MAX_MICROS, MAX_MICROS, MAX_MICROS, MAX_MICROS,
     "the last instant"),
    ("0001-01-01T00:00:00+01:00", R, R, MIN_MICROS - 3600 * S, MIN_MICROS - 3600 * S,
     "DISAGREED: before year 1 in UTC; old replay and sinks took it (the codec did not)"),
    ("9999-12-31T23:59:59.999999-01:00", R, R, MAX_MICROS + 3600 * S, MAX_MICROS + 3600 * S,
     "DISAGREED: after year 9999 in UTC; old replay and sinks took it (the codec did not)"),
    ("0000-12-31T23:59:59Z", R, R, R, R, "year 0"),
    ("2026-11-30T24:00:00Z", R, R, R, R, "hour 24"),
    ("2026-11-30T23:59:60Z", R, R, R, R, "a leap second"),
    ("2026-02-29T10:00:00Z", R, R, R, R, "no 29 February in 2026"),
    ("2028-02-29T10:00:00Z", BASE + 39_398_400 * S, BASE + 39_398_400 * S,
     BASE + 39_398_400 * S, BASE + 39_398_400 * S, "29 February in a leap year"),
    ("2026-11-30T10:00:00", R, R, R, R, "no zone"),
    ("2026-11-30T10:00:00UTC", R, R, R, R, "a zone name"),
    (" 2026-11-30T10:00:00Z", R, R, R, R, "a leading space"),
    ("2026-11-30T10:00:00Z ", R, R, R, R, "a trailing space"),
    ("", R, R, R, R, "empty"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "new", "codec", "reducers", "sinks", "why"), EDGES, ids=[e[0] for e in EDGES]
)
def test_edge_cases(
    text: str,
    new: int | None,
    codec: int | None,
    reducers: int | None,
    sinks: int | None,
    why: str,
) -> None:
    assert outcome(parse_rfc3339, text) == new, why
    assert outcome(_parse_general, text) == new, why
    old = {name: outcome(parse, text) for name, parse in OLD_PARSERS.items()}
    assert old == {"codec": codec, "reducers": reducers, "sinks": sinks}, why
    # A case is marked as a disagreement exactly when an old parser differs.
    assert why.startswith("DISAGREED") == (len({new, codec, reducers, sinks}) > 1), why


def test_error_messages_name_the_text() -> None:
    for text in [
        "2026-11-30 10:00:00Z",
        "2026-11-30T10:00:00.1234567Z",
        "2026-02-30T10:00:00Z",
        "2026-11-30T10:00:00+00:75",
        "0001-01-01T00:00:00+01:00",
    ]:
        with pytest.raises(ValueError, match=re.escape(repr(text))):
            parse_rfc3339(text)


@pytest.mark.parametrize("micros", [MIN_MICROS - 1, MAX_MICROS + 1, 10**20, -(10**20), 2**80])
def test_formatting_out_of_range_names_the_count_and_the_range(micros: int) -> None:
    # issue 34: a trace's `1e20` or a year-9999 time plus one step reached this with
    # datetime's own message ("days=1157407407; must have magnitude <= 999999999").
    with pytest.raises(OverflowError) as raised:
        format_rfc3339(micros)
    assert str(raised.value) == f"{micros} microseconds is outside years 1..9999"
