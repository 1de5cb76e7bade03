"""The plain results a backend returns, read from the console's wire bodies, so both backends give the same data.

Each shape is a frozen dataclass of standard types and contract values (`Problem`, `ProfileEntry`); a `from_body`
reads the JSON object the console serves for it (the REST answer over stdio, the same object from the service on
the console). None of them is a client model, an ORM row or a service view.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from starforge.contract import Problem, ProfileEntry

__all__ = [
    "Account",
    "Cluster",
    "JobRow",
    "LogWindow",
    "MetricValue",
    "Stop",
    "Stopped",
    "Submitted",
    "Usage",
    "Verdict",
    "latest_metrics",
]


def _obj(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


def _int(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _problems(value: Any) -> tuple[Problem, ...]:
    items = value if isinstance(value, list) else []
    return tuple(Problem.from_dict(v) if isinstance(v, dict) else Problem("<root>", "warning", str(v)) for v in items)


@dataclass(frozen=True)
class Account:
    """The account behind the caller's credentials."""

    username: str
    role: str = ""

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Account:
        """Read `{"user": {...}, "username": …}` (`GET /api/whoami`) or a bare user object."""
        user = _obj(body.get("user")) or dict(body)
        return cls(str(user.get("username") or body.get("username") or ""), str(user.get("role") or ""))


@dataclass(frozen=True)
class Usage:
    """The account's quota caps and current use, as the console reports them."""

    quota: dict[str, Any]
    usage: dict[str, Any]

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Usage:
        """Read `{"quota": {...}, "usage": {...}}` (`GET /api/usage/mine`)."""
        return cls(_obj(body.get("quota")), _obj(body.get("usage")))


@dataclass(frozen=True)
class Cluster:
    """The profile registry, GPU capacity and active job count; `body` is the report as the console gives it."""

    profiles: tuple[ProfileEntry, ...]
    total: int
    used: int
    free: int
    queued: int
    active_count: int
    body: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Cluster:
        """Read `GET /api/cluster/status`; `total/used/free` fall back to `gpu_total/gpu_used/gpu_free`."""
        gpu = _obj(body.get("gpu"))
        listed = body.get("profiles")
        profiles = tuple(ProfileEntry.from_dict(p) for p in (listed if isinstance(listed, list) else [])
                         if isinstance(p, dict) and p.get("name"))
        return cls(profiles, _int(gpu.get("total"), _int(gpu.get("gpu_total"))),
                   _int(gpu.get("used"), _int(gpu.get("gpu_used"))), _int(gpu.get("free"), _int(gpu.get("gpu_free"))),
                   _int(gpu.get("queued")), _int(body.get("active_count")), dict(body))


@dataclass(frozen=True)
class Verdict:
    """Admission's verdict on a spec: ok, every problem of the first failing stage, warnings, GPUs asked for."""

    ok: bool
    problems: tuple[Problem, ...] = ()
    warnings: tuple[Problem, ...] = ()
    requested_gpus: int = 0

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Verdict:
        """Read `POST /api/admission/check`'s answer; `ok` defaults to "no problems"."""
        problems = _problems(body.get("problems"))
        return cls(bool(body.get("ok", not problems)), problems, _problems(body.get("warnings")),
                   _int(body.get("requested_gpus")))


@dataclass(frozen=True)
class Submitted:
    """The console's answer to a submission; `body` is the answer as served."""

    job_id: str
    run_id: str
    queued: bool
    message: str
    requested_gpus: int
    warnings: tuple[str, ...]
    body: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_body(cls, body: Mapping[str, Any], status_code: int = 200) -> Submitted:
        """Read `POST /api/jobs`'s answer; a 202 counts as queued when `queued` is missing."""
        warnings = body.get("warnings")
        return cls(str(body.get("job_id") or body.get("run_id") or ""), str(body.get("run_id") or ""),
                   bool(body.get("queued", status_code == 202)), str(body.get("message") or ""),
                   _int(body.get("requested_gpus")),
                   tuple(str(w) for w in warnings) if isinstance(warnings, list) else (), dict(body))


@dataclass(frozen=True)
class JobRow:
    """One job as the console lists it (`row`), with the id to use and whether it has finished.

    `terminal` and `succeeded` are decided by the backend, from the status vocabulary of its side of the wire.
    """

    ref: str
    name: str
    exp: str
    status: str
    terminal: bool
    succeeded: bool
    row: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, row: Mapping[str, Any], *, terminal: bool, succeeded: bool) -> JobRow:
        """Read a `GET /api/jobs/mine` row; `ref` is `job_ref`, else `run_id`."""
        ref = str(row.get("job_ref") or row.get("run_id") or "")
        return cls(ref, str(row.get("name") or ""), str(row.get("exp") or ""), str(row.get("status") or "").lower(),
                   terminal, succeeded, dict(row))

    @property
    def ids(self) -> tuple[str, ...]:
        """Return the ids this job answers to (`job_ref`, `run_id`), without empty ones."""
        return tuple(str(v) for v in (self.row.get("job_ref"), self.row.get("run_id"), self.ref) if v)

    @property
    def exp_name(self) -> str:
        """Return the last segment of the experiment path (`experiments/my-grpo` → `my-grpo`)."""
        return self.exp.rstrip("/").rsplit("/", 1)[-1]

    def to_dict(self) -> dict[str, Any]:
        """Return the row as served, with `ref`, `terminal` and `succeeded` added."""
        return {**self.row, "ref": self.ref, "terminal": self.terminal, "succeeded": self.succeeded}


@dataclass(frozen=True, slots=True)
class MetricValue:
    """The latest reported value of one metric key and the step it was reported at."""

    step: int
    value: float


def latest_metrics(body: Mapping[str, Any]) -> dict[str, MetricValue]:
    """Return the point with the highest step of each key of `{series: {key: [[step, value, ts], …]}}`."""
    series = body.get("series")
    out: dict[str, MetricValue] = {}
    for key, points in sorted(series.items()) if isinstance(series, Mapping) else ():
        best: tuple[int, float] | None = None
        for point in points if isinstance(points, list) else []:
            if not isinstance(point, list | tuple) or len(point) < 2:
                continue
            value = point[1]
            if isinstance(value, bool) or not isinstance(value, int | float):
                continue
            step = _int(point[0], -1)
            if best is None or step >= best[0]:
                best = (step, float(value))
        if best is not None:
            out[str(key)] = MetricValue(max(best[0], 0), best[1])
    return out


@dataclass(frozen=True)
class Stopped:
    """The outcome of a stop: `stopped` false means the job had already finished (with `status`)."""

    ref: str
    stopped: bool
    status: str
    body: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_body(cls, ref: str, body: Mapping[str, Any]) -> Stopped:
        """Read `POST /api/job/stop`'s answer."""
        return cls(ref, bool(body.get("stopped", True)), str(body.get("status") or ""), dict(body))


Stop = Literal["", "size", "time", "event_too_large"]  # why a log window stopped before what exists now


@dataclass(frozen=True)
class LogWindow:
    """A bounded, non-following read of a job's log.

    text: what was read (at most the asked size); status: the job's status ("" when the read did not learn it);
    last_event_id: where to resume (the log stream's event id after `text`; None before anything was read); ended:
    the job is final and nothing follows; cut_bytes/cut_lines: what a tail read left out before `text`; stopped:
    why reading ended before what exists now ("" when it did not).
    """

    text: str
    status: str
    ended: bool
    last_event_id: str | None
    cut_bytes: int = 0
    cut_lines: int = 0
    stopped: Stop = ""
    errors: tuple[str, ...] = ()
