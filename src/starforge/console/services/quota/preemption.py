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

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .capacity import Demand, Snapshot
from .fairshare import ShareBook

__all__ = ["POLICIES", "Claim", "Preemptor", "Running", "lost_seconds", "why"]

POLICIES = ("priority", "fair-share")
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


class _Freeing:
    """A job whose capacity is being freed, with the slots per series no waiting job counted on yet."""

    __slots__ = ("job", "left")

    def __init__(self, job: Running, left: dict[str, int]) -> None:
        self.job = job
        self.left = left


class Preemptor:
    """The preemption decisions of one scheduling cycle, on its snapshot (`snap`: the free slots, which the cycle's
    placements use up) and its running jobs (`running`)."""

    def __init__(self, snap: Snapshot, running: Iterable[Running], *, policy: str, now: float) -> None:
        if policy not in POLICIES:
            raise ValueError(f"unknown preemption policy {policy!r}")
        self._snap = snap
        self._fair = policy == "fair-share"
        jobs = list(running)
        self._freeing = [_Freeing(job, dict(job.series_gpus)) for job in jobs if job.interrupting]
        # the candidates, least loss first (ties: the most recent attempt, then the id: a stable order)
        self._candidates = sorted((job for job in jobs if not job.interrupting),
                                  key=lambda job: (job.gpus * lost_seconds(job, now), -job.started_at, job.job_id))
        self._taken: set[str] = set()
        self._claimed: defaultdict[str, int] = defaultdict(int)  # free slots counted on by earlier waiting jobs
        self._leaving: defaultdict[tuple[int, str], int] = defaultdict(int)  # GPUs being freed per account
        for job in jobs:
            if job.interrupting:
                for series, count in job.series_gpus.items():
                    self._leaving[(job.user_id, series)] += count
        self._provided: defaultdict[tuple[int, str], int] = defaultdict(int)  # GPUs claimed for accounts' jobs
        self._failed: set[tuple[object, ...]] = set()
        self._version = 0  # moves on every claim

    def consider(self, demand: Demand, book: ShareBook | None) -> Claim | None:
        """Return what `demand`, waiting for capacity, counts on to start — new victims to interrupt and jobs already
        stopping — or None when it needs none (it fits the free slots) or no preemption would let it start (then
        nothing is counted for it)."""
        need = demand.series_gpus
        free = {series: max(0, self._snap.capacity.get(series, 0) - self._snap.used.get(series, 0)
                            - self._claimed[series]) for series in need}
        short = {series: count - free[series] for series, count in need.items() if count > free[series]}
        if not short:
            return None
        within = self._fair and book is not None and self._within(demand, book)
        memo = (demand.user_id if within else None, demand.priority, tuple(sorted(need.items())), self._version,
                book.version if within and book is not None else 0)
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
        """Return whether the account stays within its share of every series of the job once it takes it."""
        user = demand.user_id
        return all(book.allocation(user, series) + self._provided[(user, series)] + count
                   <= book.share(user, series) + _SLACK for series, count in demand.series_gpus.items())

    def _count_freeing(self, short: dict[str, int]) -> list[tuple[_Freeing, dict[str, int]]]:
        """Count the capacity already being freed against `short` (reduced in place); return what it takes."""
        taken: list[tuple[_Freeing, dict[str, int]]] = []
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

    def _eligible(self, demand: Demand, job: Running, book: ShareBook | None,
                  leaving: Mapping[tuple[int, str], int]) -> bool:
        if job.priority < demand.priority:
            return True
        if book is None or job.user_id == demand.user_id:
            return False
        user = job.user_id
        return all(book.allocation(user, series) - leaving.get((user, series), 0) - count
                   >= book.share(user, series) - _SLACK for series, count in job.series_gpus.items())

    def _choose(self, demand: Demand, book: ShareBook | None, short: dict[str, int]) -> list[Running]:
        """Return the fewest-loss victims covering `short` (none when they cannot): greedy by loss, then each one
        not needed dropped, the costliest first."""
        left = dict(short)
        leaving = dict(self._leaving)
        chosen: list[Running] = []
        for job in self._candidates:
            if job.job_id in self._taken or not any(left.get(series, 0) > 0 for series in job.series_gpus):
                continue
            if not self._eligible(demand, job, book, leaving):
                continue
            chosen.append(job)
            for series, count in job.series_gpus.items():
                leaving[(job.user_id, series)] = leaving.get((job.user_id, series), 0) + count
                if left.get(series, 0) > 0:
                    left[series] -= count
            if all(count <= 0 for count in left.values()):
                break
        else:
            return []
        for job in reversed(chosen[:-1]):  # the last one was needed to cover the rest
            rest = [other for other in chosen if other is not job]
            if all(sum(other.series_gpus.get(series, 0) for other in rest) >= count for series, count in short.items()):
                chosen = rest
        return chosen

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
                need[series] -= count
        for job in victims:
            self._taken.add(job.job_id)
            left = {}
            for series, count in job.series_gpus.items():
                used = min(count, need.get(series, 0))
                if used:
                    need[series] -= used
                left[series] = count - used
                self._leaving[(job.user_id, series)] += count
            if any(left.values()):
                self._freeing.append(_Freeing(job, left))
        for series, count in demand.series_gpus.items():
            self._provided[(demand.user_id, series)] += count
        self._version += 1
