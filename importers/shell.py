"""A shell command line as its simple commands: words, separators, redirects, wrappers.

One left-to-right pass over the line, so the work grows with its length and no more: a
quoted argument is found with one search for its closing quote, a heredoc body with one
search per body line, and words are sliced from the line, never built a character at a
time. A line longer than `MAX_COMMAND_CHARS` is read as far as that cap; its last simple
command is marked `truncated` (whatever came after the cap is not read at all).

Only what the shell itself would see: `&&`, `||`, `;`, `|`, `|&`, `&` and newlines end a
simple command; `2>&1`-style duplications are no separator; `> f`, `>> f`, `&> f` name a
file written; heredoc bodies and comments are dropped; `$(...)`, backticks and quotes
stay inside their word. Wrappers that only change how a program runs (`sudo`, `timeout
60`, `VAR=1`, `env`, `npx`, `uv run`, `python -m`) are removed from the words.

Pure: strings in, values out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Past this many characters a command line is read no further (the rest is not split).
MAX_COMMAND_CHARS = 256 * 1024

_WRAPPERS = frozenset(
    {"sudo", "time", "nice", "nohup", "env", "command", "exec", "xvfb-run", "stdbuf", "doas"}
)
# `uv run X`, `poetry run X`…: the program is X.
_RUNNERS_WITH_RUN = frozenset({"uv", "poetry", "pdm", "hatch", "pipenv", "rye", "bundle"})
_PACKAGE_EXECUTORS = frozenset({"npx", "bunx", "pnpx"})
_PYTHON = re.compile(r"python[\d.]*")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_DURATION = re.compile(r"[\d.]+[smhd]?")

SEPARATORS = frozenset({"&&", "||", ";", "|", "|&", "&", "\n"})


@dataclass(frozen=True, slots=True)
class Simple:
    """One simple command of a command line: its words, the files it redirects output
    into, whether a later stage of a pipe (`| tail`) takes its exit status away, whether
    it runs in the background, the separator after it (`&&`, `||`, `;`, `|`, `&`, or ""
    at the end) and whether the line was cut at `MAX_COMMAND_CHARS` inside it."""

    words: tuple[str, ...]
    piped_out: bool
    background: bool = False
    writes: tuple[str, ...] = ()
    then: str = ""
    truncated: bool = False

    @property
    def program(self) -> str:
        return self.words[0].rsplit("/", 1)[-1] if self.words else ""

    @property
    def text(self) -> str:
        return " ".join(self.words)


@dataclass(frozen=True, slots=True)
class Tokens:
    """A line's tokens, whether it was cut at the cap, and the scanner's step count
    (each step consumes at least one character: the count is the work done)."""

    tokens: tuple[str, ...]
    truncated: bool
    steps: int


# A run of characters that need no special reading inside a word.
_PLAIN = re.compile(r"[^\s'\"\\;&|<>()`$#]+")
_BLANK = re.compile(r"[ \t\r]+")
_REDIRECT = re.compile(r"&>>|&>|>>|>\||>&|>|<<<|<<-|<<|<&|<>|<")
_FD = re.compile(r"\d+-?|-")
_HEREDOC_WORD = re.compile(r"[ \t]*(['\"]?)([A-Za-z0-9_.\-]+)\1")
_SUBSTITUTION = re.compile(r"<<-?|[()'\"{}]")


class _Unbalanced(ValueError):
    """A quote or substitution that never closes."""


class _Scanner:
    """One pass over a line. `steps` counts loop iterations; every iteration consumes
    at least one character, and each search it makes starts where the last one ended."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.n = len(text)
        self.i = 0
        self.out: list[str] = []
        self.word: list[str] = []
        self.in_word = False
        self.heredocs: list[tuple[str, bool]] = []
        self.steps = 0

    def add(self, piece: str) -> None:
        self.word.append(piece)
        self.in_word = True

    def end_word(self) -> None:
        if self.in_word:
            self.out.append("".join(self.word))
            self.word.clear()
            self.in_word = False

    def run(self, truncated: bool) -> None:
        text, n = self.text, self.n
        while self.i < n:
            self.steps += 1
            start = self.i
            try:
                self.step(text[start])
            except _Unbalanced:
                if not truncated:
                    raise
                # the cap cut the line inside a quote: the word runs to the cap
                self.add(text[start + 1 :] if text[start] in {"'", '"'} else text[start:])
                self.i = n
        self.end_word()

    def step(self, c: str) -> None:
        text, i = self.text, self.i
        m = _PLAIN.match(text, i)
        if m:
            if not self.in_word and m.group(0).isdigit() and text.startswith((">", "<"), m.end()):
                self.i = m.end()  # a file descriptor number before a redirection (`2>`)
            else:
                self.add(m.group(0))
                self.i = m.end()
        elif c in " \t\r":
            self.end_word()
            b = _BLANK.match(text, i)
            self.i = b.end() if b else i + 1
        elif c == "\n":
            self.end_word()
            self.out.append("\n")
            self.i = i + 1
            if self.heredocs:
                self.skip_heredocs()
        elif c == "'":
            close = text.find("'", i + 1)
            if close < 0:
                raise _Unbalanced
            self.add(text[i + 1 : close])
            self.i = close + 1
        elif c == '"':
            self.double_quoted()
        elif c == "\\":
            if i + 1 < self.n and text[i + 1] != "\n":
                self.add(text[i + 1])
            self.i = i + 2
        elif c == "$":
            self.dollar()
        elif c == "`":
            close = text.find("`", i + 1)
            if close < 0:
                raise _Unbalanced
            self.add(text[i : close + 1])
            self.i = close + 1
        elif c == "#" and not self.in_word:
            newline = text.find("\n", i)  # a comment runs to the end of its line
            self.i = self.n if newline < 0 else newline
        elif c in "()":
            self.end_word()
            self.out.append(";")
            self.i = i + 1
        elif c in "<>" or text.startswith("&>", i):
            self.redirect()
        elif c in ";&|":
            self.end_word()
            two = text[i : i + 2]
            if two in {"&&", "||", "|&", ";;"}:
                self.out.append(";" if two == ";;" else two)
                self.i = i + 2
            else:
                self.out.append(c)
                self.i = i + 1
        else:  # `#` inside a word
            self.add(c)
            self.i = i + 1

    def redirect(self) -> None:
        text = self.text
        r = _REDIRECT.match(text, self.i)
        op = r.group(0) if r else text[self.i]
        self.end_word()
        self.i = r.end() if r else self.i + 1
        if op in {"<<", "<<-"}:
            h = _HEREDOC_WORD.match(text, self.i)
            if h:
                self.heredocs.append((h.group(2), op == "<<-"))
                self.i = h.end()
            return
        if op in {">&", "<&"}:
            d = _FD.match(text, self.i)
            if d:  # `2>&1`, `>&2`, `<&0`: a duplication, no file
                self.i = d.end()
                return
            op = ">"  # `>& file`: both streams into the file
        self.out.append(">" if op in {"&>", "&>>", ">|"} else op)

    def double_quoted(self) -> None:
        """`"…"` with its escapes (`\\"`, `\\\\`, `\\$`, `\\``); `$(…)` inside is kept."""
        text, n = self.text, self.n
        i = start = self.i + 1
        while True:
            self.steps += 1
            close = text.find('"', i)
            if close < 0:
                raise _Unbalanced
            backslash = text.find("\\", i, close)
            if backslash < 0:
                self.add(text[start:close])
                self.i = close + 1
                return
            self.add(text[start:backslash])
            following = text[backslash + 1] if backslash + 1 < n else ""
            if following in {'"', "\\", "$", "`"}:
                self.add(following)
            elif following and following != "\n":
                self.add(text[backslash : backslash + 2])
            i = start = backslash + 2

    def dollar(self) -> None:
        """`$'…'`, `$(…)` and `${…}` (nested, quotes skipped) or a bare `$`, kept as written."""
        text, n, i = self.text, self.n, self.i
        nxt = text[i + 1] if i + 1 < n else ""
        if nxt == "'":
            close = text.find("'", i + 2)
            if close < 0:
                raise _Unbalanced
            self.add(text[i + 2 : close])
            self.i = close + 1
            return
        if nxt not in {"(", "{"}:
            self.add("$")
            self.i = i + 1
            return
        opener, closer = nxt, ")" if nxt == "(" else "}"
        depth = 0
        j = i + 1
        while j < n:
            self.steps += 1
            m = _SUBSTITUTION.search(text, j)
            if m is None:
                break
            ch = m.group(0)
            j = m.end()
            if ch.startswith("<<"):
                # a heredoc inside the substitution: its body is text, quotes and all
                h = _HEREDOC_WORD.match(text, j)
                if h is None:
                    continue
                j = self.skip_body(text.find("\n", h.end()) + 1, h.group(2), ch == "<<-")
                continue
            if ch in {"'", '"'}:
                close = text.find(ch, j)
                if close < 0:
                    break
                j = close + 1
            elif ch == opener:
                depth += 1
            elif ch == closer:
                depth -= 1
                if depth == 0:
                    self.add(text[i:j])
                    self.i = j
                    return
        raise _Unbalanced

    def skip_heredocs(self) -> None:
        """Skip the bodies of the heredocs opened on the line just ended."""
        for delimiter, strip_tabs in self.heredocs:
            self.i = self.skip_body(self.i, delimiter, strip_tabs)
        self.heredocs.clear()

    def skip_body(self, i: int, delimiter: str, strip_tabs: bool) -> int:
        """The index after the heredoc body that starts at `i`, read line by line up to
        its delimiter line (the end of the text when there is none)."""
        text, n = self.text, self.n
        if i <= 0:
            return n
        while i < n:
            self.steps += 1
            newline = text.find("\n", i)
            end = n if newline < 0 else newline
            body_line = text[i:end]
            i = min(end + 1, n)
            candidate = body_line.lstrip("\t") if strip_tabs else body_line
            if candidate.strip() == delimiter:
                return end  # the newline after the delimiter belongs to what follows
        return n


def tokenize(line: str) -> Tokens:
    """Shell words and separators of `line` in one pass (heredoc bodies and comments
    dropped, fd duplications dropped, `&>` read as `>`, `(`/`)` as `;`). Raises
    `ValueError` on a quote that never closes (within the cap)."""
    truncated = len(line) > MAX_COMMAND_CHARS
    scanner = _Scanner(line[:MAX_COMMAND_CHARS] if truncated else line)
    scanner.run(truncated)
    return Tokens(tuple(scanner.out), truncated, scanner.steps)


def _fallback(line: str) -> tuple[str, ...]:
    """An unbalanced quote: whitespace words, lines and stand-alone separators."""
    out: list[str] = []
    for row in line[:MAX_COMMAND_CHARS].split("\n"):
        out.extend(row.split())
        out.append("\n")
    return tuple(out)


def split_command(line: str) -> tuple[Simple, ...]:
    """The simple commands of `line`, wrappers (`sudo`, `timeout 60`, `VAR=1`, `cd x &&`)
    removed from their words."""
    try:
        read = tokenize(line)
        tokens, truncated = read.tokens, read.truncated
    except _Unbalanced:
        tokens, truncated = _fallback(line), len(line) > MAX_COMMAND_CHARS
    groups: list[tuple[list[str], str]] = []
    current: list[str] = []
    for token in tokens:
        if token in SEPARATORS:
            groups.append((current, "\n" if token == "\n" else token))
            current = []
        else:
            current.append(token)
    groups.append((current, ""))
    simples: list[Simple] = []
    for words, sep in groups:
        words, writes = _redirects(words)
        words = strip_wrappers(words)
        if not words:
            continue
        then = ";" if sep == "\n" else sep
        simples.append(Simple(tuple(words), sep in {"|", "|&"}, sep == "&", tuple(writes), then))
    if truncated and simples:
        last = simples[-1]
        simples[-1] = Simple(
            last.words, last.piped_out, last.background, last.writes, last.then, True
        )
    return tuple(simples)


_OUT = frozenset({">", ">>"})
_IN = frozenset({"<", "<<<", "<>"})


def _redirects(words: list[str]) -> tuple[list[str], list[str]]:
    """The words without redirections, and the files output is redirected into."""
    cleaned: list[str] = []
    writes: list[str] = []
    target: str | None = None
    for w in words:
        if target is not None:
            if target == "out" and not w.startswith("/dev/"):
                writes.append(w)
            target = None
            continue
        if w in _OUT:
            target = "out"
            continue
        if w in _IN:
            target = "in"
            continue
        cleaned.append(w)
    return cleaned, writes


def strip_wrappers(words: list[str]) -> list[str]:
    """`words` without what only changes how the program runs (`sudo`, `timeout 60`,
    `VAR=1`, `uv run`, `npx`, `pnpm dlx`, `npm exec`, `bun x`, `python -m`). One index
    moves forward over the words (no copy per word removed)."""
    i, n = 0, len(words)

    def flags(at: int) -> int:
        while at < n and words[at].startswith("-"):
            at += 1
        return at

    while i < n:
        head = words[i]
        following = words[i + 1] if i + 1 < n else None
        if _ASSIGNMENT.match(head):
            i += 1
        elif head in _WRAPPERS:
            i = flags(i + 1)
        elif head == "timeout":
            i += 1
            while i < n and (words[i].startswith("-") or _DURATION.fullmatch(words[i])):
                i += 1
        elif head in _RUNNERS_WITH_RUN and following in {"run", "exec"}:
            i += 2
            while i < n and words[i].startswith("-") and words[i] != "--":
                i += 1
            if i < n and words[i] == "--":
                i += 1
        elif head in _PACKAGE_EXECUTORS:
            i = flags(i + 1)
        elif head in {"npm", "pnpm", "yarn", "bun"} and following in {"dlx", "exec", "x"}:
            i = flags(i + 2)
        elif head in {"{", "}", "!"}:
            i += 1
        elif _PYTHON.fullmatch(head.rsplit("/", 1)[-1]) and following == "-m":
            i += 2
        else:
            break
    return words[i:]
