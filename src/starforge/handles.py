"""Which job a handle names (wire-protocol §8.1): the one rule `sf`, the SDK and MCP share.

Among the caller's jobs, listed newest first: an exact job id (`job_ref` or `run_id`) names that job; else an exact
experiment or job name names the **newest** job of that name (an experiment is submitted again and again, and
its latest run is the one meant); else a unique prefix of an id or a name names its job. Nothing else matches,
and a prefix shared by several jobs names none. Standard library only: the client and MCP (on the console and
over stdio) call it with their own row types.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["JobPick", "pick_job"]

T = TypeVar("T")


@dataclass(frozen=True)
class JobPick(Generic[T]):
    """What a handle names: `job` (None when nothing, or a prefix of several jobs, matches), every job it
    `matches` (newest first), and `by_name` when those share the handle as their name (`job` is then the newest)."""

    job: T | None
    matches: tuple[T, ...] = ()
    by_name: bool = False

    @property
    def ambiguous(self) -> bool:
        """True when a prefix matches several jobs and so names none."""
        return self.job is None and len(self.matches) > 1


def pick_job(jobs: Sequence[T], handle: str, *, ids: Callable[[T], Iterable[str]],
             names: Callable[[T], Iterable[str]]) -> JobPick[T]:
    """Return the job `handle` names among `jobs` (newest first), by the rule of this module; `ids` gives a job's
    ids and `names` its experiment and job names (empty strings are ignored)."""
    wanted = handle.strip()
    if not wanted:
        return JobPick(None)
    exact = next((job for job in jobs if wanted in ids(job)), None)
    if exact is not None:
        return JobPick(exact, (exact,))
    named = tuple(job for job in jobs if wanted in names(job))
    if named:
        return JobPick(named[0], named, by_name=True)
    prefixed = tuple(job for job in jobs
                     if any(value.startswith(wanted) for value in (*ids(job), *names(job)) if value))
    return JobPick(prefixed[0] if len(prefixed) == 1 else None, prefixed)
