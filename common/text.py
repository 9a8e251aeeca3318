"""Data printed on a terminal, literally: the one escaping every command's text output uses.

A run id, a status reason or a zip entry name is data, and data may hold characters a
terminal acts on instead of showing: ESC starts a sequence that recolours the screen or
moves the cursor, a newline or carriage return fakes a line of output, a bidi override
(U+202E) shows the text after it reversed, a zero-width character hides a difference.
:func:`terminal_safe` writes each of those as a visible escape, so what is printed is
what the data holds:

- control characters (Unicode category Cc: C0, DEL, C1): ``\\n``, ``\\r``, ``\\t`` as
  such, the others as ``\\xNN``;
- format characters (Cf: bidi embeddings, overrides and isolates, LRM/RLM, zero-width
  space and joiners, the BOM, soft hyphen), line and paragraph separators (Zl, Zp) and
  lone surrogates (Cs, which no terminal encoding can even write): ``\\uNNNN``.

Everything else, including non-ASCII letters and emoji, is printed as is. A backslash is
not doubled: ``\\n`` in the output is ambiguous between a newline and the two characters,
which keeps ordinary paths readable and still shows that something was there. Machine
formats (JSON, CSV) keep their own escaping and never go through here.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import Any

# Categories a terminal acts on or hides instead of showing (docstring above).
ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    short = _SHORT.get(char)
    if short is not None:
        return short
    point = ord(char)
    return f"\\x{point:02x}" if point < 0x100 else f"\\u{point:04x}"


def terminal_safe(text: str) -> str:
    """`text` with every character a terminal would act on written as a visible escape."""
    # str.isprintable() is false for every escaped category (and for a few harmless
    # ones, such as a no-break space): a printable text, the usual case, is returned as is.
    if text.isprintable():
        return text
    return "".join(
        _escape(char) if unicodedata.category(char) in ESCAPED_CATEGORIES else char for char in text
    )


def terminal_safe_lines(text: str) -> str:
    """A multi-line text whose line breaks are its own (a rendered report) but whose other
    characters are data: each line made :func:`terminal_safe`, the newlines kept."""
    return "\n".join(terminal_safe(line) for line in text.split("\n"))


def terminal_safe_value(value: Any) -> Any:
    """`value` (JSON-like: mappings, lists, tuples, strings, scalars) with every string,
    keys included, made :func:`terminal_safe`; for data that a text renderer lays out
    in lines of its own, so a newline in the data cannot become one of those lines."""
    if isinstance(value, str):
        return terminal_safe(value)
    if isinstance(value, Mapping):
        return {terminal_safe_value(k): terminal_safe_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(terminal_safe_value(v) for v in value)
    return value


# -- Markdown -------------------------------------------------------------------------
# A report in Markdown (report.md) is read raw and rendered by viewers that pass HTML
# through and follow links. Data in it is written so that it renders as the same
# characters: never as HTML, a link, emphasis, a table cell break or a line of its own.

# ASCII punctuation that starts Markdown syntax inline (CommonMark allows a backslash
# before any ASCII punctuation; these are the ones that can mean something mid-line).
_MARKDOWN_INLINE = frozenset("\\`*_[]<>&|~!#")
# At the start of a line these begin a block (heading, quote, list, thematic break).
_MARKDOWN_LINE_START = frozenset("#>-+=")


def markdown_text(text: str) -> str:
    """`text` as literal Markdown inline text: control characters escaped as on a
    terminal, then every character that could start HTML (`<`, `&`), a link (`[`), an
    image, emphasis, code or a table cell break backslash-escaped."""
    safe = terminal_safe(text)
    return "".join(f"\\{char}" if char in _MARKDOWN_INLINE else char for char in safe)


def markdown_lines(text: str) -> list[str]:
    """A multi-line text (a narrative) as literal Markdown lines: each line
    :func:`markdown_text`, and a line that would start a block (a heading, a quote, a
    list item, an ordered list number) escaped at its start."""
    out = []
    for line in text.split("\n"):
        escaped = markdown_text(line)
        body = escaped.lstrip(" ")
        indent = escaped[: len(escaped) - len(body)]
        if body[:1] in _MARKDOWN_LINE_START:
            body = f"\\{body}"
        else:
            digits = len(body) - len(body.lstrip("0123456789"))
            if digits and body[digits : digits + 1] in (".", ")"):
                body = f"{body[:digits]}\\{body[digits:]}"
        out.append(indent + body)
    return out


def markdown_code(text: str) -> str:
    """`text` as a Markdown code span, which renders its content literally: control
    characters escaped as on a terminal (a code span holds one line), fenced with more
    backticks than any run inside it."""
    safe = terminal_safe(text)
    longest = run = 0
    for char in safe:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if safe.startswith("`") or safe.endswith("`") or not safe.strip() else ""
    return f"{fence}{pad}{safe}{pad}{fence}"
