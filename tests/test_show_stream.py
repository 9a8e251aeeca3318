"""`outcomes show`, `export` and `verify-bundle` through the stream: the seed's five-file
run produced to Kafka one event at a time, folded by `outcomes worker`, sunk by
`outcomes sink` into chDB, gives the same bytes as `outcomes replay` of the events in the
order the stream folded them, which is the file's order whenever the run log kept it
(the test prints whether it did, and then compares with the file's replay too); the final
account is the file's replay's in any case (issue 17, "done means").

The run gets this test's own id (and event ids) so that other sessions on the shared dev
broker cannot touch it. `show` runs against ClickHouse while the sink holds the chDB
directory (through its read-only query endpoint) and after it stopped.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import orjson
import pytest

from outcomes.common.codec import Codec
from outcomes.devtools.harness import (
    Harness,
    KafkaConfig,
    Progress,
    finish,
    read_run_log,
    wait_for,
)
from tests.builders import five_file_events
from tests.cli_support import outcomes
from tests.sink_support import sunk

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


def same(stream: str, replay: str, what: str) -> None:
    """Assert the stream's output is replay's, showing where they part if not."""
    if stream != replay:
        diff = difflib.unified_diff(
            replay.splitlines(), stream.splitlines(), "replay", "stream", lineterm="", n=2
        )
        pytest.fail(f"{what}: the stream's output differs from replay's:\n" + "\n".join(diff))


def test_show_export_verify_through_the_stream_equal_replay(
    kafka_bootstrap: str, kafka_config: KafkaConfig, tmp_path: Path
) -> None:
    with Harness(kafka_config, kafka_bootstrap, tmp_path, "show") as harness:
        events = five_file_events(harness.prefix)
        run = events[0]["run_id"]
        events_file = tmp_path / "events.jsonl"
        events_file.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))

        # Replay: the reference.
        replay_out = tmp_path / "replay.jsonl"
        proc = outcomes("replay", str(events_file), "--out", str(replay_out))
        assert proc.returncode == 0, proc.stderr

        # The stream: one event at a time, each folded and its outputs published before
        # the next, so the run log holds them in the file's order, as replay reads them
        # (all at once, events of different topics reach the run log in any order, and a
        # revision made in another order knows other things: a different history). Then
        # the sink, from where the outputs stood before this test.
        worker = harness.worker()
        worker.start()
        for event in events:
            harness.produce([event])
            progress = Progress(kafka_config, harness.app_id)
            try:
                wait_for(progress.done, 60, f"the worker to fold {event['event_id']}", 0.2)
            finally:
                progress.close()
        finish([worker], kafka_config, timeout=180)

        # The order the stream folded the run in (its run log). Waiting for each event
        # before producing the next usually keeps the file's order, but the worker's
        # merge may still release them otherwise; a revision made in another order knows
        # other things (SPEC 3.1: revision numbers follow arrival), so the stream is held
        # to replay of its own order, and to the file's replay when the orders agree.
        codec = Codec()
        folded = [
            codec.decode(raw).value for _, _, raw in read_run_log(kafka_config, harness.marks, run)
        ]
        stream_order = tmp_path / "run-log.jsonl"
        stream_order.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in folded))
        in_file_order = [e["event_id"] for e in folded] == [e["event_id"] for e in events]
        references = [replay_of(stream_order, tmp_path / "replay-run-log.jsonl")]
        if in_file_order:
            references.append(replay_out)
        print(f"stream folded the run in file order: {in_file_order}")

        dsn = f"chdb://{tmp_path}/chdb"
        with sunk(kafka_config, kafka_bootstrap, harness.marks, dsn, "show"):
            live = outcomes("show", run, "--clickhouse", dsn, "--format", "json")
        assert live.returncode == 0, live.stderr
        for reference_file in references:
            reference = outcomes("show", run, "--from", str(reference_file), "--format", "json")
            assert reference.returncode == 0, reference.stderr
            same(
                live.stdout,
                reference.stdout,
                f"show --format json (the sink's endpoint) vs {reference_file.name}",
            )
        # Whatever the order, the run ends where replay of the file ends.
        final = orjson.loads(live.stdout)
        expected = orjson.loads(
            outcomes("show", run, "--from", str(replay_out), "--format", "json").stdout
        )
        for key in ("status", "predicates", "checks", "effects", "artifacts", "actions", "open"):
            assert final[key] == expected[key], key
        assert final["status"] == "complete"

        for args in (("--format", "text"), ("--format", "markdown", "--revision", "1")):
            stream = outcomes("show", run, "--clickhouse", dsn, *args)
            assert stream.returncode == 0, stream.stderr
            for reference_file in references:
                replay = outcomes("show", run, "--from", str(reference_file), *args)
                assert replay.returncode == 0, replay.stderr
                same(
                    stream.stdout, replay.stdout, f"show {' '.join(args)} vs {reference_file.name}"
                )

        bundles: list[bytes] = []
        for source in (("--clickhouse", dsn), *(("--from", str(f)) for f in references)):
            out = tmp_path / f"bundle-{len(bundles)}.zip"
            proc = outcomes("export", run, *source, "--events", str(events_file), "--out", str(out))
            assert proc.returncode == 0, proc.stderr
            verified = outcomes("verify-bundle", str(out))
            assert verified.returncode == 0 and verified.stdout == "", verified.stdout
            bundles.append(out.read_bytes())
        assert all(b == bundles[0] for b in bundles)


def replay_of(events: Path, out: Path) -> Path:
    proc = outcomes("replay", str(events), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return out
