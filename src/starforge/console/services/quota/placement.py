"""One placement pass over the waiting jobs, pure: the order they are served in, and for each the verdict of
`capacity.place` — or, for a job waiting for capacity while preemption is on, the running jobs it preempts.

The order: first the jobs already waiting for jobs they preempted (so the capacity those free goes to them), in
the order given; then the rest, in fair order (`fairshare.fair_order`) when a share book is given, else in the
order given (the queue order: priority, then submission time). The snapshot is made `positional`: a job waiting
for capacity holds back every later job on its series. The scheduler's place phase runs this pass on what it read
from the store, and `bench/fair_share.py` on a simulated deployment.

Tier: shared (pure: decides on the snapshot, the book and the records its caller read).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from typing import NamedTuple

from .capacity import Demand, Fit, Snapshot, place
from .fairshare import ShareBook, fair_order
from .preemption import Claim, Preemptor

__all__ = ["PREEMPTED_WAIT", "Decision", "decide_queue", "preempted_wait", "waits_for_preempted"]

PREEMPTED_WAIT = "preempted job(s) to checkpoint and stop"  # the end of the reason of a job that waits for them


def preempted_wait(count: int) -> str:
    """Return the reason of a job that waits for `count` preempted jobs to stop."""
    return f"waiting for {count} {PREEMPTED_WAIT}"


def waits_for_preempted(reason: str) -> bool:
    """Return whether a waiting job's reason says it waits for jobs it preempted."""
    return reason.endswith(PREEMPTED_WAIT)


class Decision(NamedTuple):
    """The verdict of one waiting job: placed (`FITS`) or why it waits, and what it counts on when it waits for
    preempted jobs (`claim`; None otherwise)."""

    demand: Demand
    fit: Fit
    reason: str
    claim: Claim | None = None


_CAPACITY = (Fit.CAPACITY_BUSY, Fit.BEHIND_QUEUE)


def decide_queue(snap: Snapshot, waiting: Sequence[Demand], *, book: ShareBook | None = None, fair: bool = False,
                 preemptor: Preemptor | None = None, first: Collection[str] = (),
                 held: Callable[[Demand], tuple[Fit, str] | None] | None = None,
                 placed: Callable[[Demand], None] | None = None) -> Iterator[Decision]:
    """Yield the verdict of every job of `waiting` (given in queue order), in the order they are served.

    `fair`: serve the rest in fair order on `book` (which must be given; a book without `fair` only informs
    preemption's fair-share rule). `first`: ids of jobs waiting for jobs they preempted. `held`: the caller's own
    hold (the daily budget), asked before the capacity; `placed`: told of each placement before the next job is
    decided. Every placement is assumed in `snap` and `book`."""
    if fair and book is None:
        raise ValueError("a fair order needs a share book")
    snap.positional = True
    ahead = [demand for demand in waiting if demand.job_id in first] if first else []
    rest = [demand for demand in waiting if demand.job_id not in first] if first else waiting
    order = fair_order(rest, book) if fair and book is not None else iter(rest)
    for queue in (iter(ahead), order):
        for demand in queue:
            verdict = held(demand) if held is not None else None
            if verdict is not None:
                yield Decision(demand, *verdict)
                continue
            fit, reason = place(snap, demand)
            if fit is Fit.FITS:
                if book is not None:
                    book.assume(demand.user_id, demand.series_gpus)
                if placed is not None:
                    placed(demand)
                yield Decision(demand, fit, reason)
                continue
            claim = preemptor.consider(demand, book) if preemptor is not None and fit in _CAPACITY else None
            if claim is not None:
                yield Decision(demand, fit, preempted_wait(claim.waits_for), claim)
            else:
                yield Decision(demand, fit, reason)
