"""Job rows of `GET /api/jobs/mine` and the client-side id resolution of wire-protocol §8.1."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..handles import JobPick, pick_job
from ..wire import read_job_row
from ._errors import AmbiguousJob, NotFound

__all__ = ["SUCCEEDED", "TERMINAL", "Job", "find_exact", "pick", "resolve"]

SUCCEEDED = frozenset({"succeeded", "success", "finished", "completed"})
TERMINAL = SUCCEEDED | {"failed", "error", "terminated", "stopped", "cancelled", "canceled"}


@dataclass(frozen=True)
class Job:
    """One job row; `raw` keeps the console's row as served (the `--json` form)."""

    job_ref: str
    run_id: str
    name: str
    status: str
    exp: str
    requested_gpus: int
    submitted_at: float | None
    pipeline: Mapping[str, Any] | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Job:
        """Read a `/api/jobs/mine` row, tolerating missing fields and either timestamp form."""
        read = read_job_row(row)
        return cls(job_ref=read.job_ref, run_id=read.run_id, name=read.name, status=read.status, exp=read.exp,
                   requested_gpus=read.requested_gpus, submitted_at=read.submitted_at, pipeline=read.pipeline,
                   raw=dict(row))

    @property
    def ref(self) -> str:
        """Return the id sent on `?id=`: `job_ref`, else `run_id`."""
        return self.job_ref or self.run_id

    @property
    def exp_name(self) -> str:
        """Return the last segment of `exp` (`experiments/my-grpo` → `my-grpo`)."""
        return self.exp.rstrip("/").rsplit("/", 1)[-1]

    @property
    def attempts(self) -> int | None:
        """Return how many attempts the job started (a preempted, paused or restarted job starts again as the same
        job), or None from a console that does not count them."""
        value = self.raw.get("attempts")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def resumed_from(self) -> str | None:
        """Return the checkpoint the current attempt resumed from, as the job saw it (`GET /api/job` only), or
        None."""
        value = self.raw.get("resumed_from")
        return value if isinstance(value, str) and value else None

    @property
    def terminal(self) -> bool:
        """Return True when the job has finished, one way or another."""
        return self.status in TERMINAL

    @property
    def succeeded(self) -> bool:
        """Return True when the job finished successfully."""
        return self.status in SUCCEEDED

    @property
    def pipeline_progress(self) -> str:
        """Return `done/total` of the pipeline steps (`!` appended when partial), or an empty string."""
        if not self.pipeline:
            return ""
        steps = self.pipeline.get("steps")
        steps = steps if isinstance(steps, list) else []
        done = sum(1 for s in steps if isinstance(s, Mapping) and str(s.get("status", "")).lower() in SUCCEEDED)
        mark = "!" if str(self.pipeline.get("state", "")).lower() == "partial" else ""
        return f"{done}/{len(steps)}{mark}"


def find_exact(jobs: Sequence[Job], ref: str) -> Job | None:
    """Return the job whose `job_ref` or `run_id` equals `ref`, or None."""
    return next((j for j in jobs if ref and ref in (j.job_ref, j.run_id)), None)


def _describe(job: Job) -> str:
    return f"{job.ref} ({job.name or job.exp_name or '?'}, {job.status or 'unknown'})"


def pick(jobs: Sequence[Job], handle: str) -> JobPick[Job]:
    """Return what `handle` names among `jobs` (newest first) by the one rule of `starforge.handles`: an exact id,
    else the newest job of an exact experiment or job name, else a unique prefix; raise `NotFound` when nothing
    matches and `AmbiguousJob` (listing the candidates) when a prefix matches several jobs."""
    if not handle.strip():
        raise NotFound("no job id given", hint="pass a job id, a prefix of one, or an experiment name")
    found = pick_job(jobs, handle, ids=lambda j: (j.job_ref, j.run_id), names=lambda j: (j.name, j.exp_name))
    if found.job is not None:
        return found
    if not found.matches:
        raise NotFound(
            f"no job matches {handle.strip()!r}",
            hint="list your jobs with `sf job ls --all`; ids of other accounts are not visible",
        )
    matches = found.matches
    listing = "\n".join(f"- {_describe(j)}" for j in matches[:20])
    more = f"\n- … and {len(matches) - 20} more" if len(matches) > 20 else ""
    raise AmbiguousJob(f"{handle.strip()!r} matches {len(matches)} jobs\n{listing}{more}", matches)


def resolve(jobs: Sequence[Job], handle: str) -> Job:
    """Return the one job `handle` names (see `pick`); raise `NotFound` or `AmbiguousJob` otherwise."""
    job = pick(jobs, handle).job
    if job is None:  # never: `pick` raises when the handle names no job
        raise NotFound(f"no job matches {handle.strip()!r}")
    return job
