"""`outcomes replay` over a file whose bad lines come between the five-file run's own
(issue 24): each bad line is one dead letter and one `file:line: reason: message` line
on standard error, escaped, and every valid line is still folded, to the same records
as the file without the bad lines."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import fastavro
import pytest

from outcomes.common.codec.container import write_container
from outcomes.reducers.catalog import OUTPUT_KINDS
from tests.cli_support import outcomes

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "five_file_run.jsonl"
RUN = "run-five-files"


def bad(event_id: str, **fields: Any) -> str:
    body = {
        "event_id": event_id,
        "run_id": RUN,
        "type": "review.recorded",
        "occurred_at": "2026-11-30T10:00:30Z",
        "source": "probe",
        "state": "pass",
        **fields,
    }
    return json.dumps(body)


# (the line, the message its dead letter carries)
BAD_LINES = [
    (bad("x-list", state=["pass"]), "state: ['pass'] is not one of pass, fail, indeterminate"),
    (bad("x-object", state={"pass": True}), "state: {'pass': True} is not one of pass"),
    (
        bad("x-max", occurred_at=2**63 - 1),
        "occurred_at: 9223372036854775807 microseconds is outside years 1..9999",
    ),
    (
        bad("x-min", occurred_at=-(10**17)),
        "occurred_at: -100000000000000000 microseconds is outside years 1..9999",
    ),
    (bad("x-esc", run_id="run\x1b[2J"), "run_id: control character U+001B at index 3"),
    (bad("x-newline", run_id="run\nstatus: complete"), "run_id: control character U+000A"),
    (bad("x-bidi", run_id="run\u202egnp.exe"), "run_id: format character U+202E at index 3"),
    (bad("x-nul", source="pro\x00be"), "source: control character U+0000 at index 3"),
    (bad("x-empty", run_id=""), "run_id: must be 1..128 characters, got 0"),
]


def records_of(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    proc = outcomes("replay", str(SAMPLE))
    assert proc.returncode == 0, proc.stderr
    return records_of(proc.stdout)


def test_each_bad_line_is_one_dead_letter_and_the_rest_is_folded(
    tmp_path: Path, clean: list[dict[str, Any]]
) -> None:
    good = [line for line in SAMPLE.read_text().splitlines() if line.strip()]
    lines: list[str] = []
    for index, line in enumerate(good):  # a bad line after every valid one, in turn
        lines.append(line)
        if index < len(BAD_LINES):
            lines.append(BAD_LINES[index][0])
    path = tmp_path / "hostile.jsonl"
    path.write_text("\n".join(lines) + "\n")

    proc = outcomes("replay", str(path))

    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    records = records_of(proc.stdout)
    letters = [r for r in records if r["record"] == "dead_letter"]
    assert [(d["origin_line"], d["reason"]) for d in letters] == [
        (2 * i + 2, "schema_violation") for i in range(len(BAD_LINES))
    ]
    for letter, (_, message) in zip(letters, BAD_LINES, strict=True):
        assert letter["message"].startswith(message), letter["message"]
    # Nothing else lost: the valid lines give exactly the records of the file without
    # the bad lines.
    assert [r for r in records if r["record"] != "dead_letter"] == clean
    # One line per bad line on standard error, then the summary and the error line; no
    # data character reaches the terminal raw.
    err = proc.stderr.splitlines()
    assert len(err) == len(BAD_LINES) + 2, err
    for line, letter in zip(err[: len(letters)], letters, strict=True):
        assert line.startswith(f"{path}:{letter['origin_line']}: schema_violation: ")
    assert not any(ch in proc.stderr for ch in "\x1b\x00\u202e")
    assert f"rejected {len(BAD_LINES)}, revisions 3" in err[-2]


def test_a_jsonl_file_named_avro_is_one_clear_line(tmp_path: Path) -> None:
    path = tmp_path / "events.avro"
    path.write_bytes(SAMPLE.read_bytes())
    proc = outcomes("replay", str(path))
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[0] == (
        f"{path}:1: undecodable: {path}: not an Avro container file (it starts with JSON "
        "text, not Obj\\x01); a file named *.avro is read as Avro: name a JSONL file *.jsonl"
    )
    assert "Traceback" not in proc.stderr and "ValueError" not in proc.stderr


def test_an_empty_file_named_avro_says_so(tmp_path: Path) -> None:
    path = tmp_path / "empty.avro"
    path.write_bytes(b"")
    proc = outcomes("replay", str(path))
    assert proc.returncode == 1
    assert "(it is empty)" in proc.stderr.splitlines()[0]


def test_replay_help_names_every_output_kind() -> None:
    proc = outcomes("replay", "--help")
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    missing = [kind for kind in OUTPUT_KINDS if kind not in text]
    assert not missing
    assert "claim_notification" in text


# ------------------------------------------------------------- issue 34: nothing lost


def test_an_out_that_is_an_input_is_refused_and_the_input_kept(tmp_path: Path) -> None:
    path = tmp_path / "F.jsonl"
    path.write_bytes(SAMPLE.read_bytes())
    for out in (path, tmp_path / "." / "F.jsonl"):
        proc = outcomes("replay", str(path), "--out", str(out))
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.splitlines() == [
            f"outcomes replay: error: --out {out} is the input {path}: it would be overwritten"
        ]
        assert path.read_bytes() == SAMPLE.read_bytes()


def test_a_failed_replay_leaves_the_previous_output_whole(tmp_path: Path) -> None:
    out = tmp_path / "records.jsonl"
    out.write_text("previous\n")
    # chDB cannot open its directory under /proc: the run fails after --out was opened.
    proc = outcomes("replay", str(SAMPLE), "--out", str(out), "--clickhouse", "chdb:///proc/x")
    assert proc.returncode == 1
    assert out.read_text() == "previous\n"
    assert [p.name for p in tmp_path.iterdir()] == ["records.jsonl"]


# The header of an Avro object container file (the Avro specification).
HEADER = {
    "type": "record",
    "name": "org.apache.avro.file.Header",
    "fields": [
        {"name": "magic", "type": {"type": "fixed", "name": "Magic", "size": 4}},
        {"name": "meta", "type": {"type": "map", "values": "bytes"}},
        {"name": "sync", "type": {"type": "fixed", "name": "Sync", "size": 16}},
    ],
}


def container_blocks(tmp_path: Path, compression: str = "null") -> tuple[Path, bytes, list[int]]:
    """The five-file run in an Avro container of several small blocks: the file, its
    sync marker, and where each block starts."""
    path = tmp_path / "run.avro"
    events = [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]
    write_container(path, events, compression=compression, block_bytes=250)
    raw = path.read_bytes()
    # The sync marker is the 16 bytes that end the header and every block.
    header = fastavro.schemaless_reader(io.BytesIO(raw), HEADER)
    marker = header["sync"]  # type: ignore[call-overload,index]
    starts, at = [], raw.find(marker)
    while at >= 0 and at + 16 < len(raw):
        starts.append(at + 16)
        at = raw.find(marker, at + 16)
    return path, marker, starts


def test_a_corrupt_avro_block_is_skipped_to_the_next_sync_marker(tmp_path: Path) -> None:
    path, _, starts = container_blocks(tmp_path)
    assert len(starts) >= 4, "the test needs several blocks"
    original = path.read_bytes()
    raw = bytearray(original)
    second = starts[1]
    raw[second : second + 2] = b"\x81\x81"  # the block's count and size no longer frame it
    path.write_bytes(bytes(raw))
    proc = outcomes("replay", str(path))
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    skipped = [line for line in proc.stderr.splitlines() if "skipped" in line]
    assert len(skipped) == 1
    assert f"bytes {second}..{starts[2] - 1} skipped" in skipped[0]
    assert "reading resumed at the next sync marker" in skipped[0]
    records = records_of(proc.stdout)
    # Every block after the corrupt one is read: the run's last revision is there.
    assert any(r["record"] == "account_revision" for r in records)
    # The events of every other block are read; only the corrupt block's are missing.
    summary = proc.stderr.splitlines()[-2]
    lost = original[second] // 2  # the block's zig-zag count, one byte for a small block
    assert f"applied {16 - 1 - lost}, redelivered 1, rejected 1," in summary


def test_a_changed_block_count_byte_is_reported_and_loses_nothing(tmp_path: Path) -> None:
    path, _, starts = container_blocks(tmp_path)
    clean = outcomes("replay", str(path))
    assert clean.returncode == 0, clean.stderr
    raw = bytearray(path.read_bytes())
    declared = raw[starts[1]]  # a one-byte zig-zag count: 2 * records
    for changed in (declared - 2, declared + 2):
        raw[starts[1]] = changed
        path.write_bytes(bytes(raw))
        proc = outcomes("replay", str(path))
        assert proc.returncode == 1, proc.stderr
        lines = [line for line in proc.stderr.splitlines() if "declares" in line]
        assert len(lines) == 1, proc.stderr
        assert f"block at byte {starts[1]}: declares {changed // 2} records" in lines[0]
        kept = [r for r in records_of(proc.stdout) if r["record"] != "dead_letter"]
        assert kept == records_of(clean.stdout)


def test_a_line_past_the_limit_is_read_in_bounded_memory_and_the_next_one_kept(
    tmp_path: Path,
) -> None:
    path = tmp_path / "long.jsonl"
    good = SAMPLE.read_text().splitlines()[0]
    with path.open("wb") as out:
        out.write(b"0" * (5 * 1024 * 1024) + b"\n")  # 5 MiB, read 1 MiB at a time
        out.write(good.encode() + b"\n")
    proc = outcomes("replay", str(path))
    assert proc.returncode == 1
    first = proc.stderr.splitlines()[0]
    assert first == f"{path}:1: too_large: event of {5 * 1024 * 1024} bytes exceeds 1048576"
    assert "applied 1," in proc.stderr


@pytest.mark.timeout(60)
def test_a_device_is_one_dead_letter_not_an_endless_read() -> None:
    proc = outcomes("replay", "/dev/zero", timeout=30)
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[0] == (
        "/dev/zero:1: undecodable: /dev/zero: a device, not a file of events"
    )


def test_a_deflate_block_that_inflates_without_bound_is_skipped(tmp_path: Path) -> None:
    import zlib

    path, marker, starts = container_blocks(tmp_path, compression="deflate")
    raw = path.read_bytes()
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    bomb = compressor.compress(b"\0" * (100 * 1024 * 1024)) + compressor.flush()
    # one "record" in about 100 KiB that inflates to 100 MiB, before the second block
    block = b"\x02" + _zigzag(len(bomb)) + bomb + marker
    path.write_bytes(raw[: starts[1]] + block + raw[starts[1] :])
    proc = outcomes("replay", str(path))
    assert proc.returncode == 1
    (line,) = [x for x in proc.stderr.splitlines() if "skipped" in x]
    assert "block inflates past 67108864 bytes" in line
    assert "applied 15, redelivered 1, rejected 1," in proc.stderr  # every event still read


def _zigzag(value: int) -> bytes:
    value = (value << 1) ^ (value >> 63)
    out = bytearray()
    while value & ~0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
