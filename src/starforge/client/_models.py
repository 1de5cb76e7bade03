"""Typed views of the console's answers; each keeps the served object in `raw` for `--json` output."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from starforge.contract import Problem, ProfileEntry

__all__ = [
    "AdmissionVerdict",
    "ClusterStatus",
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


def _int(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


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
        user = _obj(body.get("user")) or dict(body)
        return cls(
            username=str(user.get("username") or body.get("username") or ""),
            role=str(user.get("role") or ""),
            email=str(user.get("email") or ""),
            raw=user,
        )


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
        return cls(_obj(body.get("quota")), _obj(body.get("usage")), dict(body))

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
        gpu = _obj(body.get("gpu"))
        profiles = tuple(
            ProfileEntry.from_dict(p) for p in body.get("profiles") or [] if isinstance(p, dict) and p.get("name")
        )
        series = tuple(s for s in gpu.get("series") or [] if isinstance(s, dict))
        return cls(
            profiles=profiles,
            total=_int(gpu.get("total"), _int(gpu.get("gpu_total"))),
            used=_int(gpu.get("used"), _int(gpu.get("gpu_used"))),
            free=_int(gpu.get("free"), _int(gpu.get("gpu_free"))),
            blocked=_int(gpu.get("blocked")),
            queued=_int(gpu.get("queued")),
            series=series,
            active_count=_int(body.get("active_count")),
            raw=dict(body),
        )


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
        warnings = body.get("warnings")
        return cls(
            job_id=str(body.get("job_id") or body.get("run_id") or ""),
            run_id=str(body.get("run_id") or ""),
            queued=bool(body.get("queued", status == 202)),
            message=str(body.get("message") or ""),
            requested_gpus=_int(body.get("requested_gpus")),
            dry_run=bool(body.get("dry_run", False)),
            warnings=tuple(str(w) for w in warnings) if isinstance(warnings, list) else (),
            raw=dict(body),
        )


def _problems(value: Any) -> list[Problem]:
    if not isinstance(value, list):
        return []
    return [Problem.from_dict(v) if isinstance(v, dict) else Problem("<root>", "warning", str(v)) for v in value]


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
        problems = _problems(body.get("problems"))
        return cls(
            ok=bool(body.get("ok", not problems)),
            problems=problems,
            warnings=_problems(body.get("warnings")),
            requested_gpus=_int(body.get("requested_gpus")),
            raw=dict(body),
        )


@dataclass(frozen=True)
class StopResult:
    """The answer to `POST /api/job/stop`: `stopped` false means the job had already finished (`status`)."""

    ref: str
    stopped: bool
    status: str
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)


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
        grouped: dict[str, list[MetricPoint]] = {}

        def add(key: Any, point: Any) -> None:
            if isinstance(point, list | tuple) and len(point) >= 2:
                point = {"step": point[0], "value": point[1], "ts": point[2] if len(point) > 2 else None}
            if not isinstance(point, dict):
                return
            value = point.get("value")
            if isinstance(value, bool) or not isinstance(value, int | float):
                return
            grouped.setdefault(str(key), []).append(MetricPoint(_int(point.get("step")), float(value), point.get("ts")))

        for point in body.get("points") or []:
            if isinstance(point, dict):
                add(point.get("key"), point)
        for name in ("series", "metrics"):
            by_key = body.get(name)
            if isinstance(by_key, dict):
                for key, points in by_key.items():
                    for point in points if isinstance(points, list) else []:
                        add(key, point)
        series = {k: tuple(sorted(v, key=lambda p: p.step)) for k, v in sorted(grouped.items())}
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
