"""The console's answers to its clients (wire-protocol.md), read once: one reader per response body, shared by the
Python client (`starforge.client`) and MCP (`starforge.mcp`), standard library and contract only.

Each reader takes the decoded JSON object and never raises on it: a missing or mistyped field reads as its empty
value, so a console that omits one (or the official console's older key names) still gives a whole answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from starforge.contract import Problem, ProfileEntry

__all__ = [
    "AccountBody",
    "ClusterBody",
    "ControlBody",
    "JobRowBody",
    "MetricSample",
    "StoppedBody",
    "SubmittedBody",
    "UsageBody",
    "VerdictBody",
    "read_account",
    "read_cluster",
    "read_control",
    "read_job_row",
    "read_metrics",
    "read_stopped",
    "read_submitted",
    "read_usage",
    "read_verdict",
]


def _int(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _obj(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


def _problems(value: Any) -> tuple[Problem, ...]:
    items = value if isinstance(value, list) else []
    return tuple(Problem.from_dict(v) if isinstance(v, dict) else Problem("<root>", "warning", str(v)) for v in items)


@dataclass(frozen=True)
class AccountBody:
    """`GET /api/whoami`: the account behind the caller's credentials; `user` is its user object as served."""

    username: str
    role: str
    email: str
    user: dict[str, Any]


def read_account(body: Mapping[str, Any]) -> AccountBody:
    """Read `{"user": {...}, "username": …}` or a bare user object."""
    user = _obj(body.get("user")) or dict(body)
    return AccountBody(str(user.get("username") or body.get("username") or ""), str(user.get("role") or ""),
                       str(user.get("email") or ""), user)


@dataclass(frozen=True)
class UsageBody:
    """`GET /api/usage/mine`: the account's quota caps and current use."""

    quota: dict[str, Any]
    usage: dict[str, Any]


def read_usage(body: Mapping[str, Any]) -> UsageBody:
    """Read `{"quota": {...}, "usage": {...}}`."""
    return UsageBody(_obj(body.get("quota")), _obj(body.get("usage")))


@dataclass(frozen=True)
class ClusterBody:
    """`GET /api/cluster/status`: the profile registry, GPU capacity, its series and the active job count."""

    profiles: tuple[ProfileEntry, ...]
    total: int
    used: int
    free: int
    blocked: int
    queued: int
    series: tuple[dict[str, Any], ...]
    active_count: int


def read_cluster(body: Mapping[str, Any]) -> ClusterBody:
    """Read the report; `total/used/free` fall back to `gpu_total/gpu_used/gpu_free`, profiles without a name are
    skipped."""
    gpu = _obj(body.get("gpu"))
    listed = body.get("profiles")
    profiles = tuple(ProfileEntry.from_dict(p) for p in (listed if isinstance(listed, list) else [])
                     if isinstance(p, dict) and p.get("name"))
    series = gpu.get("series")
    return ClusterBody(
        profiles=profiles,
        total=_int(gpu.get("total"), _int(gpu.get("gpu_total"))),
        used=_int(gpu.get("used"), _int(gpu.get("gpu_used"))),
        free=_int(gpu.get("free"), _int(gpu.get("gpu_free"))),
        blocked=_int(gpu.get("blocked")),
        queued=_int(gpu.get("queued")),
        series=tuple(s for s in (series if isinstance(series, list) else []) if isinstance(s, dict)),
        active_count=_int(body.get("active_count")),
    )


@dataclass(frozen=True)
class VerdictBody:
    """`POST /api/admission/check`: ok, every problem, the warnings and the GPUs asked for."""

    ok: bool
    problems: tuple[Problem, ...]
    warnings: tuple[Problem, ...]
    requested_gpus: int


def read_verdict(body: Mapping[str, Any]) -> VerdictBody:
    """Read the verdict; `ok` defaults to "no problems", a problem that is not an object is kept as its text."""
    problems = _problems(body.get("problems"))
    return VerdictBody(bool(body.get("ok", not problems)), problems, _problems(body.get("warnings")),
                       _int(body.get("requested_gpus")))


@dataclass(frozen=True)
class SubmittedBody:
    """`POST /api/jobs` (and a follow-up's answer): the job, whether it waits, the console's message and warnings."""

    job_id: str
    run_id: str
    queued: bool
    message: str
    requested_gpus: int
    dry_run: bool
    warnings: tuple[str, ...]


def read_submitted(body: Mapping[str, Any], status: int = 200) -> SubmittedBody:
    """Read the answer; `job_id` falls back to `run_id`, and a 202 counts as queued when `queued` is missing."""
    warnings = body.get("warnings")
    return SubmittedBody(
        job_id=str(body.get("job_id") or body.get("run_id") or ""),
        run_id=str(body.get("run_id") or ""),
        queued=bool(body.get("queued", status == 202)),
        message=str(body.get("message") or ""),
        requested_gpus=_int(body.get("requested_gpus")),
        dry_run=bool(body.get("dry_run", False)),
        warnings=tuple(str(w) for w in warnings) if isinstance(warnings, list) else (),
    )


@dataclass(frozen=True)
class StoppedBody:
    """`POST /api/job/stop`: `stopped` false means the job had already finished, with `status`."""

    stopped: bool
    status: str


def read_stopped(body: Mapping[str, Any]) -> StoppedBody:
    """Read the answer; `stopped` defaults to true."""
    return StoppedBody(bool(body.get("stopped", True)), str(body.get("status") or ""))


@dataclass(frozen=True)
class ControlBody:
    """`POST /api/job/{pause,resume,retry}`: whether the job changed (`paused`, `resumed` or `retried`), its status
    now, and the console's `message` when it gives one."""

    done: bool
    status: str
    message: str


def read_control(body: Mapping[str, Any], verb: str) -> ControlBody:
    """Read the answer to `verb` (pause, resume, retry); the change (`paused`…) defaults to true, as `stopped`
    does."""
    done = {"pause": "paused", "resume": "resumed", "retry": "retried"}.get(verb, verb)
    return ControlBody(bool(body.get(done, True)), str(body.get("status") or ""), str(body.get("message") or ""))


def _epoch(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and value.strip():
        text = value.strip()
        try:
            return float(text)
        except ValueError:
            pass
        try:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.timestamp()
    return None


@dataclass(frozen=True)
class JobRowBody:
    """One row of `GET /api/jobs/mine`: ids, names, status (lower case), GPUs, submission time and pipeline."""

    job_ref: str
    run_id: str
    name: str
    status: str
    exp: str
    requested_gpus: int
    submitted_at: float | None  # epoch seconds, read from a number or an ISO 8601 text
    pipeline: Mapping[str, Any] | None

    @property
    def ref(self) -> str:
        """Return the id a request names the job by: `job_ref`, else `run_id`."""
        return self.job_ref or self.run_id


def read_job_row(row: Mapping[str, Any]) -> JobRowBody:
    """Read a row, tolerating missing fields, `gpus` for `requested_gpus` and either timestamp form."""
    pipeline = row.get("pipeline")
    return JobRowBody(
        job_ref=str(row.get("job_ref") or ""),
        run_id=str(row.get("run_id") or ""),
        name=str(row.get("name") or ""),
        status=str(row.get("status") or "").lower(),
        exp=str(row.get("exp") or ""),
        requested_gpus=_int(row.get("requested_gpus", row.get("gpus"))),
        submitted_at=_epoch(row.get("submitted_at")),
        pipeline=pipeline if isinstance(pipeline, Mapping) else None,
    )


@dataclass(frozen=True, slots=True)
class MetricSample:
    """One reported value of a metric key: its step, value and timestamp as served."""

    step: int
    value: float
    ts: Any = None


def read_metrics(body: Mapping[str, Any]) -> dict[str, tuple[MetricSample, ...]]:
    """Return key → points ordered by step (a tie keeps the served order), keys sorted, from
    `{"series": {key: [[step, value, ts], …]}}`, `{"metrics": {key: [{step, value, ts}]}}` or
    `{"points": [{key, step, value, ts}]}`; a value that is not a number is skipped, a step that is not one reads 0.
    """
    grouped: dict[str, list[MetricSample]] = {}

    def add(key: Any, point: Any) -> None:
        if isinstance(point, list | tuple) and len(point) >= 2:
            point = {"step": point[0], "value": point[1], "ts": point[2] if len(point) > 2 else None}
        if not isinstance(point, dict):
            return
        value = point.get("value")
        if isinstance(value, bool) or not isinstance(value, int | float):
            return
        grouped.setdefault(str(key), []).append(MetricSample(_int(point.get("step")), float(value), point.get("ts")))

    listed = body.get("points")
    for point in listed if isinstance(listed, list) else []:
        if isinstance(point, dict):
            add(point.get("key"), point)
    for name in ("series", "metrics"):
        by_key = body.get(name)
        if isinstance(by_key, dict):
            for key, points in by_key.items():
                for point in points if isinstance(points, list) else []:
                    add(key, point)
    return {k: tuple(sorted(v, key=lambda p: p.step)) for k, v in sorted(grouped.items())}
