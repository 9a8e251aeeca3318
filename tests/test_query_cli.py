"""`outcomes query` and `outcomes clickhouse`: read-only SQL in three formats, clear errors."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from outcomes.cli.clickhouse import clickhouse as clickhouse_cmd
from outcomes.cli.main import main
from outcomes.cli.query import query
from outcomes.devtools import samples
from outcomes.sinks import clickhouse
from outcomes.sinks.writer import ClickHouseWriter

pytestmark = pytest.mark.clickhouse
STATUS_SQL = "SELECT run_id, status, created_at FROM current_accounts ORDER BY run_id"


@pytest.fixture
def chdb_dsn(tmp_path: Path) -> Iterator[str]:
    clickhouse.close_all()
    dsn = f"chdb://{tmp_path}/chdb"
    ClickHouseWriter(dsn).write(samples.sample_records())
    yield dsn
    clickhouse.close_all()


def _current_status() -> dict[str, str]:
    newest: dict[str, tuple[int, str]] = {}
    for r in samples.sample_records():
        if r.kind == "account_revision":
            rev, status = r.body["revision"], r.body["status"]
            if rev > newest.get(r.key, (0, ""))[0]:
                newest[r.key] = (rev, status)
    return {run: s for run, (_, s) in newest.items()}


def test_json_format_gives_objects_with_rfc3339_times(chdb_dsn: str) -> None:
    out = CliRunner().invoke(query, [STATUS_SQL, "--clickhouse", chdb_dsn, "--format", "json"])
    assert out.exit_code == 0, out.output
    data = orjson.loads(out.output)
    assert {d["run_id"]: d["status"] for d in data} == _current_status()
    assert data[0]["created_at"].endswith("Z") and "T" in data[0]["created_at"]


def test_csv_format_has_a_header(chdb_dsn: str) -> None:
    out = CliRunner().invoke(query, [STATUS_SQL, "--clickhouse", chdb_dsn, "--format", "csv"])
    assert out.exit_code == 0, out.output
    reader = list(csv.DictReader(io.StringIO(out.output)))
    assert {r["run_id"]: r["status"] for r in reader} == _current_status()


def test_table_format_renders_every_row(chdb_dsn: str) -> None:
    out = CliRunner().invoke(query, [STATUS_SQL, "--clickhouse", chdb_dsn])
    assert out.exit_code == 0, out.output
    for run, status in _current_status().items():
        assert run in out.output and status in out.output
    assert f"{len(_current_status())} rows" in out.output


def test_queries_are_read_only(chdb_dsn: str) -> None:
    out = CliRunner().invoke(
        main, ["query", "ALTER TABLE account_revisions DELETE WHERE 1", "--clickhouse", chdb_dsn]
    )
    assert out.exit_code == 1
    assert out.output.startswith("outcomes query: error: refused: ")
    assert "read-only" in out.output
    assert len(out.output.strip().splitlines()) == 1
    conn = clickhouse.connect(chdb_dsn)
    assert conn.rows(f"SELECT count() FROM {conn.table('account_revisions')}")[0][0] > 0


def test_final_hides_unmerged_duplicates_unless_asked(chdb_dsn: str) -> None:
    conn = clickhouse.connect(chdb_dsn)
    from outcomes.sinks import schema
    from outcomes.sinks.rows import rows_for

    # Since migration 13 the notifications view reads the record table output_rows.
    table = schema.OUTPUT_ROWS
    dup = [
        row
        for r in samples.sample_records()
        for t, row in rows_for(r)
        if t == table.name and row[0] == "notifications"
    ]
    assert dup
    conn.insert(table.name, dup, table.column_names)
    sql = "SELECT count() AS n FROM notifications"
    final = CliRunner().invoke(query, [sql, "--clickhouse", chdb_dsn, "--format", "json"])
    raw = CliRunner().invoke(
        query, [sql, "--no-final", "--clickhouse", chdb_dsn, "--format", "json"]
    )
    assert orjson.loads(final.output)[0]["n"] == len(dup)
    assert orjson.loads(raw.output)[0]["n"] == 2 * len(dup)


def test_migrate_and_status_commands(tmp_path: Path) -> None:
    clickhouse.close_all()
    dsn = f"chdb://{tmp_path}/fresh"
    try:
        runner = CliRunner()
        first = runner.invoke(clickhouse_cmd, ["migrate", "--clickhouse", dsn])
        assert first.exit_code == 0, first.output
        assert "applied version 1" in first.output and "version 4 skipped" in first.output
        assert "applied version 5" in first.output and "version 6 skipped" in first.output
        assert "applied version 7" in first.output and "version 8 skipped" in first.output
        assert "applied version 9" in first.output
        second = runner.invoke(clickhouse_cmd, ["migrate", "--clickhouse", dsn])
        assert "up to date" in second.output
        status = runner.invoke(clickhouse_cmd, ["status", "--clickhouse", dsn])
        from outcomes.sinks import schema

        versions = sorted(m.version for m in schema.MIGRATIONS)
        assert f"schema versions: {versions}" in status.output
        assert all(table.name in status.output for table in schema.DATA_TABLES)
        assert all(f"  {name} " in status.output for name in schema.RECORD_VIEWS)
    finally:
        clickhouse.close_all()


# --------------------------------------------------------------------------- errors and input

SYNTAX_ERRORS = [
    # (statement, where the error is: 1-based character position, or "end"; what is there)
    ("SELECT status, count() AS runs FORM current_accounts", 32, "FORM current_accounts"),
    ("SELECT run_id\nFROM current_accounts\nWHER status = 'complete'", 42, "status = 'complete'"),
    ("SELECT 'naïve' AS label FROM current_accounts x y", 49, "y"),
    ("SELECT run_id FROM current_accounts WHERE", "end", "current_accounts WHERE"),
    ("SELECT run_id FROM current_accounts WHERE -- to do\n", "end", "WHERE -- to do"),
]


@pytest.mark.parametrize(("sql", "where", "near"), SYNTAX_ERRORS)
def test_syntax_errors_point_into_the_users_statement(
    chdb_dsn: str, sql: str, where: int | str, near: str
) -> None:
    out = CliRunner().invoke(main, ["query", sql, "--clickhouse", chdb_dsn])
    assert out.exit_code == 1
    lines = out.output.strip().splitlines()
    assert len(lines) == 1, out.output
    line = lines[0]
    assert line.startswith("outcomes query: error: syntax error at "), line
    for added in ("SETTINGS", "FORMAT", "Native", "readonly"):
        assert added not in line, line  # text the user never typed
    if where == "end":
        assert f"at the end of your statement (position {len(sql.rstrip())}, " in line, line
        assert near in line and "stops before it is complete" in line
    else:
        assert isinstance(where, int)
        assert sql[where - 1 :].startswith(near)
        place = f"position {where}"
        if "\n" in sql:
            before = sql[: where - 1]
            column = where - 1 - (before.rfind("\n") + 1) + 1
            place += f" (line {before.count(chr(10)) + 1}, column {column})"
        assert f"syntax error at {place} of your statement, at '{near}'" in line, line


def test_a_server_style_syntax_error_past_the_statement_is_its_end() -> None:
    """A server gets `<statement>\\n FORMAT Native` (settings travel in the request)."""
    from outcomes.sinks.query import explain_error

    message = (
        "Code: 62. DB::Exception: Syntax error: failed at position 13 (FORMAT) (line 2, "
        "col 2): FORMAT Native. Expected one of: token, end of query. (SYNTAX_ERROR) "
        "(version 25.3.1)"
    )
    assert explain_error("SELECT 1 +", message) == (
        "syntax error at the end of your statement (position 10, after 'SELECT 1 +'): "
        "it stops before it is complete"
    )


def test_other_errors_do_not_quote_the_appended_clauses(chdb_dsn: str) -> None:
    out = CliRunner().invoke(
        main, ["query", "SELECT nope FROM current_accounts", "--clickhouse", chdb_dsn]
    )
    assert out.exit_code == 1
    assert "UNKNOWN_IDENTIFIER" in out.output and "nope" in out.output
    assert "SETTINGS" not in out.output and "FORMAT" not in out.output
    assert len(out.output.strip().splitlines()) == 1


NAMED = "-- name: runs\nSELECT count() AS n FROM current_accounts\n"


def _count(output: str) -> int:
    return int(orjson.loads(output)[0]["n"])


def test_statement_from_a_file_or_standard_input(chdb_dsn: str, tmp_path: Path) -> None:
    path = tmp_path / "query.sql"
    path.write_text(NAMED)
    base = ["query", "--clickhouse", chdb_dsn, "--format", "json"]
    by_file = CliRunner().invoke(main, [*base, "--file", str(path)])
    by_short = CliRunner().invoke(main, [*base, "-f", str(path)])
    by_stdin = CliRunner().invoke(main, [*base, "--file", "-"], input=NAMED)
    for out in (by_file, by_short, by_stdin):
        assert out.exit_code == 0, out.output
        assert _count(out.output) == len(_current_status())


def test_a_statement_starting_with_a_comment_is_not_an_option(chdb_dsn: str) -> None:
    """`outcomes query "$(cat query.sql)"` with a `-- name:` first line, with or without
    a `--` before it, and with options before or after it."""
    for args in (
        [NAMED, "--clickhouse", chdb_dsn, "--format", "json"],
        ["--clickhouse", chdb_dsn, "--format", "json", NAMED],
        ["--clickhouse", chdb_dsn, "--format", "json", "--", NAMED],
    ):
        out = CliRunner().invoke(main, ["query", *args])
        assert out.exit_code == 0, (args, out.output)
        assert _count(out.output) == len(_current_status())


def test_statement_missing_or_given_twice_is_a_usage_error(chdb_dsn: str, tmp_path: Path) -> None:
    path = tmp_path / "query.sql"
    path.write_text(NAMED)
    neither = CliRunner().invoke(main, ["query", "--clickhouse", chdb_dsn])
    both = CliRunner().invoke(main, ["query", "SELECT 1", "-f", str(path)])
    assert neither.exit_code == 2 and "--file" in neither.output
    assert both.exit_code == 2 and "not both" in both.output


def _run(dsn: str, sql: str, *extra: str) -> str:
    out = CliRunner().invoke(query, [sql, "--clickhouse", dsn, *extra], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    return out.output


def test_table_cells_are_printed_literally_never_as_markup(chdb_dsn: str) -> None:
    shown = _run(
        chdb_dsn,
        "SELECT '[bold red]x[/bold red]' AS m, '[link=https://evil.example]y[/link]' AS l, "
        "1 AS `[red]name[/red]`",
    )
    assert "[bold red]x[/bold red]" in shown
    assert "[link=https://evil.example]y[/link]" in shown
    assert "[red]name[/red]" in shown


def test_control_characters_and_bidi_overrides_are_escaped(chdb_dsn: str) -> None:
    shown = _run(
        chdb_dsn,
        "SELECT concat('a', char(27), '[31mred', char(10), 'fake status', unhex('E280AE'), "
        "'b', char(0), char(13)) AS c",
    )
    assert "\x1b" not in shown and "\u202e" not in shown and "\x00" not in shown
    assert "\r" not in shown
    assert "a\\x1b[31mred\\nfake status\\u202eb\\x00\\r" in shown


def test_zero_rows_print_the_header_and_the_count(chdb_dsn: str) -> None:
    sql = "SELECT run_id, status FROM current_accounts WHERE 0"
    assert _run(chdb_dsn, sql, "--format", "csv") == "run_id,status\n"
    table = _run(chdb_dsn, sql)
    assert "run_id" in table and "status" in table
    assert table.strip().splitlines()[-1].strip() == "0 rows"
    assert orjson.loads(_run(chdb_dsn, sql, "--format", "json")) == []
