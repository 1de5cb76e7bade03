"""Fair share, pure: decayed usage, each account's share of a series, and the fair order of the waiting jobs.

Fair share is per account. An account's usage of a series is its decayed GPU-seconds there (halved every
half-life) plus what its running attempts have used so far; its share of a series is the series' capacity × its
weight / Σ weights of the accounts with demand (running or waiting jobs) there, and what it holds beyond its share
is borrowed. Waiting jobs are served, one at a time, in the order of (1) their account's usage / weight on the
job's series, (2) its allocation (GPUs held now, counting this cycle's placements) / weight, so that one cycle
interleaves accounts, (3) the job's place in the queue order it was given (priority, then submission time); the
account just served is keyed again before the next job is chosen.

Tier: shared (pure: decides on values its caller read; `shares` reads them from the store).
"""

from __future__ import annotations

import heapq
from collections import defaultdict, deque
from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import Protocol, TypeVar

__all__ = ["Queued", "ShareBook", "decayed", "fair_order"]


def decayed(value: float, since: float, now: float, half_life: float) -> float:
    """Return `value`, measured at `since`, decayed to `now` (halved every `half_life` seconds; never grown)."""
    if now <= since or half_life <= 0:
        return value
    return float(value * 0.5 ** ((now - since) / half_life))


class Queued(Protocol):
    """What the fair order reads of a waiting job (a `capacity.Demand` is one)."""

    @property
    def user_id(self) -> int: ...
    @property
    def series_gpus(self) -> Mapping[str, int]: ...


J = TypeVar("J", bound=Queued)


class ShareBook:
    """Weights, usage and allocation of the accounts, per series, as of one scheduling cycle.

    `usage` and `allocation` are keyed by (account, series); `demand` names, per series, the accounts with a
    running or waiting job there (who divides it); an account without a weight has `default_weight`."""

    def __init__(self, *, weights: Mapping[int, float], default_weight: float,
                 usage: Mapping[tuple[int, str], float], allocation: Mapping[tuple[int, str], int],
                 capacity: Mapping[str, int], demand: Mapping[str, Collection[int]]) -> None:
        self._weights = dict(weights)
        self._default = default_weight
        self._usage: dict[tuple[int, str], float] = dict(usage)
        self._allocation: defaultdict[tuple[int, str], int] = defaultdict(int, allocation)
        self._capacity = dict(capacity)
        self._demand: dict[str, set[int]] = {series: set(users) for series, users in demand.items()}
        self._total = {series: sum(map(self.weight, users)) for series, users in self._demand.items()}
        self._shares: dict[tuple[int, str], float] = {}  # computed shares, until the accounts with demand change
        self.version = 0  # moves on every `assume`: what was decided on the book before may differ now

    def weight(self, user_id: int) -> float:
        """Return the account's weight."""
        return self._weights.get(user_id, self._default)

    def usage(self, user_id: int, series: str) -> float:
        """Return the account's decayed GPU-seconds on `series` (running attempts included)."""
        return self._usage.get((user_id, series), 0.0)

    def allocation(self, user_id: int, series: str) -> int:
        """Return the GPUs the account holds on `series` now (this cycle's placements included)."""
        return self._allocation.get((user_id, series), 0)

    def key(self, user_id: int, series_gpus: Mapping[str, int]) -> tuple[float, float]:
        """Return the fair-order key of a job of the account on `series_gpus`: (Σ usage, Σ allocation) / weight over
        the job's series; lower is served first."""
        weight = self.weight(user_id)
        usage = allocation = 0.0
        for series in series_gpus:
            usage += self._usage.get((user_id, series), 0.0)
            allocation += self._allocation.get((user_id, series), 0)
        return usage / weight, allocation / weight

    def share(self, user_id: int, series: str) -> float:
        """Return the slots of `series` the account is entitled to: capacity × weight / Σ weights of the accounts
        with demand there (its own counted even when it has none: what it would get if it asked)."""
        found = self._shares.get((user_id, series))
        if found is None:
            weight = self.weight(user_id)
            total = self._total.get(series, 0.0)
            if user_id not in self._demand.get(series, ()):
                total += weight
            found = self._shares[(user_id, series)] = self._capacity.get(series, 0) * weight / total if total else 0.0
        return found

    def borrowed(self, user_id: int, series: str) -> float:
        """Return the GPUs the account holds on `series` beyond its share (0 when within it)."""
        return max(0.0, self.allocation(user_id, series) - self.share(user_id, series))

    def assume(self, user_id: int, series_gpus: Mapping[str, int]) -> None:
        """Count a placement of this cycle: the account's allocation grows by the job's GPUs on each series."""
        for series, count in series_gpus.items():
            self._allocation[(user_id, series)] += count
            users = self._demand.setdefault(series, set())
            if user_id not in users:
                users.add(user_id)
                self._total[series] = self._total.get(series, 0.0) + self.weight(user_id)
                self._shares.clear()
        self.version += 1


def fair_order(waiting: Iterable[J], book: ShareBook) -> Iterator[J]:
    """Yield the waiting jobs (given in queue order) in fair order: each time the job of the account with the
    lowest key, that account's jobs in their given order; an account is keyed again after the caller acted on the
    job just yielded (placed it and told the book with `assume`, or not). O(n log accounts)."""
    queues: dict[int, deque[tuple[int, J]]] = {}
    for position, job in enumerate(waiting):
        queue = queues.get(job.user_id)
        if queue is None:
            queue = queues[job.user_id] = deque()
        queue.append((position, job))
    heap = [(*book.key(user_id, queue[0][1].series_gpus), queue[0][0], user_id) for user_id, queue in queues.items()]
    heapq.heapify(heap)
    while heap:
        usage, allocation, _position, user_id = heap[0]
        queue = queues[user_id]
        job = queue.popleft()[1]
        version = book.version
        yield job
        if not queue:
            heapq.heappop(heap)
            continue
        position, head = queue[0]
        if book.version == version and (head.series_gpus is job.series_gpus
                                        or head.series_gpus.keys() == job.series_gpus.keys()):
            heapq.heapreplace(heap, (usage, allocation, position, user_id))  # nothing was placed: the same key
        else:
            heapq.heapreplace(heap, (*book.key(user_id, head.series_gpus), position, user_id))
