"""Which job a handle names: an exact id, else an exact name, else a unique prefix (wire-protocol §8.1).

One rule for both backends: each lists the caller's newest `LOOKUP_LIMIT` jobs and resolves here, so a handle names
the same job, or fails the same way, on the console and over stdio.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._errors import BackendError
from ._shapes import JobRow

__all__ = ["LOOKUP_LIMIT", "resolve_handle"]

LOOKUP_LIMIT = 200  # the newest jobs a handle is looked up in, as `sf job` does


def _label(job: JobRow) -> str:
    return f"{job.ref} ({job.name or job.exp_name or '?'}, {job.status or 'unknown'})"


def resolve_handle(jobs: Sequence[JobRow], handle: str) -> JobRow:
    """Return the one job `handle` names; raise BackendError `NotFound` (none) or `AmbiguousJob` (several)."""
    wanted = handle.strip()
    if not wanted:
        raise BackendError("no job id given", hint="pass a job id, a prefix of one, or an experiment name",
                           status=404, kind="NotFound")
    exact = next((j for j in jobs if wanted in j.ids), None)
    if exact is not None:
        return exact
    named = [j for j in jobs if wanted in (j.name, j.exp_name)]
    matches = named or [j for j in jobs
                        if any(v.startswith(wanted) for v in (*j.ids, j.name, j.exp_name) if v)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise BackendError(f"no job matches {wanted!r}", status=404, kind="NotFound",
                           hint="list_jobs shows your jobs; jobs of other accounts are not visible")
    shown = "\n".join(f"- {_label(j)}" for j in matches[:20])
    more = f"\n- … and {len(matches) - 20} more" if len(matches) > 20 else ""
    raise BackendError(f"{wanted!r} matches {len(matches)} jobs", status=None, kind="AmbiguousJob",
                       detail=f"{wanted!r} matches {len(matches)} jobs\n{shown}{more}",
                       hint="give more of the id, or the full job id")
