"""Consumer SDK for downstream teams: typed notifications for a consumer group.

:class:`OutcomesConsumer` reads the output topics the worker writes
(`outcomes.notifications.v1` by default; on request claim notifications, account
revisions and claim verdicts), decodes each record with the project's Avro codec and
hands it to your handler as a typed, immutable item:

- delivery is at least once: a record's offset is committed only after the handler
  returned for it (commits are batched every `commit_interval` seconds, on a rebalance
  and on close), so a crash redelivers what was not yet committed instead of losing it;
- every item carries its deterministic id (`Notification.id` is `<run_id>:<revision>`),
  the same on every redelivery, so a handler can be idempotent (docs/consumers.md);
- records of one run arrive in order (the worker keys every output by `run_id`, so one
  run lives in one partition, and partitions are read in order);
- filters: exact run ids, a run id prefix, item kinds, status changes;
- a record that cannot be decoded becomes a `DeadLetter` on the dead-letter topic and
  the consumer goes on; a handler that raises is retried with exponential backoff and
  jitter a bounded number of times, then its record is dead-lettered with the reason.
  :class:`RetryLater` asks for a transient retry (unbounded by default, for an endpoint
  that is down), :class:`Reject` dead-letters at once.

Settings (brokers, TLS, SASL) come from `outcomes.common.settings.Settings` like every client.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import signal
import threading
import time
import typing
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, NamedTuple, TypeVar, cast

import orjson
from confluent_kafka import (
    TIMESTAMP_NOT_AVAILABLE,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)

from outcomes.common.codec import Codec
from outcomes.common.errors import SCHEMA_VIOLATION, UNDECODABLE, CodecError
from outcomes.common.retry import Backoff, Deadline
from outcomes.common.settings import Settings
from outcomes.reducers.catalog import OUTPUT_TOPICS

# The records' enums, from the Avro schemas (`python -m outcomes.schemas.generate`).
# ClaimVerdictValue: `needs_review` is a claim the reader could not decide: route it to a
# person, never count it as contradicted.
from outcomes.reducers.enums_generated import (
    AccountStatus,
    ClaimKind,
    ClaimVerdictValue,
    NotificationKind,
)
from outcomes.reducers.errors import OutcomesError
from outcomes.reducers.records import dead_letter
from outcomes.schemas import OUTPUT_SCHEMAS, current_definitions

if TYPE_CHECKING:
    from confluent_kafka import Message

log = logging.getLogger(__name__)
_librdkafka_log = logging.getLogger(f"{__name__}.librdkafka")
_librdkafka_log.addHandler(logging.NullHandler())

RecordKind = Literal["notification", "claim_notification", "account_revision", "claim_verdict"]
RECORD_KINDS: Final[tuple[RecordKind, ...]] = (
    "notification",
    "claim_notification",
    "account_revision",
    "claim_verdict",
)

# Dead-letter reasons of the consumer side (the codec's own are `undecodable`, ...).
HANDLER_FAILED: Final = "handler_failed"
REJECTED: Final = "rejected"


# -- the items -----------------------------------------------------------------------------


class Origin(NamedTuple):
    """Where a record was read: topic, partition, offset, and the Kafka timestamp the
    worker's producer gave it (milliseconds since the epoch; -1 if none)."""

    topic: str
    partition: int
    offset: int
    timestamp: int = -1


def _origin(message: Message) -> Origin:
    topic, partition, offset = message.topic(), message.partition(), message.offset()
    assert topic is not None and partition is not None and offset is not None  # consumed
    kind, stamp = message.timestamp()
    return Origin(topic, partition, offset, stamp if kind != TIMESTAMP_NOT_AVAILABLE else -1)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Item:
    id: str
    run_id: str
    origin: Origin
    body: Mapping[str, Any] = field(repr=False, compare=False)
    """The record's canonical JSON (docs/records.md); read-only."""

    record: ClassVar[RecordKind]

    @property
    def kind(self) -> str:
        """What the `kinds` filter matches: the record kind (notifications: their kind)."""
        return self.record

    @property
    def status_changed(self) -> bool:
        """Whether the account's status changed with this item (False when it says nothing
        about a status)."""
        return False

    def to_json(self) -> dict[str, Any]:
        """The record as `outcomes replay` prints it: the body plus `"record": kind`."""
        return {"record": self.record, **self.body}

    def to_json_bytes(self) -> bytes:
        """:meth:`to_json` as compact JSON with sorted keys (the same bytes every time)."""
        return orjson.dumps(self.to_json(), option=orjson.OPT_SORT_KEYS)


@dataclass(frozen=True, slots=True, kw_only=True)
class Notification(_Item):
    """An account notification: revision 1 is `account.final`; a later revision that
    changed something a reader cares about is `account.superseded`. `id` is
    `<run_id>:<revision>`."""

    record: ClassVar[RecordKind] = "notification"
    notification_kind: NotificationKind
    revision: int
    supersedes: int | None
    status: AccountStatus
    previous_status: AccountStatus | None
    completion_automation: bool
    observation_cutoff: str

    @property
    def kind(self) -> str:
        return self.notification_kind

    @property
    def status_changed(self) -> bool:
        """True when the status differs from the previous revision's; the first account
        (no previous status) counts as a change."""
        return self.previous_status != self.status


@dataclass(frozen=True, slots=True, kw_only=True)
class ClaimNotification(_Item):
    """A revision settled claim verdicts anew (`verdict_ids`). `id` is
    `<run_id>:<revision>:claims[:<event_id>]`."""

    record: ClassVar[RecordKind] = "claim_notification"
    revision: int
    status: AccountStatus
    observation_cutoff: str
    narrative_ids: tuple[str, ...]
    verdict_ids: tuple[str, ...]
    superseded: int
    withdrawn: int


@dataclass(frozen=True, slots=True, kw_only=True)
class AccountRevision(_Item):
    """One immutable account revision (the whole account is in `body`). `id` is
    `<run_id>:<revision>`, the id of its notification if it has one."""

    record: ClassVar[RecordKind] = "account_revision"
    revision: int
    supersedes: int | None
    status: AccountStatus
    changes: tuple[str, ...]
    observation_cutoff: str

    @property
    def status_changed(self) -> bool:
        return self.revision == 1 or "status" in self.changes


@dataclass(frozen=True, slots=True, kw_only=True)
class ClaimVerdict(_Item):
    """A verdict on one narrative claim, or a later settlement of it. `id` is the
    `verdict_id`."""

    record: ClassVar[RecordKind] = "claim_verdict"
    claim_id: str | None
    narrative_id: str
    settlement: int
    verdict: ClaimVerdictValue
    claim_kind: ClaimKind
    subject: str | None
    withdrawn: bool
    # What the account supports in the claim's place (contradicted), or the obligation an
    # omission leaves out; None otherwise.
    supported: str | None

    @property
    def needs_review(self) -> bool:
        """The reader could not decide this claim: a person should read it."""
        return self.verdict == "needs_review"


Item = Notification | ClaimNotification | AccountRevision | ClaimVerdict
Handler = Callable[[Item], None]
_T = TypeVar("_T", bound=Item)


def _builder(
    item: type[Item], id_field: str, renamed: Mapping[str, str] | None = None
) -> Callable[[Mapping[str, Any], Origin], Item]:
    """How `item` is made from its record's canonical JSON: `id` from `id_field`, each
    other field read by its name in the record (`renamed`: item field -> record field);
    a field with a default in the schema may be absent (a record from before it), a list
    becomes a tuple. tests/test_declared_once.py holds the fields' types to the schema."""
    record = current_definitions()[OUTPUT_SCHEMAS[item.record]]
    defaults = {f["name"]: f["default"] for f in record["fields"] if "default" in f}
    hints = typing.get_type_hints(item)
    plan = [
        (f.name, (renamed or {}).get(f.name, f.name), typing.get_origin(hints[f.name]) is tuple)
        for f in dataclasses.fields(item)
        if f.name not in _ITEM_BASE
    ]
    missing = [key for _, key, _ in plan if key not in {f["name"] for f in record["fields"]}]
    if missing:
        raise AssertionError(f"{item.__name__}: no field {missing} in {item.record}")

    def build(body: Mapping[str, Any], origin: Origin) -> Item:
        values: dict[str, Any] = {}
        for name, key, as_tuple in plan:
            value = body.get(key, defaults[key]) if key in defaults else body[key]
            values[name] = tuple(value) if as_tuple else value
        return item(id=body[id_field], run_id=body["run_id"], origin=origin, body=body, **values)

    return build


_ITEM_BASE: Final = frozenset({"id", "run_id", "origin", "body"})


ASSIGNMENT_WAIT = 30.0
"""Seconds an idle timeout waits at least while the member has no partition: joining a
group on a broker that just started waits for the coordinator to load."""


def _first_assignment(idle_timeout: float | None) -> float | None:
    return None if idle_timeout is None else max(idle_timeout, ASSIGNMENT_WAIT)


def _committed(error: KafkaError | None, partitions: list[TopicPartition]) -> None:
    """The answer to an asynchronous commit: a failure only means redelivery; say so."""
    if error is not None:
        log.warning("commit failed (those records will be redelivered): %s", error.str())


_BUILDERS: Final[Mapping[str, Callable[[Mapping[str, Any], Origin], Item]]] = {
    "notification": _builder(Notification, "notification_id", {"notification_kind": "kind"}),
    "claim_notification": _builder(ClaimNotification, "notification_id"),
    "account_revision": _builder(AccountRevision, "revision_id"),
    "claim_verdict": _builder(ClaimVerdict, "verdict_id"),
}


# -- what a handler may raise, and what the consumer raises --------------------------------


class RetryLater(Exception):
    """Raise from a handler for a transient failure (a peer is down, a timeout).

    The record is retried with the consumer's backoff (`after` seconds at least, when
    given), up to `transient_retries` times (unbounded by default), then dead-lettered.
    """

    def __init__(self, reason: str, *, after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.after = after


class Reject(Exception):
    """Raise from a handler for a record that can never succeed: it is dead-lettered at
    once with `code` as the dead letter's reason and `message`, and the consumer goes on."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class DeadLetterFailed(OutcomesError):
    """A dead letter could not be written, so the consumer stopped without committing the
    record (it is redelivered on restart). Operators: check that the dead-letter topic
    exists and that this identity may write it (docs/consumers.md)."""


class ConsumerError(OutcomesError):
    """The consumer cannot run as configured (unknown record kind, ...). Developers: fix the
    named argument."""


# -- the consumer ----------------------------------------------------------------------------


@dataclass
class ConsumerStats:
    """What one consumer did: items handled, filtered out, retried, dead-lettered."""

    handled: int = 0
    filtered: int = 0
    retries: int = 0
    dead_lettered: int = 0
    commits: int = 0
    interrupted: bool = False
    """A Ctrl-C stopped :meth:`OutcomesConsumer.run` (it returned as after `stop()`)."""

    def summary(self) -> str:
        return (
            f"{self.handled} handled, {self.filtered} filtered out, {self.retries} retries, "
            f"{self.dead_lettered} dead-lettered, {self.commits} commits"
        )


@dataclass(frozen=True)
class Filters:
    """Which items reach the handler. Empty filters keep everything."""

    run_ids: frozenset[str] = frozenset()
    run_prefix: str | None = None
    kinds: frozenset[str] = frozenset()
    status_changed: bool = False

    @property
    def by_run(self) -> bool:
        return bool(self.run_ids) or self.run_prefix is not None

    @property
    def active(self) -> bool:
        return self.by_run or bool(self.kinds) or self.status_changed

    def keeps_run(self, run_id: str) -> bool:
        if self.run_ids and run_id not in self.run_ids:
            return False
        return self.run_prefix is None or run_id.startswith(self.run_prefix)

    def keeps(self, item: Item) -> bool:
        if not self.keeps_run(item.run_id):
            return False
        if self.kinds and item.kind not in self.kinds:
            return False
        return not self.status_changed or item.status_changed


class _Stopped(Exception):
    """The wait was cut short: stop() was called or the record's partition was revoked."""


class OutcomesConsumer:
    """Reads output records for a consumer group and hands each to a handler.

    `group` is the Kafka consumer group (the secure profile's `reader` identity may use
    groups starting with `outcomes-reader`). `records` names what to read, among
    `notification`, `claim_notification`, `account_revision`, `claim_verdict`.
    `from_beginning`: a group with no committed offset starts at the oldest retained
    record instead of the newest; a group that committed resumes where it stopped.
    `commit=False` never commits (a live tail). `topics` overrides record kind -> topic.
    `dead_letter_topic=None` only logs what would be dead-lettered (a read-only tail).
    Use as a context manager; :meth:`run` blocks until :meth:`stop` (from any thread or a
    signal handler), `idle_timeout` or `max_items`.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        group: str,
        bootstrap: str | None = None,
        records: Iterable[str] = ("notification",),
        run_ids: Iterable[str] = (),
        run_prefix: str | None = None,
        kinds: Iterable[str] = (),
        status_changed: bool = False,
        from_beginning: bool = False,
        commit: bool = True,
        commit_interval: float = 1.0,
        retries: int = 3,
        transient_retries: int | None = None,
        backoff: Backoff | None = None,
        dead_letter_topic: str | None = OUTPUT_TOPICS["dead_letter"],
        topics: Mapping[str, str] | None = None,
        codec: Codec | None = None,
        config: Mapping[str, str | int | float | bool] | None = None,
        poll_timeout: float = 0.5,
        batch_size: int = 500,
        seed: int | None = None,
    ) -> None:
        if settings is None:
            settings = Settings.load(bootstrap=bootstrap)
        elif bootstrap is not None:
            settings = replace(settings, bootstrap=bootstrap)
        if not group:
            raise ConsumerError("group must name the consumer group")
        wanted = tuple(dict.fromkeys(records))
        unknown = [r for r in wanted if r not in _BUILDERS]
        if unknown or not wanted:
            raise ConsumerError(
                f"records must be among {', '.join(RECORD_KINDS)}; got {list(wanted)}"
            )
        if retries < 0 or (transient_retries is not None and transient_retries < 0):
            raise ConsumerError("retries must be 0 or more")
        self.settings = settings
        self.group = group
        self.filters = Filters(frozenset(run_ids), run_prefix, frozenset(kinds), status_changed)
        self.codec = codec if codec is not None else Codec(settings)
        all_topics = dict(OUTPUT_TOPICS) | dict(topics or {})
        self.topics: dict[str, str] = {all_topics[r]: r for r in wanted}  # topic -> kind
        self.dead_letter_topic = dead_letter_topic
        self.stats = ConsumerStats()
        self._commit = commit
        self._commit_interval = commit_interval
        self._retries = retries
        self._transient_retries = transient_retries
        self._backoff = backoff or Backoff()
        self._rng = random.Random(seed)
        self._poll_timeout = poll_timeout
        self._batch_size = batch_size
        self._stop = threading.Event()
        self._handled: dict[tuple[str, int], int] = {}  # partition -> next offset to commit
        self._assigned: set[tuple[str, int]] = set()
        self._revoked: set[tuple[str, int]] = set()  # since the current batch began
        self._paused: set[str] = set()  # record kinds paused by pause()
        self._last_commit = time.monotonic()
        self._last_read = time.monotonic()
        self._closed = False
        self._dead_letters: Producer | None = None
        conf: dict[str, Any] = {
            **settings.kafka_config(),
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest" if from_beginning else "latest",
            "client.id": f"outcomes-consumer-{group}",
            "logger": _librdkafka_log,
            "on_commit": _committed,
        }
        conf.update(config or {})
        self._consumer = Consumer(conf)
        self._consumer.subscribe(
            list(self.topics), on_assign=self._on_assign, on_revoke=self._on_revoke
        )

    # -- lifecycle -----------------------------------------------------------------------

    def __enter__(self) -> OutcomesConsumer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def stop(self) -> None:
        """Ask :meth:`run` to return; the item in the handler (if any) is finished first
        unless it is waiting to retry, in which case it is left uncommitted. A stopped
        consumer stays stopped: a later :meth:`run` returns at once."""
        self._stop.set()

    def close(self) -> None:
        """Commit what the handler finished, leave the group, release the clients."""
        if self._closed:
            return
        self._closed = True
        try:
            self._commit_handled(asynchronous=False)
        finally:
            self._consumer.close()
            if self._dead_letters is not None:
                self._dead_letters.flush(10.0)

    def pause(self, record: str) -> None:
        """Stop fetching records of kind `record` (a handler that holds many of them lets
        another kind catch up); records already fetched still come."""
        self._paused.add(record)
        self._consumer.pause(self._partitions_of(record))

    def resume(self, record: str) -> None:
        """Fetch records of kind `record` again."""
        self._paused.discard(record)
        self._consumer.resume(self._partitions_of(record))

    def _partitions_of(self, record: str) -> list[TopicPartition]:
        return [TopicPartition(t, p) for t, p in self._assigned if self.topics[t] == record]

    @property
    def assignment(self) -> frozenset[tuple[str, int]]:
        """The (topic, partition) pairs this member reads now."""
        return frozenset(self._assigned)

    # -- the loop ------------------------------------------------------------------------

    def run(
        self,
        handler: Callable[[_T], None],
        *,
        idle_timeout: float | None = None,
        max_items: int | None = None,
        on_idle: Callable[[], None] | None = None,
    ) -> ConsumerStats:
        """Hand every kept item to `handler`, in order per partition, until :meth:`stop`,
        `idle_timeout` seconds with nothing read (counted from the latest assignment; while
        the member has no partition, at least `ASSIGNMENT_WAIT` seconds), or
        `max_items` handled. `on_idle` is called whenever a poll brings nothing (a live
        view flushes what it holds). In the main thread, unless the program set its own
        SIGINT handler, Ctrl-C is a :meth:`stop`: the item in the handler finishes and is
        committed, and `run` returns with `stats.interrupted` set, no traceback; a second
        Ctrl-C raises `KeyboardInterrupt` at once."""
        with self._ctrl_c_stops():
            self._last_read = time.monotonic()
            while not self._stop.is_set():
                messages = self._consumer.consume(self._batch_size, self._poll_timeout)
                if not messages:
                    self._maybe_commit()
                    if on_idle is not None:
                        on_idle()
                    idle = time.monotonic() - self._last_read
                    # Before its first assignment a member may wait for the group coordinator
                    # (seconds on a broker that just started): that is not idleness.
                    limit = idle_timeout if self._assigned else _first_assignment(idle_timeout)
                    if limit is not None and idle >= limit:
                        break
                    continue
                self._last_read = time.monotonic()
                self._revoked.clear()
                for message in messages:
                    if self._stop.is_set():
                        break
                    where = (message.topic(), message.partition())
                    if where in self._revoked or where not in self._assigned:
                        continue  # its new owner (or our next assignment) reads it again
                    try:
                        self._process(message, cast(Handler, handler))
                    except _Stopped:
                        if self._stop.is_set():
                            break
                        continue  # its partition was revoked: the rest of it comes again
                    if max_items is not None and self.stats.handled >= max_items:
                        self._stop.set()
                self._maybe_commit()
            self._commit_handled(asynchronous=False)
        return self.stats

    @contextmanager
    def _ctrl_c_stops(self) -> Iterator[None]:
        """Ctrl-C stops the loop as :meth:`stop` does while :meth:`run` runs (see there);
        only under Python's own SIGINT handler, which is then put back."""
        if (
            threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
        ):
            yield
            return

        def interrupted(signum: int, frame: FrameType | None) -> None:
            signal.signal(signal.SIGINT, signal.default_int_handler)  # the next one raises
            self.stats.interrupted = True  # (no logging here: its lock may be held)
            self.stop()

        signal.signal(signal.SIGINT, interrupted)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, signal.default_int_handler)

    def _process(self, message: Message, handler: Handler) -> None:
        error = message.error()
        if error is not None:
            if error.code() == KafkaError._PARTITION_EOF:
                return
            if error.fatal():
                raise KafkaException(error)
            log.warning("consumer error: %s", error.str())
            return
        origin = _origin(message)
        filters = self.filters
        if filters.by_run:  # the key is the run id: skip other runs before decoding
            key = message.key()
            if key and not filters.keeps_run(key.decode("utf-8", "replace")):
                self.stats.filtered += 1
                self._done(origin)
                return
        item = self._decode(message, origin)
        if item is None:
            self._done(origin)
            return
        if filters.active and not filters.keeps(item):
            self.stats.filtered += 1
            self._done(origin)
            return
        self._handle(item, message, handler)
        self._done(origin)

    def _decode(self, message: Message, origin: Origin) -> Item | None:
        """The message's item, or None after dead-lettering it."""
        raw = message.value()
        if raw is None:
            self._dead_letter(message, UNDECODABLE, "empty (tombstone) message")
            return None
        try:
            decoded = self.codec.decode(raw)
        except CodecError as exc:
            self._dead_letter(message, exc.reason, exc.message, exc.run_id, exc.event_id)
            return None
        expected = self.topics[origin.topic]
        if decoded.kind != expected:
            self._dead_letter(
                message,
                SCHEMA_VIOLATION,
                f"{decoded.schema_name} on {origin.topic}: expected {expected}",
            )
            return None
        try:
            return _BUILDERS[expected](decoded.value, origin)
        except (KeyError, TypeError) as exc:
            self._dead_letter(message, SCHEMA_VIOLATION, f"{expected} without field {exc}")
            return None

    def _handle(self, item: Item, message: Message, handler: Handler) -> None:
        failures = 0
        transient = 0
        while True:
            try:
                handler(item)
                self.stats.handled += 1
                return
            except Reject as exc:
                self._dead_letter(message, exc.code, exc.message, item.run_id)
                return
            except RetryLater as exc:
                transient += 1
                limit = self._transient_retries
                if limit is not None and transient > limit:
                    self._dead_letter(
                        message,
                        HANDLER_FAILED,
                        f"group {self.group}: still failing after {transient} attempts: "
                        f"{exc.reason}",
                        item.run_id,
                    )
                    return
                delay = max(exc.after or 0.0, self._backoff.delay(transient - 1, self._rng))
                log.warning(
                    "%s: attempt %d failed (%s); retrying in %.2fs", item.id, transient, exc, delay
                )
            except Exception as exc:
                failures += 1
                if failures > self._retries:
                    log.error("%s: handler failed %d times: %r", item.id, failures, exc)
                    self._dead_letter(
                        message,
                        HANDLER_FAILED,
                        f"group {self.group}: handler failed {failures} times: "
                        f"{type(exc).__name__}: {exc}",
                        item.run_id,
                    )
                    return
                delay = self._backoff.delay(failures - 1, self._rng)
                log.warning(
                    "%s: handler failed (%s: %s); retry %d of %d in %.2fs",
                    item.id,
                    type(exc).__name__,
                    exc,
                    failures,
                    self._retries,
                    delay,
                )
            self.stats.retries += 1
            self._wait(delay, (item.origin.topic, item.origin.partition))

    def _wait(self, seconds: float, where: tuple[str, int]) -> None:
        """Sleep before a retry while staying in the group: every partition is paused and
        the consumer keeps polling, so rebalances are served. Raises _Stopped if stop()
        is called or `where` is revoked meanwhile."""
        paused = [TopicPartition(t, p) for t, p in self._assigned]
        self._consumer.pause(paused)
        deadline = Deadline(seconds)
        try:
            while True:
                if self._stop.is_set() or where in self._revoked or where not in self._assigned:
                    raise _Stopped
                remaining = deadline.remaining
                if remaining <= 0:
                    return
                message = self._consumer.poll(min(remaining, 0.2))
                if message is not None and message.error() is None:
                    # Fetched before the pause took effect: read it again later.
                    early = _origin(message)
                    self._consumer.seek(TopicPartition(early.topic, early.partition, early.offset))
        finally:
            still = [
                tp
                for tp in paused
                if (tp.topic, tp.partition) in self._assigned
                and self.topics[tp.topic] not in self._paused
            ]
            if still:
                self._consumer.resume(still)

    # -- offsets ---------------------------------------------------------------------------

    def _done(self, origin: Origin) -> None:
        self._handled[(origin.topic, origin.partition)] = origin.offset + 1

    def _maybe_commit(self) -> None:
        if time.monotonic() - self._last_commit >= self._commit_interval:
            self._commit_handled(asynchronous=True)

    def _commit_handled(
        self, *, asynchronous: bool, only: Collection[tuple[str, int]] | None = None
    ) -> None:
        self._last_commit = time.monotonic()
        keys = [k for k in self._handled if only is None or k in only]
        if not self._commit or not keys:
            for k in keys:
                del self._handled[k]
            return
        offsets = [TopicPartition(t, p, self._handled.pop((t, p))) for t, p in keys]
        try:
            if asynchronous:
                self._consumer.commit(offsets=offsets, asynchronous=True)
            else:
                self._consumer.commit(offsets=offsets, asynchronous=False)
            self.stats.commits += 1
        except KafkaException as exc:  # not committed: those records come again
            log.warning("commit failed (records will be redelivered): %s", exc)

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._assigned.update((tp.topic, tp.partition) for tp in partitions)
        self._last_read = time.monotonic()  # idle time counts from the assignment

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        gone = {(tp.topic, tp.partition) for tp in partitions}
        self._commit_handled(asynchronous=False, only=gone)
        self._assigned -= gone
        self._revoked |= gone

    # -- dead letters ----------------------------------------------------------------------

    def _dead_letter(
        self,
        message: Message,
        reason: str,
        text: str,
        run_id: str | None = None,
        event_id: str | None = None,
    ) -> None:
        """Write the record to the dead-letter topic and wait for the broker's ack."""
        topic, partition, offset, _ = _origin(message)
        key = message.key()
        if run_id is None and key:
            run_id = key.decode("utf-8", "replace")
        record = dead_letter(
            reason=reason,
            message=text,
            raw=bytes(message.value() or b""),
            origin_topic=topic,
            origin_partition=partition,
            origin_offset=offset,
            run_id=run_id,
            event_id=event_id,
        )
        self.stats.dead_lettered += 1
        if self.dead_letter_topic is None:
            log.warning("dropped %s:%s:%s (%s): %s", topic, partition, offset, reason, text)
            return
        if self._dead_letters is None:
            self._dead_letters = Producer(
                {
                    **self.settings.kafka_config(),
                    "enable.idempotence": True,
                    "acks": "all",
                    "client.id": f"outcomes-consumer-{self.group}-dead-letters",
                    "logger": _librdkafka_log,
                }
            )
        errors: list[str] = []

        def delivered(err: KafkaError | None, _msg: Message) -> None:
            if err is not None:
                errors.append(err.str())

        self._dead_letters.produce(
            self.dead_letter_topic,
            self.codec.encode_output(record),
            (run_id or "").encode(),
            on_delivery=delivered,
        )
        pending = self._dead_letters.flush(30.0)
        if errors or pending:
            raise DeadLetterFailed(
                f"dead letter for {topic}:{partition}:{offset} not written to "
                f"{self.dead_letter_topic}: {errors[0] if errors else 'no ack within 30 s'}"
            )
        log.warning("dead-lettered %s:%s:%s (%s): %s", topic, partition, offset, reason, text)
