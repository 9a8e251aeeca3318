"""The faust engine's local table data after a crash and after a clean stop.

faust writes a table's local RocksDB before its changelog has the record, so data left
by a worker that did not stop cleanly may hold events the changelog lacks; a restart
must restore from the changelog instead (streams/worker_faust.py `LocalTables`).
"""

from __future__ import annotations

from pathlib import Path

from outcomes.streams.worker_faust import LocalTables


def _leave_data(datadir: Path) -> Path:
    table = datadir / "v1" / "tables" / "run-events-0.db"
    table.mkdir(parents=True)
    (table / "000001.log").write_bytes(b"an event only the local store has")
    return table


def test_data_left_by_a_crash_is_dropped_at_the_next_start(tmp_path: Path) -> None:
    datadir = tmp_path / "worker" / "app"
    first = LocalTables(datadir)
    first.open()
    table = _leave_data(datadir)
    # SIGKILL: close never runs. The next worker on the same state dir:
    LocalTables(datadir).open()
    assert not table.exists()
    assert datadir.is_dir()


def test_data_of_a_clean_stop_is_kept(tmp_path: Path) -> None:
    datadir = tmp_path / "worker" / "app"
    first = LocalTables(datadir)
    first.open()
    table = _leave_data(datadir)
    first.close(0)
    LocalTables(datadir).open()
    assert (table / "000001.log").read_bytes() == b"an event only the local store has"


def test_a_failed_exit_counts_as_a_crash(tmp_path: Path) -> None:
    datadir = tmp_path / "worker" / "app"
    first = LocalTables(datadir)
    first.open()
    table = _leave_data(datadir)
    first.close(1)  # e.g. faust crashed on a send it could not deliver
    LocalTables(datadir).open()
    assert not table.exists()


def test_a_first_start_has_nothing_to_drop(tmp_path: Path) -> None:
    datadir = tmp_path / "worker" / "app"
    LocalTables(datadir).open()
    assert datadir.is_dir() and list(datadir.iterdir()) == []
