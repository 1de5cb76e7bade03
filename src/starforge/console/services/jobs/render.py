"""Render a job the caller may see as an engine's document (`format=kuberay`: a KubeRay RayJob manifest).

Tier: use case (one read transaction). The renderers are the runtime's (`Runtime.renderers`, filled in by the
console from the engine side). Another account's job is a 404, as for every job read; an unknown format
or a job this deployment cannot render is a 400 with its problem.
"""

from __future__ import annotations

import json
from typing import Any

from ....contract import Problem, parse_or_raise
from ..accounts.view import UserView
from ..context import CannotRender, RenderFacts, Runtime
from ..errors import Rejected
from ..quota import policy
from ..quota.caps import get_quota
from . import queries as job_queries

__all__ = ["render"]


def render(rt: Runtime, *, user: UserView, ref: str, fmt: str) -> dict[str, Any]:
    """Return `{job_ref, format, manifest}`: the job `ref` rendered in the format `fmt` (`manifest`: YAML text)."""
    renderer = rt.renderers.get(fmt)
    if renderer is None:
        formats = list(rt.renderers)
        raise Rejected("Unknown render format", [Problem(
            "format", "invalid_request", f"cannot render a job as {fmt!r}",
            f"use one of: {', '.join(formats)}", data={"allowed": formats, "got": fmt})])
    settings = rt.settings
    with rt.db.read() as db:
        job = job_queries.find_job(db, user, ref)
        spec_doc, job_id, owner, profile = json.loads(job.spec_json), job.id, job.username, job.profile
        quota = get_quota(db, UserView(job.user_id, owner, "", "", False), settings.quota)
        wall_seconds = policy.wall_seconds(gpus=job.requested_gpus, profile=profile, quota=quota,
                                           profile_max_hours=settings.profile_max_hours)  # its limit here
    facts = RenderFacts(job_id=job_id, owner=owner, profile=profile, base_url=settings.base_url,
                        wall_seconds=wall_seconds,
                        nemo_rl_dir=settings.framework_dirs.get("nemo-rl", ""))
    try:
        manifest = renderer(parse_or_raise(spec_doc), facts)
    except CannotRender as exc:
        raise Rejected("Cannot render the job", [Problem(exc.field, "missing_field", exc.message, exc.hint)]) from exc
    return {"job_ref": job_id, "format": fmt, "manifest": manifest}
