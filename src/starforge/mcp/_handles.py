"""Which job a handle names, for both backends: the one rule of `starforge.handles` (an exact id, else the newest
job of an exact experiment or job name, else a unique prefix), over the caller's newest `LOOKUP_LIMIT` jobs, so a
handle names the same job on the console, over stdio and in `sf`.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..handles import pick_job
from ._errors import BackendError
from ._shapes import JobRow

__all__ = ["LOOKUP_LIMIT", "resolve_handle"]

LOOKUP_LIMIT = 200  # the newest jobs a handle is looked up in, as `sf job` does


def _label(job: JobRow) -> str:
    return f"{job.ref} ({job.name or job.exp_name or '?'}, {job.status or 'unknown'})"


def resolve_handle(jobs: Sequence[JobRow], handle: str) -> JobRow:
    """Return the job `handle` names; raise BackendError `NotFound` (none) or `AmbiguousJob` (a prefix of several)."""
    wanted = handle.strip()
    if not wanted:
        raise BackendError("no job id given", hint="pass a job id, a prefix of one, or an experiment name",
                           status=404, kind="NotFound")
    found = pick_job(jobs, wanted, ids=lambda j: j.ids, names=lambda j: (j.name, j.exp_name))
    if found.job is not None:
        return found.job
    if not found.matches:
        raise BackendError(f"no job matches {wanted!r}", status=404, kind="NotFound",
                           hint="list_jobs shows your jobs; jobs of other accounts are not visible")
    matches = found.matches
    shown = "\n".join(f"- {_label(j)}" for j in matches[:20])
    more = f"\n- … and {len(matches) - 20} more" if len(matches) > 20 else ""
    raise BackendError(f"{wanted!r} matches {len(matches)} jobs", status=None, kind="AmbiguousJob",
                       detail=f"{wanted!r} matches {len(matches)} jobs\n{shown}{more}",
                       hint="give more of the id, or the full job id")
