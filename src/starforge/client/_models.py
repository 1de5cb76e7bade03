"""Typed views of the console's answers; each keeps the served object in `raw` for `--json` output.

The bodies are read by `starforge.wire`'s readers (the ones MCP uses too); these types only add `raw` and the
client's conveniences.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from starforge.contract import Problem, ProfileEntry
from starforge.wire import (
    read_account,
    read_cluster,
    read_control,
    read_metrics,
    read_stopped,
    read_submitted,
    read_usage,
    read_verdict,
)

__all__ = [
    "AdmissionVerdict",
    "ClusterStatus",
    "ControlResult",
    "DeviceCode",
    "MetricPoint",
    "Metrics",
    "ServerVersion",
    "StopResult",
    "SubmitResult",
    "Usage",
    "User",
]


def _num(value: Any, default: float = 0) -> float:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else default


@dataclass(frozen=True)
class User:
    """The account behind a token (`GET /api/whoami`)."""

    username: str
    role: str = ""
    email: str = ""
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> User:
        """Read `{"user": {...}, "username": …}` (or a bare user object)."""
        read = read_account(body)
        return cls(username=read.username, role=read.role, email=read.email, raw=read.user)


@dataclass(frozen=True)
class ServerVersion:
    """The console's version and API (`GET /api/version`)."""

    server: str
    api: str
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class Usage:
    """Caps and current consumption (`GET /api/usage/mine`); a cap of 0 or missing means unlimited."""

    quota: Mapping[str, Any]
    usage: Mapping[str, Any]
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Usage:
        """Read `{"quota": {...}, "usage": {...}}`."""
        read = read_usage(body)
        return cls(read.quota, read.usage, dict(body))

    def cap(self, key: str) -> float | None:
        """Return a quota cap, or None when it is unlimited (missing, null, empty or 0)."""
        value = _num(self.quota.get(key), 0)
        return value or None


@dataclass(frozen=True)
class ClusterStatus:
    """The profile registry and GPU capacity (`GET /api/cluster/status`), reading either GPU key set."""

    profiles: tuple[ProfileEntry, ...]
    total: int
    used: int
    free: int
    blocked: int
    queued: int
    series: tuple[Mapping[str, Any], ...]
    active_count: int
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> ClusterStatus:
        """Read the body; `total/used/free` fall back to `gpu_total/gpu_used/gpu_free`."""
        read = read_cluster(body)
        return cls(profiles=read.profiles, total=read.total, used=read.used, free=read.free, blocked=read.blocked,
                   queued=read.queued, series=read.series, active_count=read.active_count, raw=dict(body))


@dataclass(frozen=True)
class SubmitResult:
    """The console's answer to a submission (200 submitted, 202 queued)."""

    job_id: str
    run_id: str
    queued: bool
    message: str
    requested_gpus: int
    dry_run: bool
    warnings: tuple[str, ...]
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_body(cls, body: Mapping[str, Any], status: int = 200) -> SubmitResult:
        """Read the body; a 202 counts as queued even when `queued` is missing."""
        read = read_submitted(body, status)
        return cls(job_id=read.job_id, run_id=read.run_id, queued=read.queued, message=read.message,
                   requested_gpus=read.requested_gpus, dry_run=read.dry_run, warnings=read.warnings, raw=dict(body))


@dataclass(frozen=True)
class AdmissionVerdict:
    """What admission would decide (`POST /api/admission/check`): `ok`, every problem, warnings, GPUs asked."""

    ok: bool
    problems: list[Problem]
    warnings: list[Problem]
    requested_gpus: int = 0
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> AdmissionVerdict:
        """Read the verdict; `ok` defaults to "no problems"."""
        read = read_verdict(body)
        return cls(ok=read.ok, problems=list(read.problems), warnings=list(read.warnings),
                   requested_gpus=read.requested_gpus, raw=dict(body))


@dataclass(frozen=True)
class StopResult:
    """The answer to `POST /api/job/stop`: `stopped` false means the job had already finished (`status`)."""

    ref: str
    stopped: bool
    status: str
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_body(cls, ref: str, body: Mapping[str, Any]) -> StopResult:
        """Read the answer; `stopped` defaults to true."""
        read = read_stopped(body)
        return cls(ref, read.stopped, read.status, dict(body))


@dataclass(frozen=True)
class ControlResult:
    """The answer to `POST /api/job/{pause,resume,retry}`: `done` false means there was nothing to do (the job's
    `status` says why); `message` is the console's own sentence, when it gives one."""

    ref: str
    action: str
    done: bool
    status: str
    message: str = ""
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_body(cls, ref: str, action: str, body: Mapping[str, Any]) -> ControlResult:
        """Read the answer to `action` (pause, resume, retry); the change defaults to true."""
        read = read_control(body, action)
        return cls(ref, action, read.done, read.status, read.message, dict(body))


@dataclass(frozen=True, slots=True)
class MetricPoint:
    """One reported value of a metric key."""

    step: int
    value: float
    ts: Any = None


@dataclass(frozen=True)
class Metrics:
    """Metric series of one job, key → points ordered by step."""

    series: Mapping[str, tuple[MetricPoint, ...]]
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Metrics:
        """Read `{"series": {key: [[step, value, ts], …]}}`, `{"metrics": {key: [{step, value, ts}]}}` or
        `{"points": [{key, step, value, ts}]}`; non-numeric values are skipped."""
        series = {key: tuple(MetricPoint(p.step, p.value, p.ts) for p in points)
                  for key, points in read_metrics(body).items()}
        return cls(series, dict(body))

    def latest(self) -> dict[str, MetricPoint]:
        """Return the point with the highest step of every key."""
        return {key: points[-1] for key, points in self.series.items() if points}


@dataclass(frozen=True)
class DeviceCode:
    """A started device login (`POST /api/cli/device/code`): show `verification_uri` and `user_code`."""

    device_code: str = field(repr=False)
    user_code: str
    verification_uri: str
    interval: float = 5
    expires_in: float = 900

    @classmethod
    def from_body(cls, server: str, body: Mapping[str, Any]) -> DeviceCode:
        """Read the body, preferring `verification_uri_complete`, defaulting to `<server>/cli/device`."""
        uri = body.get("verification_uri_complete") or body.get("verification_uri") or f"{server}/cli/device"
        interval = _num(body.get("interval"), 5)
        return cls(
            device_code=str(body.get("device_code") or ""),
            user_code=str(body.get("user_code") or ""),
            verification_uri=str(uri),
            interval=interval if interval > 0 else 5,
            expires_in=_num(body.get("expires_in"), 900) or 900,
        )
