"""What an analyst may run, decided by the engine's own parser (docs/clickhouse.md, analysts).

The text is never re-read in Python. ClickHouse parses it (`parseQueryToJSON`, in the
same engine that will run it): a parse error, several statements, or a statement kind
the parser cannot express as a tree is refused there. The tree is then checked against
allowlists, the statement is printed back by ClickHouse (`formatQueryFromJSON`), that
text is parsed again, and it is the new tree that is checked: what runs is exactly the
normalised statement whose tree was read, never the original string.

What the tree may hold:

- one `SELECT` (with `WITH`, `UNION`/`INTERSECT`/`EXCEPT`, subqueries, joins, `ARRAY
  JOIN`, windows), `SHOW TABLES` of the outcomes database, `DESCRIBE TABLE` of a
  readable table, or `EXPLAIN` (plan, AST, syntax, query tree, pipeline, estimate) of
  such a `SELECT`;
- node kinds of that grammar only, each with the fields it is known to carry: a field
  or kind this module does not know (a new clause, `INTO OUTFILE`, `SETTINGS`, a table
  function, a `FORMAT` where none is taken) is refused, not ignored;
- tables, after ClickHouse decoded every escape and quote: the analyst role's `SELECT`
  grants of the migrations (`sinks/schema.py`), never a purge table, never `system`
  beyond `system.one`, never `information_schema`; an unqualified name may also be a
  CTE of the statement if no table of the database has that name;
- functions of the engine's own catalogue (`system.functions`) whose category is a
  computation on values (arithmetic, strings, dates, arrays, JSON, aggregates, ...),
  plus a few named helpers; nothing that reads files, dictionaries, settings, the
  host, other tables by name, or sleeps;
- query parameters only as typed values (`{v:String}`), never `{t:Identifier}`.

Limits and `readonly = 1` are the session's (sinks/query.py, sinks/live.py), set before
the statement arrives; this module decides only what the statement is.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from outcomes.sinks.exceptions import QueryFailed

Ask = Callable[[str], str]
"""Runs one `SELECT` of a single String value in the analyst's session and returns it."""

MAX_STATEMENT_BYTES = 256 * 1024
"""The longest statement read (UTF-8); the session's `max_query_size` is above it."""

# Never readable on the analyst path, whatever a migration grants.
SECRET_TABLES = frozenset({"purge_credentials", "purge_credential_hashes", "purge_attempts"})
SYSTEM_TABLES = frozenset({("system", "one")})

# Function categories of `system.functions` that compute on values and reach nothing.
ALLOWED_CATEGORIES = frozenset(
    {
        "Aggregate Functions",
        "Arithmetic",
        "Arrays",
        "Bit",
        "Bitmap",
        "Comparison",
        "Conditional",
        "Dates and Times",
        "Distance",
        "Encoding",
        "Encryption",
        "Financial",
        "Geo",
        "Geo Polygon",
        "Hash",
        "IP Address",
        "JSON",
        "Logical",
        "Map",
        "Mathematical",
        "Null",
        "NumericIndexedVector",
        "QBit",
        "Random Number",
        "Rounding",
        "String",
        "String Replacement",
        "String Search",
        "String Splitting",
        "Time Window",
        "Tuple",
        "Type Conversion",
        "URL",
        "UUID",
    }
)
# From the categories "Other" and "Internal": helpers that only compute on their
# arguments. Everything else there (file, getSetting, currentUser, hostName, joinGet,
# hasColumnInTable, sleep, getMacro, filesystem*, showCertificate, ...) is refused.
EXTRA_FUNCTIONS = frozenset(
    {
        "_CAST",
        "bar",
        "blockSize",
        "byteSize",
        "caseWithExpression",
        "colorOKLABToSRGB",
        "colorOKLCHToSRGB",
        "colorSRGBToOKLAB",
        "colorSRGBToOKLCH",
        "countDigits",
        "currentDatabase",
        "defaultValueOfArgumentType",
        "defaultValueOfTypeName",
        "finalizeAggregation",
        "formatReadableDecimalSize",
        "formatReadableQuantity",
        "formatReadableSize",
        "formatReadableTimeDelta",
        "getSetting",
        "getSettingOrDefault",
        "getSubcolumn",
        "identity",
        "ignore",
        "initializeAggregation",
        "isConstant",
        "isDecimalOverflow",
        "materialize",
        "MACNumToString",
        "MACStringToNum",
        "MACStringToOUI",
        "neighbor",
        "parseISO8601Duration",
        "parseReadableSize",
        "parseReadableSizeOrNull",
        "parseReadableSizeOrZero",
        "parseTimeDelta",
        "rowNumberInAllBlocks",
        "rowNumberInBlock",
        "runningAccumulate",
        "runningDifference",
        "runningDifferenceStartingWithFirstValue",
        "throwIf",
        "toColumnTypeName",
        "toTypeName",
        "transform",
        "variantElement",
        "variantType",
        "version",
        "visibleWidth",
    }
)
# Operators whose right operand, written as a bare name, is a table read whole.
_IN_FUNCTIONS = frozenset(
    {"in", "notIn", "globalIn", "globalNotIn", "nullIn", "notNullIn", "globalNullIn"}
    | {"globalNotNullIn"}
)

EXPLAIN_KINDS = {
    "EXPLAIN": "EXPLAIN",
    "EXPLAIN AST": "EXPLAIN AST",
    "EXPLAIN SYNTAX": "EXPLAIN SYNTAX",
    "EXPLAIN QUERY TREE": "EXPLAIN QUERY TREE",
    "EXPLAIN PIPELINE": "EXPLAIN PIPELINE",
    "EXPLAIN ESTIMATE": "EXPLAIN ESTIMATE",
    "EXPLAIN PLAN": "EXPLAIN PLAN",
}
EXPLAIN_OPTIONS = frozenset(
    {"header", "description", "actions", "indexes", "projections", "json", "compact"}
    | {"graph", "sorting", "optimize", "distributed", "pretty", "oneline"}
)

_OUTFILE_FLAGS = ("is_outfile_append", "is_outfile_truncate", "is_into_outfile_with_stdout")

# Each node kind of the read grammar and the fields it may carry. Anything else is refused.
_FIELDS: dict[str, frozenset[str]] = {
    k: frozenset(v.split())
    for k, v in {
        "SelectWithUnionQuery": "union_mode list_of_modes list_of_selects "
        + " ".join(_OUTFILE_FLAGS),
        "SelectIntersectExceptQuery": "children final_operator",
        "SelectQuery": (
            "select tables where prewhere group_by having order_by limit_by limit_by_length "
            "limit_by_offset limit_length limit_offset with window qualify interpolate "
            "distinct distinct_on group_by_with_totals group_by_with_rollup group_by_with_cube "
            "group_by_with_grouping_sets group_by_all order_by_all limit_with_ties "
            "limit_by_all recursive_with"
        ),
        "ExpressionList": "children",
        "Subquery": "children alias cte_name",
        "TablesInSelectQuery": "children",
        "TablesInSelectQueryElement": "table_expression table_join array_join",
        "TableExpression": "database_and_table_name subquery final sample_size sample_offset",
        "TableIdentifier": "name name_parts alias",
        "TableJoin": "kind locality strictness on_expression using_expression_list",
        "ArrayJoin": "expression_list kind",
        "Identifier": "name name_parts alias",
        "Literal": "value alias",
        "QueryParameter": "name param_type alias",
        "Function": (
            "name arguments parameters alias is_operator is_lambda_function "
            "is_window_function kind window_definition window_name nulls_action"
        ),
        "Asterisk": "transformers",
        "QualifiedAsterisk": "qualifier transformers",
        "ColumnsRegexpMatcher": "pattern transformers",
        "QualifiedColumnsRegexpMatcher": "pattern qualifier transformers",
        "ColumnsListMatcher": "column_list transformers",
        "QualifiedColumnsListMatcher": "column_list qualifier transformers",
        "ColumnsTransformerList": "children",
        "ColumnsApplyTransformer": "func_name parameters lambda column_name_prefix",
        "ColumnsExceptTransformer": "children is_strict pattern",
        "ColumnsReplaceTransformer": "children is_strict",
        "ColumnsReplaceTransformerReplacement": "children name",
        "OrderByElement": (
            "expression direction nulls_direction nulls_direction_was_explicitly_specified "
            "collation with_fill fill_from fill_to fill_step fill_staleness"
        ),
        "InterpolateElement": "column expr",
        "WindowDefinition": (
            "partition_by order_by parent_window_name frame_is_default frame_type "
            "frame_begin_type frame_begin_offset frame_begin_preceding frame_end_type "
            "frame_end_offset frame_end_preceding"
        ),
        "WindowListElement": "name definition",
        "WithElement": "name subquery aliases",
        "SampleRatio": "numerator denominator",
    }.items()
}
_FUNCTION_KINDS = frozenset({"ORDINARY_FUNCTION", "WINDOW_FUNCTION", "LAMBDA_FUNCTION"})

# What a refused top-level statement is called in the message.
_STATEMENT_NAMES = {
    "InsertQuery": "INSERT",
    "SetQuery": "SET",
    "UseQuery": "USE",
    "KillQueryQuery": "KILL",
    "AlterQuery": "ALTER",
    "CreateQuery": "CREATE",
    "DropQuery": "DROP",
    "RenameQuery": "RENAME",
    "OptimizeQuery": "OPTIMIZE",
    "SystemQuery": "SYSTEM",
    "DeleteQuery": "DELETE",
    "UpdateQuery": "UPDATE",
    "BackupQuery": "BACKUP or RESTORE",
    "GrantQuery": "GRANT or REVOKE",
    "WatchQuery": "WATCH",
    "CheckTableQuery": "CHECK TABLE",
    "UndropQuery": "UNDROP",
    "TransactionControl": "a transaction statement",
}


class Refused(QueryFailed):
    """The analyst path refused a statement (one line saying why)."""


def _refuse(why: str) -> Refused:
    return Refused(f"refused: {why} (the analyst path runs one read-only statement)")


@dataclass(frozen=True)
class Statement:
    """A statement the analyst path decided to run."""

    sql: str
    """ClickHouse's own rendering of the checked tree: the text that runs."""
    kind: str
    """select, show, describe or explain."""
    fmt: str | None
    """The output format a trailing FORMAT clause named (only where one is taken)."""
    tables: frozenset[str]
    """The tables it reads, qualified (`db.name`)."""


@dataclass(frozen=True)
class Catalogue:
    """What the analyst may name: readable tables and the engine's function catalogue."""

    database: str
    readable: frozenset[str]
    existing: frozenset[str]
    functions: Mapping[str, str]
    """Function name -> its canonical name (aliases resolved); allowed ones only."""
    functions_ci: Mapping[str, str]
    """The same for case-insensitive names, keyed in lower case."""
    aggregates: frozenset[str]
    combinators: tuple[str, ...]

    def function(self, name: str) -> str | None:
        """The canonical name of an allowed function (combinators of allowed aggregates
        too), or None."""
        found = self.functions.get(name) or self.functions_ci.get(name.lower())
        if found is not None:
            return found
        for suffix in self.combinators:
            if name.endswith(suffix) and len(name) > len(suffix):
                base = self.function(name[: -len(suffix)])
                if base is not None and base in self.aggregates:
                    return base
        return None


def analyst_grants(statements: Iterable[str], database: str) -> frozenset[str]:
    """Tables and views the migrations' statements grant SELECT on to the analyst role."""
    role = re.escape(f"{database}_analyst")
    grant = re.compile(rf"^GRANT SELECT ON `{re.escape(database)}`\.`([^`]+)` TO `{role}`$")
    revoke = re.compile(rf"^REVOKE ALL ON `{re.escape(database)}`\.`([^`]+)` FROM `{role}`$")
    names: set[str] = set()
    for stmt in statements:
        if m := grant.match(stmt):
            names.add(m.group(1))
        elif m := revoke.match(stmt):
            names.discard(m.group(1))
    return frozenset(names - SECRET_TABLES)


def load_catalogue(ask: Ask, database: str, readable: Iterable[str]) -> Catalogue:
    """The catalogue, asked of the engine that will run the statements."""
    existing = frozenset(
        _lines(
            ask(
                "SELECT arrayStringConcat(groupArray(name), '\\n') FROM system.tables "
                f"WHERE database = {_literal(database)}"
            )
        )
    )
    rows = _lines(
        ask(
            "SELECT arrayStringConcat(groupArray(concat(name, '\\t', alias_to, '\\t', "
            "categories, '\\t', toString(is_aggregate), '\\t', toString(case_insensitive))), "
            "'\\n') FROM system.functions"
        )
    )
    table = [row.split("\t") for row in rows]
    info = {name: (alias, cats, agg == "1", ci == "1") for name, alias, cats, agg, ci in table}

    def allowed(name: str) -> bool:
        alias, cats, agg, _ = info[name]
        if alias and alias in info and alias != name:
            return allowed(alias)
        if name in EXTRA_FUNCTIONS:
            return True
        listed = [c.strip() for c in cats.split(",") if c.strip()]
        if not listed:
            return agg
        return all(c in ALLOWED_CATEGORIES for c in listed)

    def canonical(name: str) -> str:
        alias = info[name][0]
        return alias if alias and alias in info else name

    functions = {n: canonical(n) for n in info if allowed(n)}
    functions_ci = {n.lower(): canonical(n) for n in functions if info[n][3]}
    aggregates = frozenset(n for n, v in info.items() if v[2] and n in functions)
    combinators = tuple(
        sorted(
            _lines(
                ask(
                    "SELECT arrayStringConcat(groupArray(name), '\\n') "
                    "FROM system.aggregate_function_combinators"
                )
            ),
            key=len,
            reverse=True,
        )
    )
    return Catalogue(
        database=database,
        readable=frozenset(readable) & existing,
        existing=existing,
        functions=functions,
        functions_ci=functions_ci,
        aggregates=aggregates,
        combinators=combinators,
    )


def _lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if line]


def _literal(text: str) -> str:
    """A ClickHouse string expression of exactly `text` (hex: no escape to get wrong)."""
    return f"unhex('{text.encode().hex()}')"


def decide(
    text: str,
    ask: Ask,
    catalogue: Catalogue,
    *,
    formats: Mapping[str, str] | None = None,
    explain: Callable[[str, str], str] | None = None,
) -> Statement:
    """The statement to run for an analyst's `text`, or Refused saying why not.

    `formats` (lower-case name -> name) are the output formats a trailing `FORMAT`
    clause may name; without it a FORMAT clause is refused. `explain(statement,
    message)` turns an engine error about the statement into one line.
    """
    if len(text.encode()) > MAX_STATEMENT_BYTES:
        raise _refuse(f"the statement is over {MAX_STATEMENT_BYTES // 1024} KiB")
    if not text.strip():
        raise _refuse("the statement is empty")
    tree = _parse(text, ask, explain)
    if tree is None:
        return _describe(text, ask, catalogue, explain)
    fmt: str | None = None
    format_ast = tree.pop("format_ast", None) if isinstance(tree, dict) else None
    if format_ast is not None:
        name = format_ast.get("name") if isinstance(format_ast, dict) else None
        if formats is None:
            raise _refuse("a FORMAT clause; use --format")
        if not isinstance(name, str) or name.lower() not in formats:
            raise _refuse(f"output format {name} is not served")
        fmt = formats[name.lower()]
    _check_top(tree, catalogue)  # before formatting: a clear reason for what is refused
    normalised = _ask_text(ask, f"SELECT formatQueryFromJSON({_literal(_dumps(tree))})", explain)
    again = _parse(normalised, ask, explain)
    if not isinstance(again, dict) or "format_ast" in again:
        raise _refuse("the statement does not read back as it was written")
    kind, tables = _check_top(again, catalogue)
    return Statement(normalised, kind, fmt, tables)


def _dumps(tree: Any) -> str:
    return orjson.dumps(tree).decode()


def _ask_text(ask: Ask, sql: str, explain: Callable[[str, str], str] | None) -> str:
    try:
        return ask(sql)
    except Refused:
        raise
    except Exception as exc:
        raise _refuse(f"ClickHouse could not read it back: {_one_line(exc)}") from None


_IN_SCOPE = re.compile(
    r"[:.]?\s*In scope SELECT (?:parseQueryToJSON|formatQuery\w*)\(unhex\('[0-9a-f]*'\)\)\.?"
)
_UNSUPPORTED = re.compile(
    r"AST node of type '(\w+?)(?:__\S*)?' does not support JSON serialization"
)


def _one_line(exc: BaseException, limit: int = 500) -> str:
    text = " ".join(str(exc).split())
    return _IN_SCOPE.sub("", text)[:limit]


def _parse(text: str, ask: Ask, explain: Callable[[str, str], str] | None) -> Any:
    """ClickHouse's tree of `text`, or None for a statement kind it cannot express
    (DESCRIBE); Refused for a syntax error or several statements."""
    try:
        raw = ask(f"SELECT parseQueryToJSON({_literal(text)})")
    except Exception as exc:
        message = _one_line(exc, 100_000)
        unsupported = _UNSUPPORTED.search(message)
        if unsupported is None and "not supported by parseQueryToJSON" in message:
            first = text.split(None, 1)[0].upper() if text.split() else ""
            raise _refuse(f"{first} is not a read statement analysts run") from None
        if unsupported:
            if unsupported.group(1) == "DescribeQuery":
                return None
            name = _STATEMENT_NAMES.get(unsupported.group(1), unsupported.group(1))
            raise _refuse(f"{name} is not a read statement analysts run") from None
        if "Multi-statements are not allowed" in message:
            raise _refuse("several statements in one") from None
        if "Syntax error" in message and explain is not None:
            raise Refused(explain(text, message)) from None
        raise Refused(message[:500]) from None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise _refuse("the statement is nested too deeply to read") from None


_DESCRIBE = re.compile(r"DESCRIBE TABLE ([A-Za-z_][A-Za-z0-9_]*)(?:\.([A-Za-z_][A-Za-z0-9_]*))?")


def _describe(
    text: str, ask: Ask, catalogue: Catalogue, explain: Callable[[str, str], str] | None
) -> Statement:
    """`DESCRIBE [TABLE] name` of a readable table (its tree has no JSON form, so the
    normalised text itself must be exactly that shape)."""
    normalised = _ask_text(ask, f"SELECT formatQuerySingleLine({_literal(text)})", explain)
    found = _DESCRIBE.fullmatch(normalised)
    if found is None:
        raise _refuse("DESCRIBE takes one table of the outcomes database (DESCRIBE TABLE name)")
    parts = [p for p in found.groups() if p]
    table = _table(parts, catalogue, frozenset())
    return Statement(normalised, "describe", None, frozenset({table}))


def _check_top(tree: Any, catalogue: Catalogue) -> tuple[str, frozenset[str]]:
    if not isinstance(tree, dict):
        raise _refuse("the statement is not a tree ClickHouse reads")
    kind = tree.get("type")
    if kind == "SelectWithUnionQuery":
        return "select", _check_select(tree, catalogue)
    if kind == "ExplainQuery":
        return "explain", _check_explain(tree, catalogue)
    if kind == "ShowTablesQuery":
        _check_show(tree, catalogue)
        return "show", frozenset()
    name = _STATEMENT_NAMES.get(str(kind), str(kind))
    raise _refuse(f"{name} is not a read statement analysts run")


def _no_outfile(node: Mapping[str, Any]) -> None:
    if "out_file" in node or "compression" in node or any(node.get(f) for f in _OUTFILE_FLAGS):
        raise _refuse("INTO OUTFILE writes a file")


def _check_explain(tree: Mapping[str, Any], catalogue: Catalogue) -> frozenset[str]:
    _no_outfile(tree)
    allowed = {"type", "kind", "settings", "query", *_OUTFILE_FLAGS}
    extra = set(tree) - allowed
    if extra:
        raise _refuse(f"EXPLAIN with {', '.join(sorted(extra))}")
    kind = tree.get("kind")
    if kind not in EXPLAIN_KINDS:
        raise _refuse(f"{kind} is not an EXPLAIN analysts run")
    settings = tree.get("settings")
    if settings is not None:
        changes = settings.get("changes") if isinstance(settings, dict) else None
        for change in changes if isinstance(changes, list) else [None]:
            name = change.get("name") if isinstance(change, dict) else None
            value = change.get("value") if isinstance(change, dict) else None
            if name not in EXPLAIN_OPTIONS or not _small_int(value):
                raise _refuse(
                    f"EXPLAIN option {name} (options: {', '.join(sorted(EXPLAIN_OPTIONS))})"
                )
    query = tree.get("query")
    if not isinstance(query, dict) or query.get("type") != "SelectWithUnionQuery":
        raise _refuse("EXPLAIN of anything but a SELECT")
    return _check_select(query, catalogue)


def _small_int(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and value.get("field_type") in ("UInt64", "Int64", "Bool")
        and isinstance(value.get("value"), int | bool)
    )


def _check_show(tree: Mapping[str, Any], catalogue: Catalogue) -> None:
    _no_outfile(tree)
    allowed = {"type", "from", "like", "not_like", "case_insensitive_like", "limit_length"}
    extra = set(tree) - allowed - set(_OUTFILE_FLAGS)
    if extra:
        raise _refuse("SHOW takes only SHOW TABLES [FROM outcomes] [LIKE …] [LIMIT n]")
    source = tree.get("from")
    if source is not None:
        name = source.get("name") if isinstance(source, dict) else None
        if source.get("type") != "Identifier" or name != catalogue.database:
            raise _refuse(f"SHOW TABLES of {name} (only of {catalogue.database})")
    limit = tree.get("limit_length")
    if limit is not None and not (isinstance(limit, dict) and limit.get("type") == "Literal"):
        raise _refuse("SHOW TABLES LIMIT takes a number")


def _check_select(tree: Mapping[str, Any], catalogue: Catalogue) -> frozenset[str]:
    """Walk the whole tree (no recursion: a deep tree cannot exhaust Python's stack)."""
    ctes = _cte_names(tree)
    tables: set[str] = set()
    stack: list[Any] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue  # scalars: names, flags, numbers
        kind = node.get("type")
        fields = _FIELDS.get(kind) if isinstance(kind, str) else None
        if fields is None:
            raise _refuse(f"{_node_name(kind)} is not part of a read statement analysts run")
        extra = set(node) - fields - {"type"}
        if extra:
            raise _refuse(_field_refusal(str(kind), extra))
        if kind == "SelectWithUnionQuery":
            _no_outfile(node)
        elif kind == "Literal":
            continue  # a value; its parts are data, not nodes
        elif kind == "TableIdentifier":
            tables.add(_table(_parts(node), catalogue, ctes))
            continue
        elif kind == "QueryParameter":
            if str(node.get("param_type", "")).strip().lower() == "identifier":
                raise _refuse("a query parameter of type Identifier (names must be written)")
            continue
        elif kind == "Function":
            _check_function(node, catalogue, ctes, tables)
        elif kind == "ColumnsApplyTransformer":
            func = node.get("func_name")
            if isinstance(func, str) and catalogue.function(func) is None:
                raise _refuse(f"function {func} is not one analysts use")
        for key, value in node.items():
            if key != "type" and isinstance(value, dict | list):
                stack.append(value)
    return frozenset(tables)


def _node_name(kind: Any) -> str:
    return _STATEMENT_NAMES.get(str(kind), str(kind))


def _field_refusal(kind: str, extra: set[str]) -> str:
    if "settings" in extra:
        return "SETTINGS in a statement (the session's settings are fixed)"
    if "table_function" in extra:
        return "a table function (read tables of the outcomes database)"
    if "out_file" in extra or "compression" in extra:
        return "INTO OUTFILE writes a file"
    if "format_ast" in extra:
        return "a FORMAT clause inside a statement"
    if "children" in extra and kind in ("Identifier", "TableIdentifier"):
        return "a name made of query parameters (names must be written)"
    return f"{kind} with {', '.join(sorted(extra))}"


def _check_function(
    node: Mapping[str, Any], catalogue: Catalogue, ctes: frozenset[str], tables: set[str]
) -> None:
    name = node.get("name")
    kind = node.get("kind")
    if kind is not None and kind not in _FUNCTION_KINDS:
        raise _refuse(f"{name} ({kind}) is not a function analysts use")
    if not isinstance(name, str):
        raise _refuse("a function without a name")
    if name == "lambda":
        if not node.get("is_lambda_function"):
            raise _refuse("lambda")
        return
    if catalogue.function(name) is None:
        raise _refuse(f"function {name} is not one analysts use")
    if name in _IN_FUNCTIONS:
        args = node.get("arguments")
        children = args.get("children") if isinstance(args, dict) else None
        if isinstance(children, list) and len(children) == 2:
            right = children[1]
            if isinstance(right, dict) and right.get("type") == "Identifier":
                tables.add(_table(_parts(right), catalogue, ctes))


def _cte_names(tree: Any) -> frozenset[str]:
    names: set[str] = set()
    stack: list[Any] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            if node.get("type") == "Literal":
                continue
            if node.get("type") == "WithElement" and isinstance(node.get("name"), str):
                names.add(node["name"])
            stack.extend(v for v in node.values() if isinstance(v, dict | list))
    return frozenset(names)


def _parts(node: Mapping[str, Any]) -> list[str]:
    parts = node.get("name_parts")
    if isinstance(parts, list) and parts and all(isinstance(p, str) for p in parts):
        return list(parts)
    name = node.get("name")
    if isinstance(name, str) and name:
        return [name]
    raise _refuse("a table named by a query parameter (names must be written)")


def _table(parts: list[str], catalogue: Catalogue, ctes: frozenset[str]) -> str:
    """The qualified name of a readable table, or Refused."""
    shown = ".".join(parts)
    if len(parts) == 1:
        name = parts[0]
        if name in catalogue.readable:
            return f"{catalogue.database}.{name}"
        if name in ctes and name not in catalogue.existing:
            return f"(cte).{name}"
    elif len(parts) == 2:
        database, name = parts
        if database == catalogue.database and name in catalogue.readable:
            return f"{database}.{name}"
        if (database, name) in SYSTEM_TABLES:
            return shown
    raise _refuse(f"table {shown!r} is not one analysts read (SHOW TABLES lists the database)")
