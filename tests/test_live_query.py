"""Querying while the sink runs: the sink's read-only endpoint on 127.0.0.1 (sinks/live.py).

The endpoint is tested in this process on a sample database (credential, loopback only,
hostile statements sent straight over HTTP, clickhouse-connect and curl-style requests),
`outcomes query` against a chDB directory another process holds (with and without an
endpoint: rows, or one error line and never chDB's raw `Code: 76` line), and a real
`outcomes sink` under load answering `outcomes query` and clickhouse-connect mid-run.
"""

from __future__ import annotations

import base64
import contextlib
import os
import socket
import stat
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from email.message import Message
from pathlib import Path

import clickhouse_connect
import pytest
from clickhouse_connect.driver.exceptions import DatabaseError
from confluent_kafka import Producer

from outcomes.common import door
from outcomes.common.codec import Codec
from outcomes.common.settings import Settings
from outcomes.devtools import samples
from outcomes.reducers.records import OutputRecord
from outcomes.sinks import clickhouse, live
from tests.chdb_support import sample_database
from tests.http_support import chunked, exchange, read_reply, request_bytes

pytestmark = pytest.mark.clickhouse
ROOT = Path(__file__).resolve().parent.parent
OUTCOMES = str(Path(sys.executable).parent / "outcomes")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[live.LiveServer]:
    """A sample database with this process's endpoint on it (no sink, no writer thread)."""
    with sample_database(tmp_path) as dsn:
        target = clickhouse.parse_dsn(dsn)
        clickhouse.connect(dsn)
        assert target.path is not None
        with live.LiveServer(target.path, target.database) as server:
            yield server


def request(
    server: live.LiveServer,
    sql: str | None = None,
    *,
    params: dict[str, str] | None = None,
    auth: tuple[str, str] | None = None,
    path: str = "/",
) -> tuple[int, Message, bytes]:
    """One raw HTTP request (status, headers as HTTP reads them: names in any case, body);
    auth as basic auth."""
    host, port = server.address
    query = urllib.parse.urlencode(params or {})
    url = f"http://{host}:{port}{path}" + (f"?{query}" if query else "")
    req = urllib.request.Request(url, data=sql.encode() if sql is not None else None)
    if auth is not None:
        token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
        req.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers, err.read()


def analyst(server: live.LiveServer) -> tuple[str, str]:
    return live.ANALYST_USER, server.password


def test_clickhouse_connect_queries_the_endpoint(served: live.LiveServer) -> None:
    host, port = served.address
    client = clickhouse_connect.get_client(
        host=host, port=port, username=live.ANALYST_USER, password=served.password
    )
    result = client.query("SELECT run_id, status FROM current_accounts ORDER BY run_id")
    assert result.column_names == ("run_id", "status")
    assert [r[0] for r in result.result_rows] == ["run-a", "run-b", "run-c", "run-d"]
    bound = client.query(
        "SELECT count() FROM account_revisions WHERE run_id = {run:String}",
        parameters={"run": "run-a"},
    )
    assert bound.result_rows[0][0] > 0
    assert client.command("SELECT 1") == 1
    # --no-final's setting passes; FINAL is the default.
    physical = client.query("SELECT count() FROM account_revisions", settings={"final": 0})
    assert physical.result_rows[0][0] >= bound.result_rows[0][0]
    # Statement and parameters as multipart/form-data fields.
    form = clickhouse_connect.get_client(
        host=host,
        port=port,
        username=live.ANALYST_USER,
        password=served.password,
        form_encode_query_params=True,
    )
    again = form.query(
        "SELECT count() FROM account_revisions WHERE run_id = {run:String}",
        parameters={"run": "run-a"},
    )
    assert again.result_rows == bound.result_rows


def test_curl_style_requests(served: live.LiveServer) -> None:
    assert request(served, path="/ping")[0::2] == (200, b"Ok.\n")
    status, headers, body = request(
        served, "SELECT run_id FROM current_accounts ORDER BY run_id", auth=analyst(served)
    )
    assert status == 200 and headers["X-ClickHouse-Format"] == "TabSeparated"
    assert body.decode().split() == ["run-a", "run-b", "run-c", "run-d"]
    status, headers, body = request(
        served,
        params={"query": "SELECT count() AS n FROM current_accounts FORMAT JSONEachRow"},
        auth=analyst(served),
    )
    assert status == 200
    assert body.strip() in (b'{"n":"4"}', b'{"n":4}')
    status, _, body = request(
        served,
        params={
            "query": "SELECT 1 AS x",
            "default_format": "CSVWithNames",
            "user": live.ANALYST_USER,
            "password": served.password,
        },
    )
    assert (status, body) == (200, b'"x"\n1\n')


@pytest.mark.parametrize(
    "auth",
    [None, ("analyst", "wrong"), ("default", ""), ("default", "SECRET")],
    ids=["missing", "wrong-password", "default-user", "other-user"],
)
def test_the_endpoint_refuses_without_the_credential(
    served: live.LiveServer, auth: tuple[str, str] | None
) -> None:
    if auth is not None and auth[1] == "SECRET":
        auth = ("default", served.password)
    status, headers, body = request(served, "SELECT count() FROM current_accounts", auth=auth)
    assert status == 403
    assert headers["X-ClickHouse-Exception-Code"] == "516"
    assert b"Authentication failed" in body
    host, port = served.address
    with pytest.raises(DatabaseError, match="516"):
        clickhouse_connect.get_client(host=host, port=port, username="analyst", password="x")


def test_listens_on_loopback_only(served: live.LiveServer, tmp_path: Path) -> None:
    assert served.address[0] == "127.0.0.1"
    for host in ("0.0.0.0", "::", "192.168.1.10", "localhost", ""):
        with pytest.raises(live.LiveEndpointError, match=r"127\.0\.0\.1 only"):
            live.LiveServer(str(tmp_path / "x"), "outcomes", host=host)


def test_the_address_file_is_private_and_goes_with_the_endpoint(tmp_path: Path) -> None:
    with sample_database(tmp_path) as dsn:
        target = clickhouse.parse_dsn(dsn)
        assert target.path is not None
        clickhouse.connect(dsn)
        file = live.endpoint_file(target.path)
        with live.LiveServer(target.path, target.database) as server:
            assert stat.S_IMODE(file.stat().st_mode) == 0o600
            found = live.read_endpoint(target.path)
            assert found is not None
            assert (found.host, found.port) == server.address
            assert found.password == server.password and found.pid == os.getpid()
        assert not file.exists()


def test_a_configured_password_is_never_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(live.PASSWORD_ENV, "analyst password from the environment")
    with sample_database(tmp_path) as dsn:
        target = clickhouse.parse_dsn(dsn)
        assert target.path is not None
        clickhouse.connect(dsn)
        with live.LiveServer(target.path, target.database) as server:
            assert server.password == "analyst password from the environment"
            assert "analyst password" not in live.endpoint_file(target.path).read_text()
            ok = request(server, "SELECT 1", auth=("analyst", server.password))
            assert ok[0] == 200


HOSTILE = [
    "INSERT INTO purge_log (run_id) VALUES ('x')",
    "SELECT 1; DROP TABLE account_revisions",
    "DROP TABLE account_revisions",
    "ALTER TABLE account_revisions DELETE WHERE 1",
    "SELECT * FROM file('/etc/passwd', 'LineAsString')",
    "SELECT * FROM url('http://127.0.0.1:1/', 'CSV', 'x String')",
    "SELECT 1 INTO OUTFILE '{outfile}'",
    "SELECT * FROM purge_credentials",
    "SELECT * FROM system.users",
    "SELECT 1 SETTINGS readonly = 0",
    "SET readonly = 0",
    "KILL QUERY WHERE 1",
    "SELECT 1 FORMAT Template",
    "SELECT * FROM executable('id', 'TSV', 'x String')",
]


@pytest.mark.parametrize("sql", HOSTILE)
def test_hostile_statements_are_refused_over_http(
    served: live.LiveServer, sql: str, tmp_path: Path
) -> None:
    outfile = tmp_path / "out.txt"
    status, headers, body = request(served, sql.format(outfile=outfile), auth=analyst(served))
    assert status >= 400, body
    assert headers["X-ClickHouse-Exception-Code"] != "0" or b"refused" in body
    assert not outfile.exists()
    counts = request(served, "SELECT count() FROM account_revisions", auth=analyst(served))
    assert counts[0] == 200 and int(counts[2]) > 0


@pytest.mark.parametrize(
    "params",
    [
        {"readonly": "0"},
        {"readonly": "2"},
        {"max_execution_time": "0"},
        {"allow_ddl": "1"},
        {"database": "system"},
        {"final": "2"},
    ],
)
def test_settings_in_the_url_are_refused(served: live.LiveServer, params: dict[str, str]) -> None:
    status, _, body = request(served, "SELECT 1", params=params, auth=analyst(served))
    assert status >= 400 and b"refused" in body


def test_statements_run_with_readonly_and_final(served: live.LiveServer) -> None:
    # The session is read-only and limited before the statement arrives.
    status, _, body = request(
        served,
        "SELECT getSetting('readonly'), getSetting('final'), getSetting('max_execution_time'), "
        "getSetting('max_result_bytes')",
        auth=analyst(served),
    )
    assert (status, body.split()) == (
        200,
        [b"1", b"true", str(live.QUERY_SECONDS).encode(), str(live.MAX_RESULT_BYTES).encode()],
    )
    status, _, body = request(
        served, "SELECT getSetting('final')", params={"final": "0"}, auth=analyst(served)
    )
    assert (status, body.strip()) == (200, b"false")


COUNT = "SELECT count() FROM current_accounts"


def test_a_failed_or_cut_short_query_never_reaches_the_next_request(
    served: live.LiveServer,
) -> None:
    """Each request has a session of its own: what a query that failed mid-stream, hit
    a limit or timed out left behind is gone with it (it used to be the next answer)."""
    status, _, body = request(served, COUNT, auth=analyst(served))
    assert status == 200
    expected = body
    poison = (
        "SELECT '999999' UNION ALL SELECT toString(throwIf(1))",
        "SELECT x FROM (SELECT arrayJoin(range(5000000)) AS x) WHERE x >= 0",
        "SELECT arrayJoin(range(20000000))",
        # Far more work than the 10 s limit allows even on an idle machine (10^11 hashes;
        # 10^10 finished in under 10 s in a fresh-clone CI run).
        "SELECT sum(cityHash64(x, y)) FROM (SELECT arrayJoin(range(1000000)) AS x) AS a, "
        "(SELECT arrayJoin(range(100001)) AS y) AS b",
    )
    for sql in poison:
        status, _, failed = request(served, sql, auth=analyst(served))
        assert 400 <= status < 500 and failed.startswith(b"Code: "), (sql, failed[:200])
        assert len(failed.strip().splitlines()) == 1
        status, _, body = request(served, COUNT, auth=analyst(served))
        assert (status, body) == (200, expected), sql
        status, _, body = request(served, "SELECT 46", auth=analyst(served))
        assert (status, body) == (200, b"46\n"), sql


def test_a_client_that_hangs_up_leaves_nothing_for_the_next(served: live.LiveServer) -> None:
    host, port = served.address
    token = base64.b64encode(f"{live.ANALYST_USER}:{served.password}".encode()).decode()
    sql = b"SELECT repeat('x', 1000) FROM (SELECT arrayJoin(range(50000)))"
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(
            b"POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Basic " + token.encode() + b"\r\n"
            b"Content-Length: " + str(len(sql)).encode() + b"\r\n\r\n" + sql
        )
        sock.recv(100)  # the start of the answer, then hang up
    status, _, body = request(served, "SELECT 46", auth=analyst(served))
    assert (status, body) == (200, b"46\n")


@pytest.mark.parametrize(
    ("sql", "status", "answer"),
    [
        ("SELECT 1 # a comment\n", 200, b"1\n"),
        ("SELECT $$x$$", 200, b"x\n"),
        ("SELECT /* a /* nested */ comment */ 2", 200, b"2\n"),
        ("SELECT 1 /* unterminated", 400, b""),
        ("SELECT $$unterminated", 400, b""),
        ("SELECT 'a", 400, b""),
    ],
)
def test_comments_and_heredocs_are_read_by_clickhouse_and_errors_are_one_line(
    served: live.LiveServer, sql: str, status: int, answer: bytes
) -> None:
    got, headers, body = request(served, sql, auth=analyst(served))
    assert got == status, body
    if status == 200:
        assert body == answer
    else:
        assert body.startswith(b"Code: 62.") and len(body.strip().splitlines()) == 1
        assert headers["X-ClickHouse-Exception-Code"] == "62"


# -- another process holds the chDB directory ----------------------------------------------

HOLDER = textwrap.dedent(
    """
    import sys, time
    from outcomes.devtools import samples
    from outcomes.sinks import clickhouse, live
    from outcomes.sinks.writer import ClickHouseWriter
    dsn, serve = sys.argv[1], sys.argv[2] == "serve"
    ClickHouseWriter(dsn).write(samples.sample_records())
    target = clickhouse.parse_dsn(dsn)
    server = live.LiveServer(target.path, target.database).start() if serve else None
    print("ready", flush=True)
    sys.stdin.read()
    if server is not None:
        server.stop()
    """
)


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[Callable[[bool], str]]:
    """Starts a process that holds a chDB directory (serving an endpoint or not)."""
    procs: list[subprocess.Popen[str]] = []

    def start(serve: bool) -> str:
        clickhouse.close_all()
        dsn = f"chdb://{tmp_path}/held-{len(procs)}"
        proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, dsn, "serve" if serve else "hold"],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        procs.append(proc)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        return dsn

    yield start
    for proc in procs:
        proc.communicate(input="", timeout=60)
    clickhouse.close_all()


def outcomes(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([OUTCOMES, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_outcomes_query_reads_a_held_directory_through_its_endpoint(
    holder: Callable[[bool], str],
) -> None:
    dsn = holder(True)
    done = outcomes(
        "query",
        "SELECT run_id, status FROM current_accounts ORDER BY run_id",
        "--format",
        "csv",
        "--clickhouse",
        dsn,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "run_id,status"
    assert [line.split(",")[0] for line in done.stdout.splitlines()[1:]] == [
        "run-a",
        "run-b",
        "run-c",
        "run-d",
    ]
    assert "Code: 76" not in done.stderr
    refused = outcomes("query", "SELECT * FROM file('/etc/passwd')", "--clickhouse", dsn)
    assert refused.returncode == 1
    assert refused.stderr.strip().startswith("outcomes query: error: refused:")


def test_a_held_directory_without_endpoint_is_one_line_and_no_raw_engine_error(
    holder: Callable[[bool], str],
) -> None:
    dsn = holder(False)
    done = outcomes("query", "SELECT 1", "--clickhouse", dsn)
    assert done.returncode == 1
    assert "Code: 76" not in done.stderr and "Code: 76" not in done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "in use by another process" in lines[0], done.stderr


# -- a real sink under load -----------------------------------------------------------------


@pytest.mark.slow
def test_queries_answer_while_a_sink_writes_under_load(
    kafka_settings: Settings,
    kafka_config: dict[str, str],
    kafka_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    codec = Codec(kafka_settings)
    records = samples.many_accounts(6000)
    topic = kafka_topic("out", partitions=3)
    producer = Producer({**kafka_config, "linger.ms": "20"})

    def produce(batch: list[OutputRecord]) -> None:
        for r in batch:
            producer.produce(topic, key=r.key.encode(), value=codec.encode_output(r))
            producer.poll(0)
        assert producer.flush(30) == 0

    produce(records[:1000])
    clickhouse.close_all()
    chdb_dir = tmp_path / "chdb"
    dsn = f"chdb://{chdb_dir}"
    sink = subprocess.Popen(
        [
            OUTCOMES,
            "sink",
            "--bootstrap",
            kafka_settings.bootstrap,
            "--clickhouse",
            dsn,
            "--topic",
            topic,
            "--group-id",
            f"test-live-{uuid.uuid4().hex[:8]}",
            "--batch-rows",
            "200",
            "--batch-seconds",
            "0.2",
            "--until-idle",
            "8",
        ],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while live.read_endpoint(str(chdb_dir)) is None and time.monotonic() < deadline:
            assert sink.poll() is None, "the sink exited"
            time.sleep(0.1)
        endpoint = live.read_endpoint(str(chdb_dir))
        assert endpoint is not None, "the sink advertised no endpoint"
        assert endpoint.host == "127.0.0.1"
        client = clickhouse_connect.get_client(
            host=endpoint.host,
            port=endpoint.port,
            username=endpoint.user,
            password=endpoint.password,
        )
        seen: list[int] = []
        for start in range(1000, len(records), 1000):  # more records keep arriving
            produce(records[start : start + 1000])
            done = outcomes(
                "query",
                "SELECT count() AS n FROM current_accounts",
                "--format",
                "csv",
                "--clickhouse",
                dsn,
            )
            assert done.returncode == 0, done.stderr
            assert "Code: 76" not in done.stderr
            seen.append(int(done.stdout.splitlines()[1]))
            via_client = client.query("SELECT count() FROM account_revisions").result_rows
            assert via_client[0][0] >= seen[-1]
            assert sink.poll() is None, "the sink stopped while being queried"
        assert seen[-1] > 0, seen
        assert seen == sorted(seen)
    finally:
        _, err = sink.communicate(timeout=180)
    assert sink.returncode == 0, err
    assert "6000 records consumed" in err, err
    assert live.read_endpoint(str(chdb_dir)) is None
    assert not live.endpoint_file(str(chdb_dir)).exists()
    clickhouse.close_all()
    conn = clickhouse.connect(dsn)
    assert conn.rows(f"SELECT count() FROM {conn.table('current_accounts')}")[0][0] == 6000
    clickhouse.close_all()


# -- the HTTP door: what a hostile or unlucky client sends ------------------------------


def _basic(server: live.LiveServer) -> tuple[str, str]:
    token = base64.b64encode(f"{live.ANALYST_USER}:{server.password}".encode()).decode()
    return ("Authorization", f"Basic {token}")


def test_no_credential_no_body_read(served: live.LiveServer) -> None:
    """Credentials come before the body: a request without them is refused at once and
    the connection closed, though it announced half a megabyte it never sends (the old
    server waited for it), or a gigabyte."""
    for length in ("500000", "1073741824"):
        head = request_bytes("POST", "/", [("Content-Length", length)])
        reply = exchange(served.address, head, timeout=5)
        assert reply.status == 403 and reply.closed
        assert reply.headers["X-ClickHouse-Exception-Code"] == "516"
        assert reply.body.count(b"\n") == 1


def test_an_unauthenticated_stream_is_not_read(served: live.LiveServer) -> None:
    """A sender streaming a body without credentials is answered 403 and cut off: the
    server stops reading long before 64 MiB have gone (the old one read 400 MiB into
    the sink's memory)."""
    head = request_bytes("POST", "/", [("Transfer-Encoding", "chunked")])
    sent = 0
    with socket.create_connection(served.address, timeout=10) as sock:
        sock.sendall(head)
        chunk = b"%x\r\n%s\r\n" % (1 << 20, b"x" * (1 << 20))
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            while sent < 64 << 20:
                sock.sendall(chunk)
                sent += len(chunk)
        reply = read_reply(sock, 10)
    assert reply.status == 403 and reply.closed
    assert sent < 64 << 20


@pytest.mark.parametrize("length", ["-1", "abc", "1e3", "12, 13"])
def test_a_malformed_content_length_is_400_in_one_line(
    served: live.LiveServer, length: str
) -> None:
    head = request_bytes("POST", "/", [_basic(served), ("Content-Length", length)])
    reply = exchange(served.address, head, b"SELECT 1", timeout=5)
    assert reply.status == 400 and reply.closed
    assert reply.body.count(b"\n") == 1 and b"Traceback" not in reply.body
    status, _, body = request(served, "SELECT 46", auth=analyst(served))
    assert (status, body) == (200, b"46\n")  # and it keeps serving


def test_a_chunked_statement_is_read_as_its_chunks(served: live.LiveServer) -> None:
    """`Transfer-Encoding: chunked` is the body (the old server ignored it, answered
    `Ok.` and read the chunk as the next request)."""
    head = request_bytes("POST", "/", [_basic(served), ("Transfer-Encoding", "chunked")])
    reply = exchange(served.address, head + chunked(b"SELECT ", b"46"))
    assert (reply.status, reply.body) == (200, b"46\n")


def test_a_body_over_the_limit_is_413_however_it_is_framed(served: live.LiveServer) -> None:
    over = live.MAX_REQUEST_BYTES + 1
    head = request_bytes("POST", "/", [_basic(served), ("Content-Length", str(over))])
    reply = exchange(served.address, head, timeout=5)  # at once, nothing read
    assert reply.status == 413 and reply.closed
    head = request_bytes("POST", "/", [_basic(served), ("Transfer-Encoding", "chunked")])
    piece = b"-- " + b"x" * (64 * 1024) + b"\n"
    body = chunked(*[piece] * (over // len(piece) + 2))
    reply = exchange(served.address, head + body)
    assert reply.status == 413
    assert b"request body over" in reply.body


def test_a_slow_body_is_cut(served: live.LiveServer) -> None:
    served.limits = door.Limits(live.MAX_REQUEST_BYTES, body_seconds=1.0)
    head = request_bytes("POST", "/", [_basic(served), ("Content-Length", "100")])
    started = time.monotonic()
    reply = exchange(served.address, head + b"SELECT ", timeout=15)
    assert reply.status == 408 and reply.closed
    assert time.monotonic() - started < 10


@pytest.mark.parametrize(
    "query_id",
    ["x\r\nSet-Cookie: a=b", "x\nSet-Cookie: a=b", "x\rSet-Cookie: a=b", "a b", "x" * 200],
)
def test_a_query_id_never_adds_a_header(served: live.LiveServer, query_id: str) -> None:
    """The id is echoed in `X-ClickHouse-Query-Id` only when it is a plain token; one with
    CR or LF (which added `Set-Cookie` to a 403) is refused, with or without a
    credential, and echoed nowhere."""
    target = "/?" + urllib.parse.urlencode({"query": "SELECT 1", "query_id": query_id})
    for headers in ([], [_basic(served)]):
        reply = exchange(served.address, request_bytes("GET", target, headers))
        assert reply.status == 400
        assert "set-cookie" not in reply.header_names()
        assert "x-clickhouse-query-id" not in reply.header_names()
        assert b"query_id" in reply.body and b"Set-Cookie" not in reply.body
    fine = "/?" + urllib.parse.urlencode({"query": "SELECT 1", "query_id": "q-1.2_3"})
    reply = exchange(served.address, request_bytes("GET", fine, [_basic(served)]))
    assert reply.status == 200 and reply.headers["X-ClickHouse-Query-Id"] == "q-1.2_3"


def test_a_bug_is_a_one_line_500_and_the_traceback_is_logged(
    served: live.LiveServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: object) -> None:
        raise RuntimeError("a bug of ours")

    monkeypatch.setattr(served, "answer", broken)
    status, _, body = request(served, "SELECT 1", auth=analyst(served))
    assert status == 500
    assert body == b"Code: 0. DB::Exception: internal error: RuntimeError\n"
    assert any("a bug of ours" in str(r.exc_info) for r in caplog.records)
