"""`outcomes query` and `outcomes clickhouse`: read-only SQL in three formats, clear errors."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from cli.clickhouse import clickhouse as clickhouse_cmd
from cli.clickhouse import query
from cli.main import main
from devtools import samples
from sinks import clickhouse
from sinks.writer import ClickHouseWriter

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
    from sinks import schema
    from sinks.rows import rows_for

    table = schema.NOTIFICATIONS
    dup = [row for r in samples.sample_records() for t, row in rows_for(r) if t == table.name]
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
        second = runner.invoke(clickhouse_cmd, ["migrate", "--clickhouse", dsn])
        assert "up to date" in second.output
        status = runner.invoke(clickhouse_cmd, ["status", "--clickhouse", dsn])
        assert "schema versions: [1, 2, 3, 4, 5, 6, 7, 8]" in status.output
        assert "account_revisions" in status.output and "claim_notifications" in status.output
    finally:
        clickhouse.close_all()
