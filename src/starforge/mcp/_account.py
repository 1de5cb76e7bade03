"""Account and cluster operations: who the caller is with its quota and use, and the profile registry."""

from __future__ import annotations

from starforge.wire.quota_fields import cap_text

from ._backend import Backend
from ._results import Outcome

__all__ = ["cluster_status", "get_quota"]


def get_quota(backend: Backend) -> Outcome:
    """Return the caller's account (name, role), quota caps and current usage."""
    user = backend.whoami()
    usage = backend.usage()
    data = {"user": {"username": user.username, "role": user.role}, "quota": usage.quota, "usage": usage.usage}
    lines = [f"{user.username} ({user.role or 'unknown role'})"]
    lines += [f"- {k}: {cap_text(k, v, every='all')}" for k, v in sorted(usage.quota.items())]
    if usage.usage:
        lines.append("in use: " + ", ".join(f"{k}={v}" for k, v in sorted(usage.usage.items())))
    if user.role == "viewer":
        lines.append("viewers can read but not submit or stop jobs")
    return Outcome("\n".join(lines), data)


def cluster_status(backend: Backend) -> Outcome:
    """Return the profile registry, GPU capacity per series and the number of active jobs."""
    status = backend.cluster_status()
    lines = [f"GPUs: {status.used} used, {status.free} free of {status.total}; {status.queued} queued; "
             f"{status.active_count} active job(s)"]
    lines += [f"- profile {p.name}: {p.label or p.series}" for p in status.profiles]
    return Outcome("\n".join(lines), status.body)
