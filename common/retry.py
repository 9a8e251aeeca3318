"""Waiting on a condition with a deadline, and retrying a call with backoff.

The one way the project waits and retries (docs/decisions.md, "Retries and deadlines"):

- `Backoff`: the delay before retry n, exponential with "equal jitter" (between half and
  all of `min(cap, base * factor**n)`), or fixed (`Backoff.fixed`);
- `Deadline`: a point on a monotonic clock, and how much time is left before it;
- `wait_for`: call a check until it yields a value, or raise once the deadline passes;
  `poll_until`: the same, answering whether the condition came true instead of raising;
- `retry`: call a function until it returns, retrying the exceptions a predicate
  accepts, within a number of attempts and/or a deadline.

Every function takes the clock and the sleep as arguments (`time.monotonic` and
`time.sleep`, looked up at each call, by default), so a test steps a fake clock instead
of waiting real seconds. Standard library only: the SDK an agent worker installs
uses it too.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, NamedTuple, TypeVar

from outcomes.reducers.errors import OutcomesError

T = TypeVar("T")

Clock = Callable[[], float]
"""Seconds on a monotonic clock (`time.monotonic`)."""
Sleep = Callable[[float], None]
"""Waits the given seconds (`time.sleep`)."""

_RNG: Final = random.Random()
_MAX_EXPONENT: Final = 64  # 2.0**64 s is past any cap; larger powers only risk overflow


class DeadlineExceeded(OutcomesError, TimeoutError):
    """What was waited for did not happen in time. Operators: the message says what and
    how long; check the component it names (a broker, ClickHouse, a worker) is up."""


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff: attempt n (from 0) waits `min(cap, base * factor**n)` seconds,
    or with `jitter` (the default) a random time between half and all of that, so clients
    that failed together do not retry together."""

    base: float = 0.2
    cap: float = 30.0
    factor: float = 2.0
    jitter: bool = True

    def __post_init__(self) -> None:
        if self.base < 0 or self.cap < 0 or self.factor < 1:
            raise ValueError(f"{self}: base and cap must be >= 0 and factor >= 1")

    @classmethod
    def fixed(cls, seconds: float) -> Backoff:
        """The same delay before every attempt."""
        return cls(base=seconds, cap=seconds, factor=1.0, jitter=False)

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        """Seconds to wait before retry `attempt` (0 for the first retry)."""
        ceiling = min(self.cap, self.base * self.factor ** min(max(attempt, 0), _MAX_EXPONENT))
        if not self.jitter:
            return ceiling
        return ceiling / 2 + (rng or _RNG).uniform(0.0, ceiling / 2)


class Deadline:
    """`seconds` from now on `clock`; `restart` moves it `seconds` from the new now."""

    def __init__(self, seconds: float, *, clock: Clock | None = None) -> None:
        self.seconds = seconds
        self._clock = clock or time.monotonic
        self._at = self._clock() + seconds

    @property
    def remaining(self) -> float:
        """Seconds left, 0.0 once passed."""
        return max(0.0, self._at - self._clock())

    @property
    def expired(self) -> bool:
        return self._clock() >= self._at

    def restart(self) -> None:
        self._at = self._clock() + self.seconds


def wait_for(
    check: Callable[[], T | None],
    *,
    timeout: float,
    interval: float = 0.1,
    what: str | Callable[[], str],
    error: Callable[[str], BaseException] = DeadlineExceeded,
    clock: Clock | None = None,
    sleep: Sleep | None = None,
) -> T:
    """Call `check` every `interval` seconds until it returns something other than None
    or False, and return that; `check` runs at least once, and once more at the deadline.

    After `timeout` seconds, raises `error(message)` (`DeadlineExceeded` by default), the
    message being `what`, or what it returns when it is a function (so the message can
    tell the last state seen). An exception from `check` is not caught.
    """
    sleep = sleep or time.sleep
    deadline = Deadline(timeout, clock=clock)
    while True:
        result = check()
        if result is not None and result is not False:
            return result
        if deadline.expired:
            raise error(what() if callable(what) else what)
        sleep(min(interval, deadline.remaining))


def poll_until(
    condition: Callable[[], bool],
    *,
    timeout: float,
    interval: float = 0.1,
    clock: Clock | None = None,
    sleep: Sleep | None = None,
) -> bool:
    """True as soon as `condition()` is true (checked every `interval` seconds, and once
    more at the deadline); False if it is still false after `timeout` seconds."""
    try:
        return wait_for(
            lambda: condition() or None,
            timeout=timeout,
            interval=interval,
            what="",
            error=_NotYet,
            clock=clock,
            sleep=sleep,
        )
    except _NotYet:
        return False


class _NotYet(Exception):
    pass


class Retrying(NamedTuple):
    """One failed attempt that will be retried, as `on_retry` is told of it."""

    attempt: int  # 1 for the first failed attempt
    error: Exception
    delay: float  # seconds until the next attempt


def retry(
    call: Callable[[], T],
    *,
    retry_if: Callable[[Exception], bool],
    attempts: int | None = None,
    timeout: float | None = None,
    backoff: Backoff | None = None,
    on_retry: Callable[[Retrying], None] | None = None,
    clock: Clock | None = None,
    sleep: Sleep | None = None,
    rng: random.Random | None = None,
) -> T:
    """Return what `call` returns, calling it again after an exception `retry_if`
    accepts, with `backoff` between attempts (the default `Backoff()`).

    Gives up, re-raising the last exception, after `attempts` calls in all or once
    `timeout` seconds have passed (a last attempt is made at the deadline); with neither,
    it never gives up on a retryable exception. Other exceptions propagate at once.
    """
    if attempts is not None and attempts < 1:
        raise ValueError(f"attempts must be at least 1, not {attempts}")
    backoff = backoff or Backoff()
    sleep = sleep or time.sleep
    deadline = Deadline(timeout, clock=clock) if timeout is not None else None
    failed = 0
    while True:
        try:
            return call()
        except Exception as exc:
            failed += 1
            out_of_attempts = attempts is not None and failed >= attempts
            expired = deadline is not None and deadline.expired
            if not retry_if(exc) or out_of_attempts or expired:
                raise
            delay = backoff.delay(failed - 1, rng)
            if deadline is not None:
                delay = min(delay, deadline.remaining)
            if on_retry is not None:
                on_retry(Retrying(failed, exc, delay))
            sleep(delay)
