"""A narrative's text as structured prose: Markdown blocks, sentences and tokens.

The claim checker reads an agent's final message the way a person does: as Markdown.
`markdown-it-py` finds the blocks (headings, paragraphs, list items, table rows, block
quotes, code fences); this module turns each block of prose into sentences of tokens
whose offsets point into the original text, so a verdict's span is the agent's own
characters. What is quoted (block quotes, inline quotes, code) is marked, never read as
the agent's assertion, with two exceptions a reader makes too: a JSON code fence that is
the agent's own answer (an object of prose fields) is read field by field, and the
comment lines of a shell fence are the agent's own words.

Pure and deterministic: no I/O, no clock, no model.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal, NamedTuple

from markdown_it import MarkdownIt
from markdown_it.token import Token as MarkdownToken

Role = Literal["paragraph", "heading", "item", "row", "json", "comment", "quote"]

# CommonMark with tables; indented code blocks are off because agents indent prose
# (terminal transcripts wrap and indent every line) far more often than they indent code.
_MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable("table").disable("code")

# The longest sentence read as one; longer runs are cut at a comma (or at twice this).
MAX_TOKENS = 80

_SHELL_FENCES = frozenset({"bash", "sh", "shell", "zsh", "console", "powershell", "ps1"})
_TASK_BOX = re.compile(r"\[([ xX])\]\s")


class Token(NamedTuple):
    """One token: its normalized form, where it sits in the text, and its raw text."""

    norm: str
    start: int
    end: int
    raw: str


@dataclass(frozen=True, slots=True)
class Sentence:
    """A sentence of one block: its tokens, its span, and the block's role.

    `checked` is True for a ticked task-list item (`- [x] …`), False for an unticked
    one, None otherwise. `first` is True for the first sentence of its block.
    """

    tokens: tuple[Token, ...]
    start: int
    end: int
    role: Role
    checked: bool | None
    first: bool
    section: str = ""
    lead: str = ""


@dataclass(frozen=True, slots=True)
class Block:
    """A block of prose; `section` is the lowercased text of the heading it sits under
    ("test plan"), or of a paragraph that is only a bold label ("**Verification:**")."""

    start: int
    end: int
    role: Role
    checked: bool | None = None
    section: str = ""
    # For a list item: the lowercased line that introduces its list ("You can either:").
    lead: str = ""


# -- Markdown blocks ---------------------------------------------------------------------


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for i, char in enumerate(text):
        if char == "\n":
            starts.append(i + 1)
    return starts


def _span_of(text: str, starts: list[int], lines: tuple[int, int], content: str) -> Block | None:
    """The character span of a block's content that markdown-it placed on `lines`."""
    first, last = lines
    if first >= len(starts):
        return None
    line_end = starts[first + 1] - 1 if first + 1 < len(starts) else len(text)
    head = content.split("\n", 1)[0].strip()
    at = text.find(head, starts[first], line_end + 1) if head else -1
    start = at if at >= 0 else starts[first]
    end = starts[last] - 1 if last < len(starts) else len(text)
    return Block(start, max(start, end), "paragraph")


# A line that Markdown could make anything but a paragraph: without one, a text is plain
# paragraphs and the parser is skipped (most agent messages are a few plain lines).
_BLOCK_SYNTAX = re.compile(r"^[ \t]*(?:[#>|*+=-]|\d+[.)]|```|~~~)|\t|^ {4}", re.MULTILINE)
_BOLD_LINE = re.compile(r"\*\*[^*\n]{1,80}\*\*:?")
_BLANK_LINES = re.compile(r"\n[ \t]*\n")


def blocks(text: str) -> list[Block]:
    """The prose blocks of a Markdown text, in text order, with their roles."""
    if not _BLOCK_SYNTAX.search(text):
        return _plain_blocks(text)
    return _markdown_blocks(text)


def _plain_blocks(text: str) -> list[Block]:
    out, start = [], 0
    for m in [*_BLANK_LINES.finditer(text), None]:
        end = m.start() if m is not None else len(text)
        lo = start + len(text[start:end]) - len(text[start:end].lstrip())
        hi = start + len(text[start:end].rstrip())
        if hi > lo:
            out.append(Block(lo, hi, "paragraph"))
        start = m.end() if m is not None else len(text)
    return out


def _markdown_blocks(text: str) -> list[Block]:
    starts = _line_starts(text)
    out: list[Block] = []
    quote_depth = 0
    section = ""
    item_depth = 0
    fresh_item = False
    role: Role = "paragraph"
    header = False
    columns = ""
    # The line ending in ":" just before each open list introduces it ("You can either:").
    leads: list[str] = []
    last_line = ""
    tokens = _MARKDOWN.parse(text)
    for i, tok in enumerate(tokens):
        kind = tok.type
        if kind in ("bullet_list_open", "ordered_list_open"):
            leads.append(last_line if last_line.endswith(":") else "")
            last_line = ""
        elif kind in ("bullet_list_close", "ordered_list_close"):
            if leads:
                leads.pop()
        elif kind == "blockquote_open":
            quote_depth += 1
        elif kind == "blockquote_close":
            quote_depth -= 1
        elif kind == "list_item_open":
            item_depth += 1
            fresh_item = True
        elif kind == "list_item_close":
            item_depth -= 1
        elif kind == "heading_open":
            role = "heading"
        elif kind == "paragraph_open":
            role = "item" if fresh_item else "paragraph"
            fresh_item = False
        elif kind == "thead_open":
            header = True
            if tok.map:  # its text, kept as the rows' lead ("| Agent | Phase | Status |")
                line = tok.map[0]
                columns = text[starts[line] : starts[line + 1] if line + 1 < len(starts) else None]
                columns = columns.strip().lower()
        elif kind == "thead_close":
            header = False
        elif kind == "tr_open" and tok.map and not header:
            # (a header row names the columns: "| suite | passed | failed |" asserts
            # nothing)
            row = tok.map[0]
            end = starts[row + 1] - 1 if row + 1 < len(starts) else len(text)
            role_of_row: Role = "quote" if quote_depth else "row"
            out.append(Block(starts[row], end, role_of_row, None, section, columns))
        elif kind == "fence" and tok.map:
            out += _fence_blocks(text, starts, tok, quote_depth > 0)
        elif (
            kind == "inline"
            and tok.map
            and tokens[i - 1].type
            in (
                "paragraph_open",
                "heading_open",
            )
        ):
            found = _span_of(text, starts, (tok.map[0], tok.map[1]), tok.content)
            if found is None:
                continue
            checked = None
            start = found.start
            if role == "item":
                box = _TASK_BOX.match(text, start)
                if box:
                    checked = box.group(1) != " "
                    start = box.end()
            block_role: Role = "quote" if quote_depth else role
            lead = leads[-1] if leads and role == "item" else ""
            out.append(Block(start, found.end, block_role, checked, section, lead))
            last_line = tok.content.strip().lower()
            if role == "heading" or (
                role in ("paragraph", "item") and _BOLD_LINE.fullmatch(tok.content)
            ):
                section = tok.content.strip("*_:# ").lower()
            role = "paragraph"
    return out


def _fence_blocks(
    text: str, starts: list[int], tok: MarkdownToken, quoted: bool
) -> Iterator[Block]:
    """The prose inside a code fence: a JSON answer's string fields, a shell fence's
    comment lines. Everything else in a fence is code, not assertion."""
    if quoted or not tok.map:
        return
    first, last = tok.map[0] + 1, tok.map[1] - 1  # between the fence lines
    if first >= len(starts):
        return
    lo = starts[first]
    hi = starts[last] - 1 if last < len(starts) else len(text)
    info = tok.info.strip().lower().split(" ")[0]
    body = text[lo:hi]
    if info in ("json", "") and body.lstrip().startswith("{"):
        yield from _json_blocks(text, lo, hi)
    elif info in _SHELL_FENCES:
        for m in re.finditer(r"^[ \t]*#[ \t]*(\S[^\n]*)$", body, re.MULTILINE):
            yield Block(lo + m.start(1), lo + m.end(1), "comment")


# A JSON member: "key": "string" | true | false.
_JSON_MEMBER = re.compile(r'"((?:[^"\\\n]|\\.)*)"\s*:\s*(?:"((?:[^"\\]|\\.)*)"|(true|false))')


def _json_blocks(text: str, lo: int, hi: int) -> Iterator[Block]:
    for m in _JSON_MEMBER.finditer(text, lo, hi):
        if m.group(2) is not None and " " in m.group(2):
            yield Block(m.start(2), m.end(2), "json")
        elif m.group(3) is not None:
            # `"task_complete": true`: the key and its value, read as a status line.
            yield Block(m.start(0), m.end(0), "json")


# -- tokens and sentences ----------------------------------------------------------------

# Tokens, in the order tried. Kinds map to a normalized form: words are lowercased;
# everything that is a name rather than a word gets a marker, so that grammar patterns
# read "the script `c ran successfully" for "The script `x.py` ran successfully".
_TOKEN = re.compile(
    r"(?P<word>[A-Za-z][A-Za-z0-9]*(?:['\u2019][A-Za-z]+)?(?:[-_:=][A-Za-z0-9]+)*)"
    r"(?![\w@/'\u2019:=-]|\.[A-Za-z0-9])"  # a plain word, tried first: most tokens are
    r"|(?P<code>`[^`\n]+`)"
    r"|(?P<link>\[[^\]\n]{1,200}\]\([^)\s]{1,500}\))"
    r"|(?P<url>https?://[^\s)\]>]+)"
    r"|(?P<esc>\\[nrt])"  # an escape inside a JSON string: a line break
    r"|(?P<quote>\\?\"(?:[^\"\\\n]|\\[^\"]){1,400}?\\?\"|\u201c[^\u201d\n]{1,400}\u201d"
    r"|(?<![\w'])'[^'\n]{1,200}'(?![\w']))"
    r"|(?P<email>[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,8})"  # bounded: no backtracking
    r"|(?P<time>\d{1,2}:\d{2}(?::\d{2})?(?![\d:]))"  # a time of day: one count, no label
    r"|(?P<ratio>\d+/\d+)"
    r"|(?P<hash>\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b)"
    r"|(?P<num>\d[\d,]*(?:\.\d+)?%?)"
    # (each name's dots and a relative path's first name bounded, and a relative path
    # tried only where a name starts, so a long run of dotted or @-joined words costs
    # linear time, not quadratic)
    r"|(?P<path>(?:~|\.{1,2})?(?:/[\w@${}~+-]+(?:\.[\w@${}~+-]+){0,8})+/?"
    r"|(?<![\w@-])[\w@-]{1,128}(?:\.[\w@-]+){0,8}(?:/[\w@-]+(?:\.[\w@-]+){0,8})+/?"
    r"|[\w-]+\.(?:[A-Za-z][A-Za-z0-9]{0,4})\b(?![\w-]))"
    r"|(?P<ref>#\d+)"
    r"|(?P<word2>[A-Za-z][A-Za-z0-9]*(?:['\u2019][A-Za-z]+)?(?:[-_:=][A-Za-z0-9]+)*)"
    r"|(?P<check>[\u2713\u2714\u2705\u2611])"
    r"|(?P<end>[.!?]+(?=[\s\"'\u201d\u2019)\]*_]|$))"
    r"|(?P<punct>[,;:()\[\]|\u00b7\u2192\u2014\u2013=]|->|\s-\s|\s--\s)"
)
_HEXWORD = re.compile(r"(?=[0-9a-f]*\d)[0-9a-f]+")

_MARK = {
    "code": "`c",
    "url": "`u",
    "link": "`l",
    "quote": "`q",
    "ratio": "`r",
    "time": "`n",
    "email": "`u",
    "hash": "`h",
    "num": "`n",
    "path": "`p",
    "ref": "`#",
    "check": "`k",
}


def _norm(kind: str, raw: str) -> str:
    if kind in ("word", "word2"):
        return raw.lower().replace("\u2019", "'")
    if kind == "num" and raw.endswith("%"):
        return "`%"
    if kind == "punct":
        stripped = raw.strip()
        return {"\u2014": "-", "\u2013": "-", "--": "-", "->": "\u2192"}.get(stripped, stripped)
    if kind == "end":
        return raw[0]
    return _MARK.get(kind, raw)


def tokens(text: str, start: int, end: int) -> list[Token]:
    """The tokens of `text[start:end]`, offsets in `text`."""
    out = []
    for m in _TOKEN.finditer(text, start, end):
        kind = m.lastgroup
        raw = m.group()
        if kind == "word":  # most tokens: no markers, no surrounding space
            norm = raw.lower()
            if "\u2019" in norm:
                norm = norm.replace("\u2019", "'")
            elif 7 <= len(raw) <= 40 and _HEXWORD.fullmatch(raw):
                norm = "`h"  # a commit hash that starts with a letter: "b7c94468"
            out.append(Token(norm, m.start(), m.end(), raw))
            continue
        assert kind is not None
        lead = len(raw) - len(raw.lstrip())
        out.append(Token(_norm(kind, raw), m.start() + lead, m.end(), raw.strip()))
    return out


# Titles written with a period before a name.
_TITLES = frozenset({"dr", "mr", "mrs", "ms", "prof", "st", "sr", "jr", "mt"})


def sentences(text: str) -> list[Sentence]:
    """The sentences of every prose block, in text order."""
    out: list[Sentence] = []
    for block in blocks(text):
        toks = tokens(text, block.start, block.end)
        first = True
        current: list[Token] = []
        for tok in toks:
            if tok.norm in (".", ")") and len(current) == 1 and current[0].norm == "`n":
                current = []  # a list number ("1." at the start of a heading or line)
                continue
            if tok.norm == "." and current and current[-1].norm in _TITLES:
                continue  # "Dr. Lee", "Mr. Smith": a title's period ends no sentence
            breaks = tok.norm in (".", "!", "?") or tok.raw.startswith("\\")
            if not tok.raw.startswith("\\"):
                current.append(tok)
            # A "sentence" of more tokens than any reader's sentence (a list run together,
            # a log pasted inline) is cut, which also bounds the grammar's work.
            breaks = breaks or (len(current) >= MAX_TOKENS and tok.norm in (",", ";"))
            breaks = breaks or len(current) >= 2 * MAX_TOKENS
            if breaks and current:
                out.append(_sentence(current, block, first))
                first, current = False, []
        if current:
            out.append(_sentence(current, block, first))
        out += _quoted(text, toks)
    return sorted(out, key=lambda s: (s.start, s.end))


def _quoted(text: str, toks: list[Token]) -> list[Sentence]:
    """What quotation marks and code spans hold, as quoted sentences: read, so that the
    checker can say why a claim inside them is none, never asserted."""
    out = []
    for tok in toks:
        if tok.norm in ("`q", "`c"):
            inner = tokens(text, tok.start + 1, tok.end - 1)
            if inner:
                out.append(Sentence(tuple(inner), tok.start, tok.end, "quote", None, False))
    return out


def _sentence(toks: list[Token], block: Block, first: bool) -> Sentence:
    return Sentence(
        tuple(toks),
        toks[0].start,
        toks[-1].end,
        block.role,
        block.checked,
        first,
        block.section,
        block.lead,
    )
