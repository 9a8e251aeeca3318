"""common/retry.py: backoff delays, deadlines, waiting on a condition and retrying a call,
on a fake clock whose sleep moves time instead of waiting it out."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from outcomes.common.retry import (
    Backoff,
    Deadline,
    DeadlineExceeded,
    Retrying,
    poll_until,
    retry,
    wait_for,
)
from outcomes.reducers.errors import OutcomesError


class FakeClock:
    """A monotonic clock that only `sleep` moves; it records every sleep."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.slept.append(seconds)
        self.now += seconds


def test_backoff_doubles_up_to_the_cap_with_jitter_between_half_and_all() -> None:
    backoff = Backoff(base=0.5, cap=4.0)
    rng = random.Random(7)
    for attempt, ceiling in [(0, 0.5), (1, 1.0), (2, 2.0), (3, 4.0), (4, 4.0), (10_000, 4.0)]:
        delays = [backoff.delay(attempt, rng) for _ in range(200)]
        assert all(ceiling / 2 <= d <= ceiling for d in delays), (attempt, min(delays))
        assert max(delays) - min(delays) > ceiling / 4  # it is spread, not one value


def test_backoff_without_jitter_and_fixed() -> None:
    assert [Backoff(base=1.0, cap=10.0, jitter=False).delay(n) for n in range(5)] == [
        1.0,
        2.0,
        4.0,
        8.0,
        10.0,
    ]
    assert {Backoff.fixed(0.3).delay(n) for n in range(50)} == {0.3}
    with pytest.raises(ValueError):
        Backoff(factor=0.5)


def test_deadline_counts_down_and_restarts() -> None:
    clock = FakeClock()
    deadline = Deadline(10.0, clock=clock)
    assert deadline.remaining == 10.0 and not deadline.expired
    clock.sleep(4.0)
    assert deadline.remaining == 6.0
    deadline.restart()
    assert deadline.remaining == 10.0
    clock.sleep(10.0)
    assert deadline.expired and deadline.remaining == 0.0


def test_wait_for_returns_the_first_value_and_checks_every_interval() -> None:
    clock = FakeClock()
    answers = iter([None, False, None, {"leaders": 6}])
    got = wait_for(
        lambda: next(answers), timeout=5, interval=0.25, what="x", clock=clock, sleep=clock.sleep
    )
    assert got == {"leaders": 6}
    assert clock.slept == [0.25, 0.25, 0.25]


def test_wait_for_raises_at_the_deadline_after_a_last_check() -> None:
    clock = FakeClock()
    checks: list[float] = []

    def never() -> bool:
        checks.append(clock.now)
        return False

    with pytest.raises(DeadlineExceeded, match="topics did not get leaders within 1 s") as info:
        wait_for(
            never,
            timeout=1.0,
            interval=0.3,
            what="topics did not get leaders within 1 s",
            clock=clock,
            sleep=clock.sleep,
        )
    assert isinstance(info.value, OutcomesError) and isinstance(info.value, TimeoutError)
    assert checks[0] == 1000.0 and checks[-1] == pytest.approx(1001.0)  # checked at the deadline
    assert len(checks) == 5  # 0, 0.3, 0.6, 0.9, 1.0


def test_wait_for_message_from_a_function_and_own_error() -> None:
    clock = FakeClock()
    seen: list[int] = []

    def check() -> None:
        seen.append(len(seen))

    class Mine(Exception):
        pass

    with pytest.raises(Mine, match=r"seen 3 states"):
        wait_for(
            check,
            timeout=1.0,
            interval=0.5,
            what=lambda: f"seen {len(seen)} states",
            error=Mine,
            clock=clock,
            sleep=clock.sleep,
        )


def test_wait_for_lets_an_exception_of_the_check_through() -> None:
    def broken() -> None:
        raise RuntimeError("node exited")

    with pytest.raises(RuntimeError, match="node exited"):
        wait_for(broken, timeout=10, what="x", sleep=lambda s: None)


def test_poll_until_answers_whether_the_condition_came_true() -> None:
    clock = FakeClock()
    answers = iter([False, False, True])
    assert poll_until(
        lambda: next(answers), timeout=5, interval=1.0, clock=clock, sleep=clock.sleep
    )
    assert clock.slept == [1.0, 1.0]
    clock = FakeClock()
    assert not poll_until(lambda: False, timeout=2.5, interval=1.0, clock=clock, sleep=clock.sleep)
    assert clock.slept == [1.0, 1.0, 0.5]


class Flaky(Exception):
    pass


def _failing(times: int, error: Exception) -> tuple[list[int], Callable[[], str]]:
    calls: list[int] = []

    def call() -> str:
        calls.append(1)
        if len(calls) <= times:
            raise error
        return "done"

    return calls, call


def test_retry_retries_what_the_predicate_accepts_with_backoff() -> None:
    clock = FakeClock()
    calls, call = _failing(3, Flaky("moving"))
    told: list[Retrying] = []
    got = retry(
        call,
        retry_if=lambda e: isinstance(e, Flaky),
        backoff=Backoff(base=1.0, jitter=False),
        on_retry=told.append,
        clock=clock,
        sleep=clock.sleep,
    )
    assert got == "done" and len(calls) == 4
    assert clock.slept == [1.0, 2.0, 4.0]
    assert [(r.attempt, r.delay) for r in told] == [(1, 1.0), (2, 2.0), (3, 4.0)]


def test_retry_raises_other_exceptions_at_once() -> None:
    clock = FakeClock()
    calls, call = _failing(3, KeyError("bad"))
    with pytest.raises(KeyError):
        retry(call, retry_if=lambda e: isinstance(e, Flaky), clock=clock, sleep=clock.sleep)
    assert len(calls) == 1 and clock.slept == []


def test_retry_gives_up_after_attempts_with_the_last_error() -> None:
    clock = FakeClock()
    calls, call = _failing(10, Flaky("still down"))
    with pytest.raises(Flaky, match="still down"):
        retry(
            call,
            retry_if=lambda e: True,
            attempts=3,
            backoff=Backoff.fixed(0.5),
            clock=clock,
            sleep=clock.sleep,
        )
    assert len(calls) == 3 and clock.slept == [0.5, 0.5]


def test_retry_gives_up_at_the_deadline_after_a_last_attempt() -> None:
    clock = FakeClock()
    calls, call = _failing(100, Flaky("timed out"))
    with pytest.raises(Flaky):
        retry(
            call,
            retry_if=lambda e: True,
            timeout=2.0,
            backoff=Backoff.fixed(0.75),
            clock=clock,
            sleep=clock.sleep,
        )
    assert clock.slept == [0.75, 0.75, 0.5]  # the last sleep ends at the deadline
    assert len(calls) == 4 and clock.now == pytest.approx(1002.0)
    with pytest.raises(ValueError):
        retry(call, retry_if=lambda e: True, attempts=0)
