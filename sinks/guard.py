"""The analyst path's statement guard: one SELECT that reads the outcomes data, nothing else.

ClickHouse enforces most of read-only itself: `outcomes query` runs every statement with
`readonly = 1`, which refuses writes, DDL, `SET`/`SETTINGS` and the table functions that
reach files, URLs, other servers or processes (they need CREATE TEMPORARY TABLE). It does
not refuse `INTO OUTFILE` (chDB writes the file in process), several statements in one
(chDB runs them all), `KILL QUERY`, or reading tables that hold secrets. This guard refuses
those before anything reaches the engine, and, as a second fence, the table functions
and settings too. It reads the statement with a small lexer that knows ClickHouse's
strings, quoted identifiers and comments, and refuses whatever it cannot read the way
ClickHouse would (an unterminated string or comment, `#` comments, heredocs).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from outcomes.sinks.exceptions import QueryFailed

# Functions (table or scalar) that reach outside the outcomes data: files, URLs, object
# stores, other servers and databases, processes, dictionaries (whose sources may be any
# of those), other databases' tables by pattern.
FORBIDDEN_FUNCTIONS = frozenset(
    {
        "file",
        "filecluster",
        "url",
        "urlcluster",
        "s3",
        "s3cluster",
        "gcs",
        "oss",
        "cosn",
        "azureblobstorage",
        "azureblobstoragecluster",
        "hdfs",
        "hdfscluster",
        "remote",
        "remotesecure",
        "cluster",
        "clusterallreplicas",
        "executable",
        "executablepool",
        "input",
        "mysql",
        "postgresql",
        "sqlite",
        "mongodb",
        "redis",
        "jdbc",
        "odbc",
        "hive",
        "iceberg",
        "icebergs3",
        "icebergazure",
        "icebergcluster",
        "icebergs3cluster",
        "deltalake",
        "deltalakecluster",
        "hudi",
        "hudicluster",
        "paimon",
        "arrowflight",
        "ytsaurus",
        "merge",
        "dictionary",
        "joinget",
        "joingetornull",
        "format",
        "mergetreeindex",
        "mergetreeanalyzeindexes",
        "loop",
        "fuzzjson",
        "fuzzquery",
        "prometheusquery",
        "prometheusqueryrange",
        "timeseriesdata",
        "timeseriestags",
        "timeseriesmetrics",
        "timeseriesselector",
    }
)
# Families by prefix (their aliases and variants too): dictGet*, dictHas, ...
# (dictionaries), iceberg*/deltaLake*/hudi* (their *Local forms read files), ...
_FORBIDDEN_PREFIXES = (
    "dict",
    "file",
    "s3",
    "hdfs",
    "azure",
    "remote",
    "cluster",
    "executable",
    "mysql",
    "postgres",
    "mongo",
    "redis",
    "sqlite",
    "jdbc",
    "odbc",
    "iceberg",
    "deltalake",
    "hudi",
    "paimon",
    "arrowflight",
    "ytsaurus",
    "timeseries",
    "prometheus",
)

# Words that are never part of a plain SELECT: output to files, settings, other
# statements hidden in a SELECT's place.
FORBIDDEN_WORDS = {
    "into": "INTO (INTO OUTFILE, INSERT INTO) writes",
    "outfile": "INTO OUTFILE writes a file",
    "infile": "FROM INFILE reads a file",
    "settings": "SETTINGS may lift the read-only restriction",
    "set": "SET may lift the read-only restriction",
}

# Tables of the outcomes database the analyst path never reads.
SECRET_TABLES = frozenset({"purge_credentials", "purge_credential_hashes"})

# The only system tables an analyst reads: the catalogue of what exists, nothing about
# users, grants, queries, logs, settings profiles, named collections or dictionaries.
SYSTEM_TABLES_ALLOWED = frozenset(
    {
        "one",
        "numbers",
        "numbers_mt",
        "zeros",
        "zeros_mt",
        "databases",
        "tables",
        "columns",
        "parts",
        "parts_columns",
        "functions",
        "table_functions",
        "data_type_families",
        "formats",
        "time_zones",
        "build_options",
        "contributors",
        "licenses",
    }
)

_FIRST_WORDS = ("select", "with")


@dataclass(frozen=True)
class Token:
    """A word (bare or quoted identifier), a string literal, a number or a symbol."""

    kind: str  # "word", "quoted", "string", "number", "symbol"
    text: str  # for words lowercased; for quoted identifiers unquoted
    start: int = -1  # offset in the statement (not part of equality)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Token) and (self.kind, self.text) == (other.kind, other.text)

    def __hash__(self) -> int:
        return hash((self.kind, self.text))


class Refused(QueryFailed):
    """The guard refused an analyst statement (one line saying why)."""


def _refuse(why: str) -> Refused:
    return Refused(f"refused: {why} (outcomes query runs one read-only SELECT)")


_WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_NUMBER = re.compile(r"[0-9][0-9A-Za-z_.]*")


def tokens(sql: str) -> list[Token]:
    """The statement's tokens, comments dropped; refuses what ClickHouse could read
    differently (unterminated quotes or comments, `#` comments, `$` heredocs)."""
    out: list[Token] = []
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if c.isspace():
            i += 1
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            i = n if end < 0 else end + 1
        elif sql.startswith("/*", i):
            i = _skip_block_comment(sql, i)
        elif c in "'\"`":
            text, end = _quoted(sql, i, c)
            out.append(Token("string" if c == "'" else "quoted", text, i))
            i = end
        elif c == "#":
            raise _refuse("'#' comments are not allowed; use --")
        elif c == "$":
            raise _refuse("'$' (heredoc strings) is not allowed")
        elif match := _WORD.match(sql, i):
            out.append(Token("word", match.group().lower(), i))
            i = match.end()
        elif match := _NUMBER.match(sql, i):
            out.append(Token("number", match.group(), i))
            i = match.end()
        elif c == "\\":
            raise _refuse("a backslash outside a string is not allowed")
        else:
            out.append(Token("symbol", c, i))
            i += 1
    return out


def _skip_block_comment(sql: str, start: int) -> int:
    # Nesting is where lexers differ, so a comment may not contain another.
    end = sql.find("*/", start + 2)
    if end < 0:
        raise _refuse("unterminated /* comment")
    if "/*" in sql[start + 2 : end]:
        raise _refuse("nested /* comments")
    return end + 2


def _quoted(sql: str, start: int, quote: str) -> tuple[str, int]:
    chars: list[str] = []
    i = start + 1
    while i < len(sql):
        c = sql[i]
        if c == "\\" and i + 1 < len(sql):
            chars.append(sql[i + 1])
            i += 2
        elif c == quote:
            if sql.startswith(quote * 2, i):
                chars.append(quote)
                i += 2
            else:
                return "".join(chars), i + 1
        else:
            chars.append(c)
            i += 1
    raise _refuse(f"unterminated {quote} quote")


def check(sql: str) -> str:
    """The statement to run (one trailing `;` removed), or Refused saying why not."""
    toks = tokens(sql)
    end = len(sql)
    while toks and toks[-1] == Token("symbol", ";"):
        end = toks.pop().start
    if not toks:
        raise _refuse("the statement is empty")
    if any(t == Token("symbol", ";") for t in toks):
        raise _refuse("several statements in one")
    first = next((t for t in toks if t != Token("symbol", "(")), toks[0])
    if first.kind != "word" or first.text not in _FIRST_WORDS:
        shown = first.text.upper() if first.kind == "word" else first.text
        raise _refuse(f"{shown} is not a SELECT")
    for i, tok in enumerate(toks):
        name = _name(tok)
        if name is None:
            continue
        nxt = toks[i + 1] if i + 1 < len(toks) else None
        if tok.kind == "word" and name in FORBIDDEN_WORDS:
            raise _refuse(FORBIDDEN_WORDS[name])
        if tok.kind == "word" and name == "format" and nxt != Token("symbol", "("):
            raise _refuse("a FORMAT clause; use --format")
        if nxt == Token("symbol", "(") and (
            name in FORBIDDEN_FUNCTIONS or name.startswith(_FORBIDDEN_PREFIXES)
        ):
            raise _refuse(f"{name}() reaches outside the outcomes data")
        if name in SECRET_TABLES:
            raise _refuse(f"{name} holds a secret")
        if name == "system" and nxt == Token("symbol", "."):
            table = _name(toks[i + 2]) if i + 2 < len(toks) else None
            if table not in SYSTEM_TABLES_ALLOWED:
                raise _refuse(f"system.{table} is not an analyst table")
    _balanced(toks)
    return sql[:end]


def _name(tok: Token) -> str | None:
    """A word or a quoted identifier, lowercased; None for anything else."""
    if tok.kind == "word":
        return tok.text
    if tok.kind == "quoted":
        return tok.text.lower()
    return None


def _balanced(toks: list[Token]) -> None:
    depth = 0
    for tok in toks:
        if tok == Token("symbol", "("):
            depth += 1
        elif tok == Token("symbol", ")"):
            depth -= 1
            if depth < 0:
                raise _refuse("unbalanced parentheses")
    if depth:
        raise _refuse("unbalanced parentheses")
