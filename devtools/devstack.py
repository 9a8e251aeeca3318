"""`outcomes dev`: a real Apache Kafka (KRaft) on 127.0.0.1 for development, tests and CI.

No Docker: the broker jars come from Maven Central (through `mvn`, using the pom in
`devtools/kafka/pom.xml`) into a per-user cache outside the repository, and the
brokers run as plain `java` processes whose PIDs, configs, data and logs live under
`<state_dir>/kafka/`. `down` stops exactly the processes `up` started.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path

from outcomes.common.retry import poll_until, wait_for
from outcomes.common.settings import Settings
from outcomes.reducers.errors import OutcomesError
from outcomes.streams.acls import IDENTITIES, acl_table, apply_acls, apply_scram_users
from outcomes.streams.topics import cluster_health

KAFKA_VERSION = "4.1.1"
"""The Apache Kafka release the dev stack runs (pinned; the pom's default matches)."""

DEFAULT_PORT = 9092
"""First broker port; broker n listens on DEFAULT_PORT + n - 1."""

CONTROLLER_PORT_OFFSET = 100
"""KRaft controller n listens on broker port + this offset (9192, 9193, 9194)."""

DEFAULT_HEAP = "512m"
STOP_TIMEOUT_S = 30.0
READY_TIMEOUT_S = 120.0

Echo = Callable[[str], None]


class DevStackError(OutcomesError):
    """The dev Kafka stack could not be fetched, started, checked or stopped.

    Operators: the message names the cause (missing java/mvn, a taken port, a broker
    that died: its log path is given). `outcomes dev status` shows what runs;
    `outcomes dev down` stops it; `outcomes dev down --purge` also deletes its data.
    """


# --------------------------------------------------------------------------- layout


@dataclass(frozen=True)
class NodeSpec:
    """One combined broker+controller process of the dev cluster."""

    node_id: int
    port: int
    controller_port: int


@dataclass(frozen=True)
class Layout:
    """The shape of a dev cluster: how many nodes, on which ports, with which durability."""

    brokers: int
    base_port: int = DEFAULT_PORT
    secure: bool = False
    """SASL on every listener, SCRAM users and ACLs (docs/kafka.md, "The secure profile")."""

    def __post_init__(self) -> None:
        if self.brokers not in (1, 3):
            raise DevStackError(f"--brokers must be 1 or 3, not {self.brokers}")
        top = self.base_port + self.brokers - 1 + CONTROLLER_PORT_OFFSET
        if self.base_port < 1024 or top > 65535:
            raise DevStackError(f"--port {self.base_port}: ports must lie in 1024..65535")

    @property
    def nodes(self) -> tuple[NodeSpec, ...]:
        return tuple(
            NodeSpec(i, self.base_port + i - 1, self.base_port + i - 1 + CONTROLLER_PORT_OFFSET)
            for i in range(1, self.brokers + 1)
        )

    @property
    def replication(self) -> int:
        return min(3, self.brokers)

    @property
    def min_insync(self) -> int:
        # 3 replicas tolerate one broker down while still refusing acks=all writes
        # that only one replica holds; a single broker can only ask for itself.
        return 2 if self.replication >= 3 else 1

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)


ADMIN_USER = "admin"
"""The secure stack's own super user (PLAIN, password only in the 0600 server.properties)."""

SCRAM_MECHANISM = "SCRAM-SHA-512"
_PLAIN_LOGIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
_SAFE_SECRET = re.compile(r"[A-Za-z0-9_.~+/=-]{16,200}")


def _secure_properties(layout: Layout, node: NodeSpec, admin_password: str) -> dict[str, str]:
    """SASL on the client and controller listeners, the StandardAuthorizer, deny by default.

    The admin authenticates with PLAIN, known to the brokers through the JAAS config in
    server.properties (so the stack can log in before any SCRAM credential exists, and
    brokers can reach the controllers); every pipeline identity uses SCRAM-SHA-512,
    created through the admin API once the cluster answers.
    """
    jaas = (
        f'{_PLAIN_LOGIN} required username="{ADMIN_USER}" password="{admin_password}" '
        f'user_{ADMIN_USER}="{admin_password}";'
    )
    return {
        "listeners": (
            f"SASL_PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port}"
        ),
        "advertised.listeners": f"SASL_PLAINTEXT://127.0.0.1:{node.port}",
        "inter.broker.listener.name": "SASL_PLAINTEXT",
        "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": f"PLAIN,{SCRAM_MECHANISM}",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.controller.plain.sasl.jaas.config": jaas,
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas,
        # SCRAM users are checked against the credentials in the cluster metadata; the
        # login module only has to be named.
        f"listener.name.sasl_plaintext.{SCRAM_MECHANISM.lower()}.sasl.jaas.config": (
            "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        ),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": f"User:{ADMIN_USER}",
        "allow.everyone.if.no.acl.found": "false",
    }


def server_properties(
    layout: Layout, node: NodeSpec, data_dir: Path, admin_password: str | None = None
) -> dict[str, str]:
    """The broker config of one node: KRaft combined mode, loopback only, small footprint."""
    voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in layout.nodes)
    rf, isr = str(layout.replication), str(layout.min_insync)
    props = {
        "process.roles": "broker,controller",
        "node.id": str(node.node_id),
        "controller.quorum.voters": voters,
        "listeners": f"PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(data_dir),
        # Topics come from `outcomes topics ensure` only, as in production: a typo in a
        # topic name fails loudly instead of creating a stray one-partition topic.
        "auto.create.topics.enable": "false",
        "num.partitions": "6",
        "default.replication.factor": rf,
        "min.insync.replicas": isr,
        "offsets.topic.replication.factor": rf,
        "transaction.state.log.replication.factor": rf,
        "transaction.state.log.min.isr": isr,
        "share.coordinator.state.topic.replication.factor": rf,
        "share.coordinator.state.topic.min.isr": isr,
        # Tests form consumer groups constantly; the default 3 s join delay is pure wait.
        "group.initial.rebalance.delay.ms": "0",
        # Same reason for KIP-848 ("consumer" protocol) groups: a 5 s heartbeat makes
        # every assignment change take seconds.
        "group.consumer.min.heartbeat.interval.ms": "500",
        "group.consumer.heartbeat.interval.ms": "1000",
        # Sized for a 2-core laptop or CI box, not for throughput records.
        "num.network.threads": "2",
        "num.io.threads": "4",
        "num.recovery.threads.per.data.dir": "1",
        "log.cleaner.threads": "1",
        "log.cleaner.dedupe.buffer.size": str(16 * 1024 * 1024),
    }
    if layout.secure:
        if admin_password is None:
            raise DevStackError("a secure layout needs the admin password")
        props.update(_secure_properties(layout, node, admin_password))
    return props


# --------------------------------------------------------------------------- paths


def cache_root() -> Path:
    """Per-user cache of Kafka jars, shared by every clone: `$XDG_CACHE_HOME/outcomes`."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "outcomes"


def kafka_home(version: str = KAFKA_VERSION) -> Path:
    return cache_root() / f"kafka-{version}"


def stack_dir(settings: Settings) -> Path:
    return settings.state_dir / "kafka"


def stack_file(settings: Settings) -> Path:
    return stack_dir(settings) / "stack.json"


def _cluster_dir(settings: Settings, layout: Layout) -> Path:
    # One data directory per cluster shape: a 1-node and a 3-node cluster have
    # different quorums, so they can never share formatted storage.
    suffix = "-secure" if layout.secure else ""
    return stack_dir(settings) / f"cluster-{layout.brokers}-{layout.base_port}{suffix}"


# --------------------------------------------------------------------------- secrets


def secrets_dir(settings: Settings, layout: Layout) -> Path:
    """Where a secure stack's passwords live: `OUTCOMES_DEV_SECRETS_DIR`, else beside its
    data (`<cluster dir>/secrets`). One file per identity, `<user>.password`, mode 0600."""
    override = os.environ.get("OUTCOMES_DEV_SECRETS_DIR")
    return Path(override).expanduser() if override else _cluster_dir(settings, layout) / "secrets"


def password_file(settings: Settings, layout: Layout, user: str) -> Path:
    return secrets_dir(settings, layout) / f"{user}.password"


def ensure_secrets(settings: Settings, layout: Layout) -> dict[str, str]:
    """The password of the admin and of every pipeline identity, generated once.

    A password comes from its file when it exists (an operator may put one there), else
    from `OUTCOMES_DEV_<USER>_PASSWORD`, else is generated; either way it is written to
    its file (0600 in a 0700 directory) and never to argv or a log.
    """
    directory = secrets_dir(settings, layout)
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    passwords: dict[str, str] = {}
    for user in (ADMIN_USER, *IDENTITIES):
        path = directory / f"{user}.password"
        if path.exists():
            password = path.read_text().strip()
        else:
            password = os.environ.get(f"OUTCOMES_DEV_{user.upper()}_PASSWORD") or (
                secrets.token_urlsafe(24)
            )
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write(password + "\n")
        if _SAFE_SECRET.fullmatch(password) is None:
            raise DevStackError(
                f"the password in {path} must be 16-200 characters of A-Z a-z 0-9 _ . ~ + / = -"
            )
        passwords[user] = password
    return passwords


def client_settings(settings: Settings, layout: Layout, user: str) -> Settings:
    """Settings with which `user` reaches the secure stack (its password read from its file)."""
    if not layout.secure:
        return Settings.load({}, state_dir=str(settings.state_dir), bootstrap=layout.bootstrap)
    return Settings.load(
        {},
        state_dir=str(settings.state_dir),
        bootstrap=layout.bootstrap,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN" if user == ADMIN_USER else SCRAM_MECHANISM,
        sasl_username=user,
        sasl_password_file=str(password_file(settings, layout, user)),
    )


def client_env(settings: Settings, layout: Layout, user: str) -> dict[str, str]:
    """The environment variables that give a process `user`'s identity (no secret in them)."""
    return {
        "OUTCOMES_BOOTSTRAP": layout.bootstrap,
        "OUTCOMES_KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
        "OUTCOMES_KAFKA_SASL_MECHANISM": "PLAIN" if user == ADMIN_USER else SCRAM_MECHANISM,
        "OUTCOMES_KAFKA_SASL_USERNAME": user,
        "OUTCOMES_KAFKA_SASL_PASSWORD_FILE": str(password_file(settings, layout, user)),
    }


# --------------------------------------------------------------------------- tools


def find_java() -> Path:
    """The `java` to run (JAVA_HOME first, then PATH), checked to be Java 17 or newer."""
    java_home = os.environ.get("JAVA_HOME")
    candidate = Path(java_home) / "bin" / "java" if java_home else None
    if candidate is None or not candidate.exists():
        found = shutil.which("java")
        if found is None:
            raise DevStackError(
                "java not found: install a Java 17+ runtime (e.g. apt-get install "
                "openjdk-17-jre-headless) or set JAVA_HOME"
            )
        candidate = Path(found)
    out = subprocess.run(
        [str(candidate), "-version"], capture_output=True, text=True, check=False
    ).stderr
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if match is None:
        raise DevStackError(f"cannot read the version of {candidate}: {out.strip()[:200]}")
    major = int(match.group(1))
    if major == 1 and match.group(2):  # "1.8.0_…" style
        major = int(match.group(2))
    if major < 17:
        raise DevStackError(f"{candidate} is Java {major}; Kafka {KAFKA_VERSION} needs Java 17+")
    return candidate


def fetch_kafka(version: str = KAFKA_VERSION, echo: Echo = print) -> Path:
    """Directory with the Kafka broker's jars, downloaded once with Maven into the cache.

    A complete download is marked with `libs/.complete`; once it exists no network (and
    no Maven) is needed. A half-finished download never becomes `libs/`: Maven copies
    into a scratch directory that is renamed only on success.
    """
    home = kafka_home(version)
    libs = home / "libs"
    if (libs / ".complete").exists():
        return libs
    mvn = shutil.which("mvn")
    if mvn is None:
        raise DevStackError(
            f"mvn not found and Kafka {version} is not cached in {libs}: install Maven "
            "(e.g. apt-get install maven) so `outcomes dev up` can fetch the broker"
        )
    home.mkdir(parents=True, exist_ok=True)
    build = home / "build"
    scratch = home / "libs.partial"
    shutil.rmtree(scratch, ignore_errors=True)
    build.mkdir(exist_ok=True)
    pom_source = resources.files("outcomes.devtools") / "kafka" / "pom.xml"
    (build / "pom.xml").write_bytes(pom_source.read_bytes())
    echo(f"fetching Apache Kafka {version} from Maven Central into {libs} (once) …")
    cmd = [
        mvn,
        "-B",
        "-q",
        "-f",
        str(build / "pom.xml"),
        f"-Dkafka.version={version}",
        "dependency:copy-dependencies",
        "-DincludeScope=runtime",
        f"-DoutputDirectory={scratch}",
    ]
    result = subprocess.run(cmd, cwd=build, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tail = (result.stdout + result.stderr).strip().splitlines()[-5:]
        raise DevStackError(
            f"mvn could not fetch Kafka {version} (exit {result.returncode}): "
            + " | ".join(line.strip() for line in tail)
        )
    jars = sorted(p.name for p in scratch.glob("*.jar"))
    if f"kafka_2.13-{version}.jar" not in jars:
        raise DevStackError(f"mvn finished but {scratch} holds no kafka_2.13-{version}.jar")
    (scratch / ".complete").write_text("\n".join(jars) + "\n")
    shutil.rmtree(libs, ignore_errors=True)
    scratch.rename(libs)
    return libs


def port_free(port: int) -> bool:
    """Whether a broker could listen on 127.0.0.1:`port` now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # As the JVM does for its listeners: connections of a previous broker lingering
        # in TIME_WAIT must not count as "taken"; only a live listener does.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _new_cluster_id() -> str:
    """A Kafka cluster id: 16 random bytes, URL-safe base64 without padding."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):  # Kafka's own generator avoids these (CLI quirks)
            return cid


# --------------------------------------------------------------------------- processes


@dataclass(frozen=True)
class RunningNode:
    """A started node as recorded in stack.json: enough to find and stop exactly it."""

    node_id: int
    pid: int
    port: int
    controller_port: int
    config: str
    log_dir: str
    proc_start: str | None


@dataclass(frozen=True)
class Stack:
    """What `dev up` started: recorded in `<state_dir>/kafka/stack.json`."""

    version: str
    brokers: int
    base_port: int
    bootstrap: str
    started_at: float
    nodes: tuple[RunningNode, ...]
    secure: bool = False

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_json(cls, text: str) -> Stack:
        raw = json.loads(text)
        nodes = tuple(RunningNode(**n) for n in raw.pop("nodes"))
        return cls(nodes=nodes, **raw)


def read_stack(settings: Settings) -> Stack | None:
    """The stack recorded under the state dir, or None when `dev up` never ran (or `down` did)."""
    path = stack_file(settings)
    if not path.exists():
        return None
    try:
        return Stack.from_json(path.read_text())
    except (ValueError, TypeError, KeyError) as exc:
        raise DevStackError(
            f"{path} is unreadable ({exc}); stop any broker by hand and delete the file"
        ) from None


def _proc_start(pid: int) -> str | None:
    """The kernel's start time of a process (Linux), to tell a PID from a reused one."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 22 (starttime); the command name (field 2) may hold spaces, so split after it.
    return stat.rsplit(")", 1)[1].split()[19]


def _cmdline(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        pass  # no procfs (macOS) or gone: ask ps below
    result = subprocess.run(
        ["ps", "-o", "args=", "-p", str(pid)], capture_output=True, text=True, check=False
    )
    return result.stdout.strip() or None


def _reap(pid: int) -> None:
    """Collect the exit status when the broker is our own child (tests run up+down)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return  # not our child: init reaps it


def is_alive(node: RunningNode) -> bool:
    """True when the recorded PID still is that node's java process (not a reused PID)."""
    cmdline = None
    # An exec'ing (the java launcher re-execs itself) or exiting process briefly shows
    # an empty command line: look again for a moment before deciding.
    for _ in range(20):
        if gone(node.pid):
            return False
        cmdline = _cmdline(node.pid)
        if cmdline:
            break
        time.sleep(0.05)
    if cmdline is None or "kafka.Kafka" not in cmdline or node.config not in cmdline:
        return False
    status = Path(f"/proc/{node.pid}/status")
    if status.exists():
        state = re.search(r"^State:\s+(\S)", status.read_text(), re.MULTILINE)
        if state is not None and state.group(1) == "Z":
            return False
    return node.proc_start is None or _proc_start(node.pid) == node.proc_start


def gone(pid: int) -> bool:
    """True once the process has fully exited, reaped if it is our child.

    A zombie counts as gone only when no thread of it runs any more: when a process
    exits, its first thread may turn zombie while the others are still being torn down
    (seen with the JVM: `State: Z` with `Threads: 2`, and waitpid not yet able to reap
    it), and until they are, its sockets stay open and `/proc/<pid>` stays.
    """
    _reap(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # exists, owned by someone else
    if not Path("/proc/self").exists():
        return False  # no procfs (macOS): the signal check is all there is
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True  # vanished between the two checks
    if re.search(r"^State:\s+Z", status, re.MULTILINE) is None:
        return False
    threads = re.search(r"^Threads:\s+(\d+)", status, re.MULTILINE)
    if threads is not None and int(threads.group(1)) > 1:
        return False  # its other threads are still exiting
    # It exited after the first `_reap`: collect it now if it is our child, so that
    # nothing of it is left once `down` returns (a test checks /proc right after).
    _reap(pid)
    return True


def rss_bytes(pid: int) -> int | None:
    """Resident memory of a process (Linux), for `dev status`."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    match = re.search(r"^VmRSS:\s+(\d+) kB", text, re.MULTILINE)
    return int(match.group(1)) * 1024 if match else None


@contextmanager
def _locked(settings: Settings) -> Iterator[None]:
    """Serialise `up`/`down` on one state dir (parallel test sessions, two shells)."""
    directory = stack_dir(settings)
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / ".lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _log_tail(log_dir: Path, lines: int = 3) -> str:
    for name in ("server.log", "stdout.log"):
        path = log_dir / name
        if path.exists():
            text = path.read_text(errors="replace").strip().splitlines()
            errors = [line for line in text if " ERROR " in line or "Exception" in line]
            picked = (errors or text)[-lines:]
            if picked:
                return " | ".join(picked)
    return "(no log output)"


# --------------------------------------------------------------------------- up / down


@dataclass(frozen=True)
class UpResult:
    """What `up` did: started a stack (with its startup time) or found it running."""

    stack: Stack
    started: bool
    seconds: float
    downloaded: bool


def up(
    settings: Settings,
    layout: Layout,
    *,
    heap: str = DEFAULT_HEAP,
    version: str = KAFKA_VERSION,
    ready_timeout: float = READY_TIMEOUT_S,
    echo: Echo = print,
) -> UpResult:
    """Start the dev cluster unless it already runs; return once it can serve (see
    `cluster_health`)."""
    t0 = time.monotonic()
    with _locked(settings):
        existing = read_stack(settings)
        if existing is not None:
            alive = [n for n in existing.nodes if is_alive(n)]
            if len(alive) == len(existing.nodes):
                if (existing.brokers, existing.base_port, existing.secure) != (
                    layout.brokers,
                    layout.base_port,
                    layout.secure,
                ):
                    kind = "secure " if existing.secure else ""
                    raise DevStackError(
                        f"a {existing.brokers}-broker {kind}dev stack already runs at "
                        f"{existing.bootstrap}; run `outcomes dev down` before asking for "
                        f"{layout.brokers} broker(s) at port {layout.base_port}"
                        + (" with --secure" if layout.secure else "")
                    )
                _wait_ready(existing, ready_timeout, _admin_conf(settings, existing))
                return UpResult(existing, False, time.monotonic() - t0, False)
            if alive:
                echo(
                    f"{len(existing.nodes) - len(alive)} node(s) of the dev stack died; "
                    "restarting the whole stack"
                )
            _stop(existing, echo)
            stack_file(settings).unlink()

        java = find_java()
        downloaded = not (kafka_home(version) / "libs" / ".complete").exists()
        libs = fetch_kafka(version, echo)
        for node in layout.nodes:
            for port in (node.port, node.controller_port):
                if not port_free(port):
                    raise DevStackError(
                        f"port 127.0.0.1:{port} is taken by another process: stop it, pick "
                        f"other ports with `outcomes dev up --port N`, or point "
                        f"OUTCOMES_BOOTSTRAP at a broker you already run"
                    )
        passwords = ensure_secrets(settings, layout) if layout.secure else {}
        stack = _start(settings, layout, java, libs, heap, version, passwords.get(ADMIN_USER))
        stack_file(settings).write_text(stack.to_json())
        try:
            conf = _admin_conf(settings, stack)
            _wait_ready(stack, ready_timeout, conf)
            if layout.secure:
                create_identities(conf, passwords, echo)
        except DevStackError:
            _stop(stack, echo)
            stack_file(settings).unlink()
            raise
        return UpResult(stack, True, time.monotonic() - t0, downloaded)


def _layout(stack: Stack) -> Layout:
    return Layout(stack.brokers, stack.base_port, stack.secure)


def _admin_conf(settings: Settings, stack: Stack) -> dict[str, str] | None:
    """Client properties of the stack's admin, or None for a plain stack."""
    if not stack.secure:
        return None
    return client_settings(settings, _layout(stack), ADMIN_USER).kafka_config()


def admin_config(settings: Settings) -> dict[str, str] | None:
    """The admin's client properties for the running stack (None: plain or not running)."""
    stack = read_stack(settings)
    return None if stack is None else _admin_conf(settings, stack)


def read_passwords(directory: Path) -> dict[str, str]:
    """`<directory>/<user>.password` of every pipeline identity (a missing one is an error)."""
    passwords = {}
    for user in IDENTITIES:
        path = directory / f"{user}.password"
        try:
            passwords[user] = path.read_text().strip()
        except OSError as exc:
            raise DevStackError(
                f"cannot read the password of {user}: {path} ({exc.strerror})"
            ) from None
        if _SAFE_SECRET.fullmatch(passwords[user]) is None:
            raise DevStackError(
                f"the password in {path} must be 16-200 characters of A-Z a-z 0-9 _ . ~ + / = -"
            )
    return passwords


def create_identities(
    conf: dict[str, str] | None, passwords: dict[str, str], echo: Echo = print
) -> None:
    """Create (or refresh) the SCRAM users and the ACL table with the admin's AdminClient."""
    from confluent_kafka import KafkaException  # lazy: librdkafka only for a secure stack
    from confluent_kafka.admin import AdminClient  # lazy: as above

    admin = AdminClient({**(conf or {}), "log_level": 0})
    users = {user: passwords[user] for user in IDENTITIES}
    try:
        apply_scram_users(admin, users, SCRAM_MECHANISM)
        count = apply_acls(admin, acl_table())
    except KafkaException as exc:
        raise DevStackError(f"creating SCRAM users and ACLs failed: {exc}") from None
    echo(f"secure profile: {len(users)} SCRAM users ({', '.join(users)}), {count} ACLs")


def _start(
    settings: Settings,
    layout: Layout,
    java: Path,
    libs: Path,
    heap: str,
    version: str,
    admin_password: str | None = None,
) -> Stack:
    cluster = _cluster_dir(settings, layout)
    cluster.mkdir(parents=True, exist_ok=True)
    id_file = cluster / "cluster.id"
    if not id_file.exists():
        id_file.write_text(_new_cluster_id() + "\n")
    cluster_id = id_file.read_text().strip()
    log4j = stack_dir(settings) / "log4j2.xml"
    log4j.write_bytes((resources.files("outcomes.devtools") / "kafka" / "log4j2.xml").read_bytes())
    classpath = f"{libs}/*"
    started: list[RunningNode] = []
    for node in layout.nodes:
        node_dir = cluster / f"node-{node.node_id}"
        data, logs = node_dir / "data", node_dir / "logs"
        data.mkdir(parents=True, exist_ok=True)
        logs.mkdir(parents=True, exist_ok=True)
        config = node_dir / "server.properties"
        props = server_properties(layout, node, data, admin_password)
        # 0600 from the start: a secure stack's file holds the admin password.
        fd = os.open(config, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write("".join(f"{k}={v}\n" for k, v in props.items()))
        config.chmod(0o600)
        jvm = [
            str(java),
            f"-Xms{min_heap(heap)}",
            f"-Xmx{heap}",
            "-XX:+UseG1GC",
            "-XX:MaxGCPauseMillis=20",
            "-XX:+ExitOnOutOfMemoryError",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={log4j}",
            f"-Dkafka.logs.dir={logs}",
            "-cp",
            classpath,
        ]
        if not (data / "meta.properties").exists():
            fmt = subprocess.run(
                [*jvm, "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(config)],
                capture_output=True,
                text=True,
                check=False,
            )
            if fmt.returncode != 0:
                raise DevStackError(
                    f"formatting KRaft storage of node {node.node_id} failed: "
                    f"{(fmt.stdout + fmt.stderr).strip()[-300:]}"
                )
        with (logs / "stdout.log").open("ab") as out:
            proc = subprocess.Popen(
                [*jvm, "kafka.Kafka", str(config)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # survives the CLI and its Ctrl-C
            )
        started.append(
            RunningNode(
                node_id=node.node_id,
                pid=proc.pid,
                port=node.port,
                controller_port=node.controller_port,
                config=str(config),
                log_dir=str(logs),
                proc_start=_proc_start(proc.pid),
            )
        )
    return Stack(
        version=version,
        brokers=layout.brokers,
        base_port=layout.base_port,
        bootstrap=layout.bootstrap,
        started_at=time.time(),
        nodes=tuple(started),
        secure=layout.secure,
    )


def min_heap(heap: str) -> str:
    """Initial heap: a quarter of the maximum (at least 64m), so idle brokers stay small."""
    match = re.fullmatch(r"(\d+)([mMgG])", heap)
    if match is None:
        raise DevStackError(f"--heap {heap!r}: expected a size like 512m or 1g")
    mib = int(match.group(1)) * (1024 if match.group(2) in "gG" else 1)
    return f"{max(64, mib // 4)}m"


def _wait_ready(stack: Stack, timeout: float, conf: dict[str, str] | None = None) -> None:
    seen: list[tuple[int, int] | None] = [None]

    def ready() -> bool:
        for node in stack.nodes:
            if gone(node.pid):
                raise DevStackError(
                    f"Kafka node {node.node_id} (pid {node.pid}) exited during startup: "
                    f"{_log_tail(Path(node.log_dir))} (logs: {node.log_dir})"
                )
        # Answering is not enough: every partition's end offset must be readable.
        seen[0] = cluster_health(stack.bootstrap, timeout=2.0, conf=conf)
        return seen[0] == (len(stack.nodes), 0)

    wait_for(
        ready,
        timeout=timeout,
        interval=0.3,
        what=lambda: (
            f"Kafka at {stack.bootstrap} did not answer metadata requests with "
            f"{len(stack.nodes)} broker(s) and every partition's end offset readable within "
            f"{timeout:.0f} s (seen: {seen[0]}; logs: {stack.nodes[0].log_dir})"
        ),
        error=DevStackError,
    )


def _still_ours(node: RunningNode) -> bool:
    """Whether the node's PID is still the process `up` started, also while it exits
    (its command line is gone then, its start time is not)."""
    started = _proc_start(node.pid)
    if node.proc_start is not None and started is not None:
        return started == node.proc_start
    return is_alive(node)


def _stop(stack: Stack, echo: Echo) -> list[int]:
    """Send SIGTERM to the stack's live nodes, SIGKILL after STOP_TIMEOUT_S; return PIDs
    stopped once every one of them is gone (DevStackError if one outlives its SIGKILL)."""
    targets = [n for n in stack.nodes if is_alive(n)]
    for node in stack.nodes:
        if node not in targets:
            echo(f"node {node.node_id}: pid {node.pid} is no longer its broker; leaving it alone")
    for node in targets:
        os.kill(node.pid, signal.SIGTERM)

    # Wait for the processes to be gone, not just to stop looking like brokers: an
    # exiting process drops its command line before the kernel closes its sockets, and
    # a `dev up` right after `down` needs the ports free.
    def all_gone() -> bool:
        return all(gone(n.pid) for n in targets)

    if not poll_until(all_gone, timeout=STOP_TIMEOUT_S):
        for node in targets:
            if not gone(node.pid) and _still_ours(node):
                echo(
                    f"node {node.node_id} (pid {node.pid}) ignored SIGTERM for "
                    f"{STOP_TIMEOUT_S:.0f} s; killing it"
                )
                os.kill(node.pid, signal.SIGKILL)
        wait_for(
            all_gone,
            timeout=STOP_TIMEOUT_S,
            what=lambda: (
                "Kafka node(s) still running "
                f"{STOP_TIMEOUT_S:.0f} s after SIGKILL: pid "
                + ", ".join(str(n.pid) for n in targets if not gone(n.pid))
            ),
            error=DevStackError,
        )
    return [n.pid for n in targets]


def down(settings: Settings, *, purge: bool = False, echo: Echo = print) -> list[int]:
    """Stop exactly the processes `up` recorded; with `purge`, delete their data too."""
    with _locked(settings):
        stack = read_stack(settings)
        stopped: list[int] = []
        if stack is not None:
            stopped = _stop(stack, echo)
            stack_file(settings).unlink()
        if purge:
            for cluster in stack_dir(settings).glob("cluster-*"):
                shutil.rmtree(cluster)
        return stopped
