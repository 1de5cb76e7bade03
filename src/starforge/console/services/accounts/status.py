"""Read models for `sf login --token` and `sf status`: the caller's account, its quota and usage, and the cluster's
profiles and capacity.

Tier: use case (each function owns at most one read transaction).
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select

from ...store.models import Job
from ..context import Runtime
from ..jobs.queries import job_view
from ..jobs.rows import WAITING
from ..quota.caps import ACTIVE, get_quota, usage
from .view import UserView

__all__ = ["cluster_report", "usage_report", "whoami"]


def whoami(*, user: UserView) -> dict[str, Any]:
    """Return the caller's account, and its username again at the top level (read by the official `sf volume`)."""
    return {"user": user.to_dict(), "username": user.username}


def usage_report(rt: Runtime, *, user: UserView) -> dict[str, Any]:
    """Return `{quota, usage}` as `/api/usage/mine` publishes it (numbers only, never null)."""
    with rt.db.read() as db:
        quota = get_quota(db, user, rt.settings.quota)
        used = usage(db, user.id)
        running = [job_view(db, job) for job in db.scalars(select(Job).where(Job.id.in_(used.running)))]
    return {
        "quota": quota.to_dict(),
        "usage": {
            "active_gpus": used.active_gpus,
            "active_jobs": used.active_jobs,
            "gpu_hours_today": used.gpu_hours_today,
            "gpu_hours_total": used.gpu_hours_total,
            "storage_bytes": 0,
            "storage_measured_at": 0,
            "running": running,
        },
    }


def cluster_report(rt: Runtime) -> dict[str, Any]:
    """Return the profile registry and capacity per series with both the current and the older key names."""
    series_labels = rt.settings.series()
    used = {s: 0 for s in series_labels}
    queued = {s: 0 for s in series_labels}
    active = 0
    with rt.db.read() as db:
        rows = db.execute(select(Job.status, Job.series_gpus).where(Job.status.in_(ACTIVE + WAITING)))
        for status, series_json in rows:
            target = used if status in ACTIVE else queued
            if status in ACTIVE:
                active += 1
            for series, count in json.loads(series_json or "{}").items():
                target[series] = target.get(series, 0) + count
    per_series: list[dict[str, Any]] = []
    for series, label in series_labels.items():
        total = rt.capacity.get(series, 0)
        per_series.append({
            "id": series, "label": label, "total": total, "used": used.get(series, 0),
            "free": max(0, total - used.get(series, 0)), "blocked": 0, "queued": queued.get(series, 0),
        })
    total = sum(int(s["total"]) for s in per_series)
    in_use = sum(int(s["used"]) for s in per_series)
    waiting = sum(int(s["queued"]) for s in per_series)
    return {
        "profiles": [
            {"name": p.name, "series": p.series or p.name, "num_nodes": p.num_nodes, "gpus_per_node": p.gpus_per_node,
             "label": p.label or p.name, "kind": rt.settings.series_kind(p.series or p.name)}
            for p in rt.settings.profiles
        ],
        "gpu": {
            "total": total, "used": in_use, "free": max(0, total - in_use), "blocked": 0, "queued": waiting,
            "series": per_series,
            "gpu_total": total, "gpu_used": in_use, "gpu_free": max(0, total - in_use),
            "accel": [s["label"] for s in per_series if s["total"] > 0],
        },
        "active_count": active,
    }
