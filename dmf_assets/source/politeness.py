"""How fast we may ask: spacing between requests, adaptive slow-down, backoff with jitter, Retry-After — and the
clock the fetch reads and waits on (`monotonic`, `sleep`), which tests replace with a fake one (`fake_clock`)."""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from types import ModuleType

from dmf_assets.source.endpoint import Endpoint

SLOW_ANSWER_S = 5.0  # an answer slower than this (or than half the read timeout) slows us down
SPACING_CAP_S = 30.0
# Against a local endpoint (in process or loopback; base spacing 0) answers normally take
# milliseconds: half a second is already slow, and the slow-down only needs to show, not to protect anyone.
LOCAL_SLOW_ANSWER_S = 0.5
LOCAL_SLOWDOWN_STEP_S = 0.1
LOCAL_SPACING_CAP_S = 1.0


class FakeClock:
    """Tests: time that moves only when someone waits — a wait passes at once and moves the clock by exactly that
    much, so spacing, pauses, backoffs and Retry-After are exact and cost no time, whatever the machine's load."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start
        self.sleeps: list[float] = []  # every wait, in order
        self._lock = threading.Lock()  # the fetch waits in its own thread and in its request's

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.sleeps.append(seconds)
            self.now += max(seconds, 0.0)


#: the fetch's time — seconds on a monotonic clock, and waiting them out: the `time` module's, or a test's FakeClock
_clock: FakeClock | ModuleType = time


def monotonic() -> float:
    """Now, in seconds, on the fetch's clock (the real one unless a test put a fake one in its place)."""
    return _clock.monotonic()


def sleep(seconds: float) -> None:
    """Wait `seconds` on the fetch's clock."""
    _clock.sleep(seconds)


@contextlib.contextmanager
def fake_clock(start: float = 0.0) -> Iterator[FakeClock]:
    """Tests: the fetch and the in-process emulator read and wait on a `FakeClock` meanwhile (like `clock.frozen_at`
    for the date). Nothing outside tests sets it."""
    global _clock
    previous, _clock = _clock, FakeClock(start)
    try:
        yield _clock
    finally:
        _clock = previous


@dataclass
class Politeness:
    """When the next request may start.

    Two rules: a fixed minimum interval between request starts (`base_s`, 0 for a local endpoint), and
    an adaptive pause after each answer — 0 normally, doubled (from `step_s`, up to `cap_s`) after
    a slow or non-200 answer, halved after each good one. A pause after the answer (not between
    starts) is what actually gives a struggling server room: a slow answer already used up any
    start-to-start interval.
    """

    base_s: float
    step_s: float
    slow_s: float
    cap_s: float = SPACING_CAP_S
    pause_s: float = 0.0
    slowdowns: int = 0
    max_pause_s: float = 0.0
    _last_start: float | None = None
    _last_end: float | None = None

    def wait_s(self, now: float) -> float:
        wait = 0.0
        if self._last_start is not None:
            wait = max(wait, self._last_start + self.base_s - now)
        if self._last_end is not None:
            wait = max(wait, self._last_end + self.pause_s - now)
        return wait

    def mark_start(self, now: float) -> None:
        self._last_start = now

    def observe(self, elapsed_s: float, ok: bool, now: float | None = None) -> bool:
        """Adapt to one answer (ended at `now`); returns True when it slowed us down."""
        self._last_end = monotonic() if now is None else now
        if elapsed_s > self.slow_s or not ok:
            self.pause_s = min(self.cap_s, max(self.pause_s * 2, self.step_s))
            self.slowdowns += 1
            self.max_pause_s = max(self.max_pause_s, self.pause_s)
            return True
        self.pause_s = self.pause_s / 2 if self.pause_s / 2 >= self.step_s else 0.0
        return False


def politeness_for(endpoint: Endpoint, *, min_interval_s: float, read_timeout_s: float) -> Politeness:
    half_timeout = read_timeout_s / 2
    if endpoint.local:
        return Politeness(
            base_s=0.0,
            step_s=LOCAL_SLOWDOWN_STEP_S,
            cap_s=LOCAL_SPACING_CAP_S,
            slow_s=min(LOCAL_SLOW_ANSWER_S, half_timeout),
        )
    base = max(0.0, min_interval_s)
    return Politeness(base_s=base, step_s=max(base, 1.0), slow_s=min(SLOW_ANSWER_S, half_timeout))


def backoff_s(attempt: int, base_s: float, cap_s: float, rng: random.Random) -> float:
    """Full jitter: uniform(0, min(cap, base * 2**attempt)); `attempt` = attempts made so far."""
    return rng.uniform(0.0, min(cap_s, base_s * (2**attempt)))


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Retry-After as seconds: delta-seconds or an HTTP date. None if absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():  # str.isdigit() also takes '²', which float() refuses
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())
