"""common/text.py: the one escaping of data printed on a terminal."""

from __future__ import annotations

import unicodedata

import pytest

from outcomes.common.text import (
    ESCAPED_CATEGORIES,
    terminal_safe,
    terminal_safe_lines,
    terminal_safe_value,
)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("run-1", "run-1"),
        ("café ✓ ラン", "café ✓ ラン"),
        ("a\x1b[31mb", "a\\x1b[31mb"),
        ("a\nb\rc\td", "a\\nb\\rc\\td"),
        ("\x00\x7f\x9b", "\\x00\\x7f\\x9b"),
        ("abc\u202egnp.exe", "abc\\u202egnp.exe"),
        ("a\u2066b\u2069", "a\\u2066b\\u2069"),
        ("a\u200bb\ufeff", "a\\u200bb\\ufeff"),
        ("a\u2028b\u2029", "a\\u2028b\\u2029"),
        ("a\ud800b", "a\\ud800b"),
        ("no\u00a0break", "no\u00a0break"),  # not printable for Python, harmless: kept
    ],
)
def test_terminal_safe(text: str, shown: str) -> None:
    assert terminal_safe(text) == shown
    shown.encode("utf-8")  # printable everywhere: no surrogate is left


def test_every_escaped_category_is_escaped_and_nothing_else() -> None:
    for point in range(0x110000):
        char = chr(point)
        escaped = terminal_safe(char) != char
        assert escaped == (unicodedata.category(char) in ESCAPED_CATEGORIES), hex(point)


def test_lines_keep_their_own_breaks() -> None:
    assert terminal_safe_lines("one\x1b\ntwo\u202e") == "one\\x1b\ntwo\\u202e"


def test_values_escape_strings_and_keys_at_any_depth() -> None:
    value = {"run\n": [("a\x1b", 1), {"k": None}], "n": 2.5}
    assert terminal_safe_value(value) == {"run\\n": [("a\\x1b", 1), {"k": None}], "n": 2.5}
