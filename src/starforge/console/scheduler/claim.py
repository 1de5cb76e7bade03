"""Claiming placed jobs: lease them (owner, token, expiry) and load each once into a frozen `ClaimedJob`, which
runtime planning, preparation and launch all read; nothing of the job is read or parsed again on its way out.

A job this console admitted is loaded from the JobSpec admission made (the submission writer's `handover`); any
other (admitted by another process, before a restart, or a follow-up) is parsed from its row, once.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import or_, select, update

from ...contract import JobSpec, parse_or_raise
from ..services.context import Runtime
from ..services.jobs.handover import Handover
from ..store.models import Job

__all__ = ["LEASE_SECONDS", "ClaimedJob", "Lease", "LeasedRow", "claim", "load", "release_others"]

LEASE_SECONDS = 120.0
CLAIM_LIMIT = 32  # placed jobs claimed per cycle


@dataclass(frozen=True)
class Lease:
    """This console's hold on a placed job: while the row carries `token`, no other console starts it."""

    job_id: str
    token: str


@dataclass(frozen=True)
class LeasedRow:
    """The launch fields of a leased job's row, as read with the lease (the spec still in its stored text)."""

    lease: Lease
    user_id: int
    username: str
    profile: str
    package_sha: str
    action: str
    parent_id: str
    gpus: int
    series_json: str
    resolved_json: str
    spec_json: str


@dataclass(frozen=True)
class ClaimedJob:
    """A leased job, loaded once: what starting it reads, with its admitted (owner-stamped) JobSpec."""

    lease: Lease
    user_id: int
    username: str
    profile: str
    package_sha: str
    action: str  # a lifecycle action of a follow-up ("" for the job itself)
    parent_id: str
    gpus: int
    series_gpus: Mapping[str, int]  # accelerators per series, as placed
    resolved: Mapping[str, Any]  # what admission resolved for the launch (`jobs.resolved_json`)
    spec: JobSpec

    @property
    def id(self) -> str:
        """Return the job's id (its run id)."""
        return self.lease.job_id

    @property
    def exp(self) -> str:
        """Return the experiment path the run directory is named after."""
        return self.spec.spec.source.exp


def claim(rt: Runtime, *, owner: str, now: float, limit: int = CLAIM_LIMIT) -> list[LeasedRow]:
    """Lease up to `limit` placed jobs not yet started that no console holds (or whose lease expired at `now`) to
    `owner`, for LEASE_SECONDS, and return their launch fields (one write transaction)."""
    leased = []
    with rt.db.write() as db:
        rows = db.scalars(select(Job).where(
            Job.status == "submitted", Job.executor_ref == "",
            or_(Job.lease_expires_at.is_(None), Job.lease_expires_at < now)).limit(limit))
        for job in rows:
            token = secrets.token_hex(8)
            job.lease_owner, job.lease_token, job.lease_expires_at = owner, token, now + LEASE_SECONDS
            leased.append(LeasedRow(Lease(job.id, token), job.user_id, job.username, job.profile, job.package_sha,
                                    job.action, job.parent_id, job.requested_gpus, job.series_gpus or "{}",
                                    job.resolved_json or "{}", job.spec_json))
    return leased


def release_others(rt: Runtime, *, owner: str, now: float) -> int:
    """Void every lease of a placed job not yet started that another owner holds (a scheduler of an earlier leader:
    the lead, and its leases, are this process's now), so they are claimed again at once; return how many."""
    with rt.db.write() as db:
        done = db.execute(update(Job).where(Job.status == "submitted", Job.executor_ref == "", Job.lease_token != "",
                                            Job.lease_owner != owner, Job.lease_expires_at >= now)
                          .values(lease_owner="", lease_token="", lease_expires_at=None))
    return int(getattr(done, "rowcount", 0) or 0)


def load(row: LeasedRow, handover: Handover) -> ClaimedJob:
    """Return the leased job loaded: its spec from `handover` when this process admitted it, else parsed from its
    row (raises when the stored spec no longer parses: the job can never start)."""
    spec = handover.take(row.lease.job_id)
    if spec is None:
        spec = parse_or_raise(json.loads(row.spec_json))
    return ClaimedJob(row.lease, row.user_id, row.username, row.profile, row.package_sha, row.action,
                      row.parent_id, row.gpus, json.loads(row.series_json), json.loads(row.resolved_json), spec)
