"""Preemption, pure: which running jobs a job waiting for capacity may ask to checkpoint and stop, chosen once per
scheduling cycle on its snapshot.

Rules (`preemption.policy`):
- `priority`: a running job of a lower priority than the waiting one may be preempted;
- `fair-share`: also a job of another account that holds more than its share of the job's series, when the
  waiting job's account stays within its share after taking the job (its placed, running and already-provided-for
  jobs counted), and never so many that the victim's account would fall below its share.
What a job may count on, in this order: the free slots no earlier job of the cycle counted on; the capacity that
jobs already interrupting (preempted or paused) are freeing, shared in the order the jobs are considered; then new
victims, chosen to lose the fewest GPU-seconds (GPUs × the time since the later of the attempt's start and its
last checkpoint): taken greedily by that loss, then each one not needed dropped. A job that would still not fit
gets none; a victim is chosen once. Only a job whose verdict was `CAPACITY_BUSY` or `BEHIND_QUEUE` is considered
(the caller's rule: a job held by a quota or a series without capacity would not start however much is freed).

Tier: shared (pure: decides on the snapshot and the records its caller read).
"""

from __future__ import annotations

import heapq
from collections import defaultdict, deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .capacity import Demand, Snapshot
from .fairshare import ShareBook

__all__ = ["POLICIES", "Claim", "Preemptor", "Running", "lost_seconds", "why"]

POLICIES = ("priority", "fair-share")
_NEVER = 2**63
_SLACK = 1e-9  # slots: rounding never makes an exact share a borrowed one


@dataclass(frozen=True)
class Running:
    """A running job as preemption sees it: its account, priority, GPUs (in all and per series), when its current
    attempt started, its latest checkpoint's time (None: none yet), and whether it is already asked to stop."""

    job_id: str
    user_id: int
    priority: int
    gpus: int
    series_gpus: Mapping[str, int]
    started_at: float
    checkpoint_at: float | None = None
    interrupting: bool = False


def lost_seconds(job: Running, now: float) -> float:
    """Return the seconds of work the job would lose if it stopped now: since its last checkpoint of this attempt,
    or since the attempt started."""
    since = job.started_at if job.checkpoint_at is None else max(job.started_at, job.checkpoint_at)
    return max(0.0, now - since)


@dataclass(frozen=True)
class Claim:
    """What a waiting job counts on: the new victims it preempts (the caller interrupts them) and the jobs already
    interrupting whose capacity it takes."""

    victims: tuple[Running, ...] = ()
    freeing: tuple[Running, ...] = ()

    @property
    def waits_for(self) -> int:
        """Return how many stopping jobs the waiting one waits for."""
        return len(self.victims) + len(self.freeing)


def why(demand: Demand, victim: Running) -> str:
    """Return why `victim` is preempted for `demand` (the rule that made it one)."""
    if victim.priority < demand.priority:
        return f"priority {demand.priority} > {victim.priority}"
    return "its account is within its share; this one borrows"


def _may_go(job: Running, priority: int, room: Mapping[int, Mapping[str, float]],
            spent: Mapping[tuple[int, str], int], left: Mapping[str, int]) -> bool:
    """Return whether `job` still helps cover `left` and may be preempted: a lower priority, or its account keeps
    its share without it (`room`: the GPUs each account above its share may give; `spent`: what is taken already)."""
    for series in job.series_gpus:  # plain loops: called for every candidate looked at
        if left.get(series, 0) > 0:
            break
    else:
        return False
    if job.priority < priority:
        return True
    margin = room.get(job.user_id)
    if margin is None:
        return False
    user = job.user_id
    for series, count in job.series_gpus.items():
        if count > margin.get(series, 0) - spent.get((user, series), 0):
            return False
    return True


class _Freeing:
    """A job whose capacity is being freed, with the slots per series no waiting job counted on yet."""

    __slots__ = ("job", "left")

    def __init__(self, job: Running, left: dict[str, int]) -> None:
        self.job = job
        self.left = left


class Preemptor:
    """The preemption decisions of one scheduling cycle, on its snapshot (`snap`: the free slots, which the cycle's
    placements use up) and its running jobs (`running`).

    Built for a queue of 10,000: each account's candidates are kept in their own list, cheapest first, and merged
    per decision, so a decision costs about its victims and the accounts that may give some, not every running job;
    a decision that found no victims is not searched again until a claim or a placement changes what it saw."""

    def __init__(self, snap: Snapshot, running: Iterable[Running], *, policy: str, now: float) -> None:
        if policy not in POLICIES:
            raise ValueError(f"unknown preemption policy {policy!r}")
        self._snap = snap
        self._fair = policy == "fair-share"
        jobs = list(running)
        self._freeing: deque[_Freeing] = deque()
        self._pending: defaultdict[str, int] = defaultdict(int)  # slots being freed that nobody counted on yet
        self._leaving: defaultdict[tuple[int, str], int] = defaultdict(int)  # GPUs being freed, per account
        for job in jobs:
            if job.interrupting:
                self._add_freeing(job, dict(job.series_gpus))
                for series, count in job.series_gpus.items():
                    self._leaving[(job.user_id, series)] += count
        self._loss = {job.job_id: job.gpus * lost_seconds(job, now) for job in jobs}
        # the candidates of each account, least loss first (ties: the most recent attempt, then the id)
        self._of: dict[int, list[Running]] = {}
        for job in sorted((job for job in jobs if not job.interrupting),
                          key=lambda job: (self._loss[job.job_id], -job.started_at, job.job_id)):
            self._of.setdefault(job.user_id, []).append(job)
        self._skip = dict.fromkeys(self._of, 0)  # per account: how many of its first candidates are taken
        self._lowest = {user: min(job.priority for job in of) for user, of in self._of.items()}
        self._by_lowest = sorted((lowest, user) for user, lowest in self._lowest.items())
        self._series_of = {user: {series for job in of for series in job.series_gpus} for user, of in self._of.items()}
        self._givers: dict[int, dict[str, float]] = {}  # accounts above their share: the GPUs that may leave
        self._givers_of: tuple[int, int] | None = None  # (id, version) of the book they were found on
        self._taken: set[str] = set()
        self._claimed: defaultdict[str, int] = defaultdict(int)  # free slots counted on by earlier waiting jobs
        self._provided: defaultdict[tuple[int, str], int] = defaultdict(int)  # GPUs counted on for accounts' jobs
        self._failed: set[tuple[object, ...]] = set()
        self._hopeless: dict[tuple[object, ...], int] = {}  # a job shape found hopeless -> the claims' version then
        self._over: dict[tuple[int, str], int] = {}  # (account, series) -> the fewest GPUs found beyond its share
        self._version = 0  # moves on every claim

    def consider(self, demand: Demand, book: ShareBook | None) -> Claim | None:
        """Return what `demand`, waiting for capacity, counts on to start — new victims to interrupt and jobs already
        stopping — or None when it needs none (it fits the free slots) or no preemption would let it start (then
        nothing is counted for it)."""
        need = demand.series_gpus
        shape = (demand.user_id, demand.priority, tuple(need.items()))
        if self._hopeless.get(shape) == self._version:
            return None  # as hopeless as the same account's job of the same shape was, nothing claimed since
        capacity, used, claimed = self._snap.capacity, self._snap.used, self._claimed
        free: dict[str, int] = {}
        short: dict[str, int] = {}
        for series, count in need.items():
            free[series] = slots = max(0, capacity.get(series, 0) - used.get(series, 0) - claimed.get(series, 0))
            if count > slots:
                short[series] = count - slots
        if not short:
            return None
        within = self._fair and book is not None and self._within(demand, book)
        if not within and (not self._by_lowest or self._by_lowest[0][0] >= demand.priority):
            pending = self._pending
            for series, count in short.items():
                if pending.get(series, 0) < count:
                    # what is being freed is not enough, and no running job may go for it: it stays so for such a
                    # job of this account until a claim adds to what is being freed (free slots and shares only
                    # shrink, allocations only grow within a cycle)
                    self._hopeless[shape] = self._version
                    return None
        memo = (shape, within, self._version, book.version if within and book is not None else 0)
        if memo in self._failed:
            return None
        freeing = self._count_freeing(short)
        victims: list[Running] = []
        if short:
            victims = self._choose(demand, book if within else None, short)
            if not victims:
                self._failed.add(memo)
                return None
        self._commit(demand, free, freeing, victims)
        return Claim(tuple(victims), tuple(entry.job for entry, _ in freeing))

    def _within(self, demand: Demand, book: ShareBook) -> bool:
        """Return whether the account stays within its share of every series of the job once it takes it.

        Within a cycle an account's allocation and what is counted on for it only grow, and shares only shrink, so
        a job of GPUs that did not fit its account's share is remembered: no larger one will."""
        user = demand.user_id
        over = self._over
        for series, count in demand.series_gpus.items():
            key = (user, series)
            if count >= over.get(key, _NEVER):
                return False
            if book.allocation(user, series) + self._provided.get(key, 0) + count > book.share(user, series) + _SLACK:
                over[key] = count
                return False
        return True

    def _add_freeing(self, job: Running, left: dict[str, int]) -> None:
        self._freeing.append(_Freeing(job, left))
        for series, count in left.items():
            self._pending[series] += count

    def _count_freeing(self, short: dict[str, int]) -> list[tuple[_Freeing, dict[str, int]]]:
        """Count the capacity already being freed against `short` (reduced in place); return what it takes."""
        taken: list[tuple[_Freeing, dict[str, int]]] = []
        if not any(self._pending.get(series, 0) for series in short):
            return taken
        for entry in self._freeing:
            take = {series: min(left, short[series]) for series, left in entry.left.items()
                    if left > 0 and short.get(series, 0) > 0}
            if not take:
                continue
            taken.append((entry, take))
            for series, count in take.items():
                short[series] -= count
                if not short[series]:
                    del short[series]
            if not short:
                break
        return taken

    def _room(self, book: ShareBook) -> dict[int, dict[str, float]]:
        """Return, per account above its share of a series it has candidates on, the GPUs that may leave there
        (its jobs already leaving deducted), found again when the book changed since."""
        if self._givers_of != (id(book), book.version):
            leaving = self._leaving
            self._givers = {}
            for user, series_of in self._series_of.items():
                room = {series: book.allocation(user, series) - leaving.get((user, series), 0)
                        - book.share(user, series) + _SLACK for series in series_of}
                if max(room.values()) >= 1:
                    self._givers[user] = room
            self._givers_of = (id(book), book.version)
        return self._givers

    def _choose(self, demand: Demand, book: ShareBook | None, short: dict[str, int]) -> list[Running]:
        """Return the fewest-loss victims covering `short` (none when they cannot): greedy by loss, then each one
        not needed dropped, the costliest first. With `book` (the job's account is within its share), jobs of
        accounts above their share may go as far as their share; else only jobs of a lower priority."""
        priority = demand.priority
        users: set[int] = set()
        if self._by_lowest and self._by_lowest[0][0] < priority:
            users.update(user for lowest, user in self._by_lowest if lowest < priority)
        room: dict[int, dict[str, float]] = {}
        if book is not None:
            room = self._room(book)
            users.update(user for user in room if user != demand.user_id)
        spent: dict[tuple[int, str], int] = {}  # what this choice already takes of each account's room
        left = dict(short)
        heads = []
        for user in users:
            found = self._next(user, self._skip[user], priority, room, spent, left)
            if found is not None:
                heads.append(found)
        heapq.heapify(heads)
        chosen: list[Running] = []
        while heads:
            _loss, user, position = heads[0]
            job = self._of[user][position]
            if _may_go(job, priority, room, spent, left):
                chosen.append(job)
                for series, count in job.series_gpus.items():
                    spent[(user, series)] = spent.get((user, series), 0) + count
                    if series in left:
                        left[series] -= count
                if max(left.values()) <= 0:
                    break
            found = self._next(user, position + 1, priority, room, spent, left)
            if found is None:
                heapq.heappop(heads)
            else:
                heapq.heapreplace(heads, found)
        else:
            return []
        if len(chosen) > 1:
            for job in reversed(chosen[:-1]):  # the last one was needed to cover the rest
                rest = [other for other in chosen if other is not job]
                if all(sum(other.series_gpus.get(series, 0) for other in rest) >= count
                       for series, count in short.items()):
                    chosen = rest
        return chosen

    def _next(self, user: int, start: int, priority: int, room: Mapping[int, Mapping[str, float]],
              spent: Mapping[tuple[int, str], int], left: Mapping[str, int]) -> tuple[float, int, int] | None:
        """Return the heap entry (loss, account, position) of the account's cheapest candidate from `start` on
        that is not taken and may go, or None."""
        if priority <= self._lowest[user] and user not in room:
            return None  # no job of a lower priority, and at its share already
        jobs, taken = self._of[user], self._taken
        for position in range(start, len(jobs)):
            job = jobs[position]
            if job.job_id not in taken and _may_go(job, priority, room, spent, left):
                return self._loss[job.job_id], user, position
        return None

    def _commit(self, demand: Demand, free: Mapping[str, int], freeing: list[tuple[_Freeing, dict[str, int]]],
                victims: list[Running]) -> None:
        """Book what the job counts on: its free slots, its part of the capacity being freed, its victims (what a
        victim frees beyond the job's need is left for the next waiting jobs)."""
        need = dict(demand.series_gpus)
        for series, count in need.items():
            self._claimed[series] += min(count, free[series])
            need[series] = max(0, count - free[series])
        for entry, take in freeing:
            for series, count in take.items():
                entry.left[series] -= count
                self._pending[series] -= count
                need[series] -= count
        for job in victims:
            user = job.user_id
            self._taken.add(job.job_id)
            of, skip = self._of[user], self._skip[user]
            while skip < len(of) and of[skip].job_id in self._taken:
                skip += 1
            self._skip[user] = skip
            left = {}
            room = self._givers.get(user)
            for series, count in job.series_gpus.items():
                used = min(count, need.get(series, 0))
                if used:
                    need[series] -= used
                left[series] = count - used
                self._leaving[(user, series)] += count
                if room is not None and series in room:
                    room[series] -= count
            if room is not None and max(room.values()) < 1:
                del self._givers[user]
            if any(left.values()):
                self._add_freeing(job, left)
        while self._freeing and not any(self._freeing[0].left.values()):
            self._freeing.popleft()  # used up: no later job need look at it
        for series, count in demand.series_gpus.items():
            self._provided[(demand.user_id, series)] += count
        self._version += 1
