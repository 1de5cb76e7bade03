"""Per-client limits held in this process's memory: a rate (a token bucket) and a backoff after failures, each
refusing with `TooManyRequests` and the seconds to wait.

Tier: shared (no database, no HTTP). The key is whatever the caller names, the console uses the connection's peer
address; the state lives in this process's memory, or, for a console run as several worker processes, in a file they
all share (`throttle_keys`), so that a client meets one limit whichever worker answers it. The clock is
injected (`time.monotonic` by default), so tests move time instead of sleeping. At most `MAX_KEYS` keys are kept:
when full, idle keys go first, then the oldest.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .errors import AuthRequired, NotFound, TooManyRequests
from .throttle_keys import KeyTable, MemoryKeys, SharedKeys

__all__ = ["MAX_KEYS", "Backoff", "Clock", "FailureBackoff", "Limits", "Rate", "RateLimiter", "Throttles"]

Clock = Callable[[], float]
MAX_KEYS = 10_000


@dataclass(frozen=True)
class Rate:
    """At most `events` at once, refilled evenly over `seconds`.

    `Rate(20, 60.0)`: twenty in a burst, then one every three seconds."""

    events: int = 20
    seconds: float = 60.0


@dataclass(frozen=True)
class Backoff:
    """After `free` failures, each further one makes the client wait `first` seconds, times `factor` per failure, at
    most `ceiling`; a client quiet for `forget` seconds starts afresh. A success forgets nothing (an account of one's
    own must not buy more guesses).

    `Backoff()`: ten failures free, then 1 s, 2 s, 4 s … up to 5 minutes between tries."""

    free: int = 10
    first: float = 1.0
    factor: float = 2.0
    ceiling: float = 300.0
    forget: float = 900.0

    def wait_after(self, failures: int) -> float:
        """Return the seconds a client must wait after its `failures`-th failure (0 while still free)."""
        if failures <= self.free:
            return 0.0
        return float(min(self.ceiling, self.first * self.factor ** min(failures - self.free - 1, 64)))


@dataclass(frozen=True)
class Limits:
    """The limits of the anonymous and sign-in surfaces, per client address: starting device logins (a rate, and how
    many unexpired pending ones an address may hold), signing in on the web page, and looking up user codes."""

    device_codes: Rate = field(default_factory=Rate)
    pending_device_codes: int = 20
    sign_in: Backoff = field(default_factory=Backoff)
    user_codes: Backoff = field(default_factory=Backoff)


def _seconds(wait: float) -> int:
    return max(1, math.ceil(wait))


class _Keys:
    """A bounded table of per-key state (`throttle_keys`), read and written under its lock."""

    def __init__(self, clock: Clock, table: KeyTable | None) -> None:
        self.clock = clock
        self.table: KeyTable = table if table is not None else MemoryKeys()

    def make_room(self, idle: Callable[[list[float], float], bool], now: float) -> None:
        if self.table.count() < MAX_KEYS:
            return
        entries = self.table.entries()  # oldest first
        stale = [key for key, values in entries if idle(values, now)]
        busy = [key for key, values in entries if not idle(values, now)]
        for key in stale + busy[:max(0, len(busy) - MAX_KEYS + 1)]:  # idle keys first, then the oldest until room
            self.table.drop(key)


class RateLimiter:
    """Allow each key `rate.events` at once, refilled over `rate.seconds`; `what` names them in the refusal."""

    def __init__(self, rate: Rate, *, what: str, clock: Clock = time.monotonic, table: KeyTable | None = None) -> None:
        self.rate = rate
        self._what = what
        self._keys = _Keys(clock, table)

    def take(self, key: str) -> None:
        """Count one event for `key`, or raise TooManyRequests with the seconds until the next is allowed."""
        per_event = self.rate.seconds / max(1, self.rate.events)
        with self._keys.table.locked():
            now = self._keys.clock()
            tokens, then = self._keys.table.get(key) or (float(self.rate.events), now)
            tokens = min(float(self.rate.events), tokens + (now - then) / per_event)
            if tokens < 1.0:
                self._keys.table.put(key, [tokens, now])
                wait = (1.0 - tokens) * per_event
                raise TooManyRequests(f"too many {self._what} from this address: try again in {_seconds(wait)} s",
                                      retry_after=_seconds(wait))
            self._keys.make_room(lambda v, t: v[0] + (t - v[1]) / per_event >= self.rate.events, now)
            self._keys.table.put(key, [tokens - 1.0, now])


class FailureBackoff:
    """Make a key that keeps failing wait longer and longer (`Backoff`); `what` names the failures in the refusal.

    Use `attempt(key)` around the work: it refuses while the key must wait, and counts an AuthRequired or NotFound
    raised inside as a failure."""

    def __init__(self, backoff: Backoff, *, what: str, clock: Clock = time.monotonic,
                 table: KeyTable | None = None) -> None:
        self.backoff = backoff
        self._what = what
        self._keys = _Keys(clock, table)

    def check(self, key: str) -> None:
        """Raise TooManyRequests while `key` must wait after its failures."""
        with self._keys.table.locked():
            now = self._keys.clock()
            found = self._keys.table.get(key)
            if found is None:
                return
            _failures, last, until = found
            if now - last > self.backoff.forget:
                self._keys.table.drop(key)
            elif now < until:
                wait = _seconds(until - now)
                raise TooManyRequests(f"too many {self._what} from this address: try again in {wait} s",
                                      retry_after=wait)

    def failed(self, key: str) -> None:
        """Count one failure for `key`; past the free ones, the key must wait before its next try."""
        with self._keys.table.locked():
            now = self._keys.clock()
            failures, last, _until = self._keys.table.get(key) or (0.0, now, now)
            if now - last > self.backoff.forget:
                failures = 0.0
            failures += 1
            self._keys.make_room(lambda v, t: t - v[1] > self.backoff.forget, now)
            self._keys.table.put(key, [failures, now, now + self.backoff.wait_after(int(failures))])

    @contextmanager
    def attempt(self, key: str) -> Iterator[None]:
        """Refuse while `key` must wait; count an AuthRequired or NotFound raised inside as its failure."""
        self.check(key)
        try:
            yield
        except (AuthRequired, NotFound):
            self.failed(key)
            raise


class Throttles:
    """The console's limiters, built once per process from `Limits` (see there) and a clock; with `shared` (a file
    `throttle_keys.SharedKeys.reset` made) every process that opens the same file counts in one table."""

    def __init__(self, limits: Limits | None = None, *, clock: Clock = time.monotonic,
                 shared: Path | None = None) -> None:
        self.limits = limits or Limits()

        def table(kind: str) -> KeyTable | None:
            return SharedKeys(shared, kind) if shared is not None else None

        self.device_codes = RateLimiter(self.limits.device_codes, what="device logins started", clock=clock,
                                        table=table("device_codes"))
        self.sign_in = FailureBackoff(self.limits.sign_in, what="failed sign-ins", clock=clock, table=table("sign_in"))
        self.user_codes = FailureBackoff(self.limits.user_codes, what="unknown login codes", clock=clock,
                                         table=table("user_codes"))
