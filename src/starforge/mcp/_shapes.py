"""The plain results a backend returns, read from the console's wire bodies, so both backends give the same data.

Each shape is a frozen dataclass of standard types and contract values (`Problem`, `ProfileEntry`); a `from_body`
reads the JSON object the console serves for it (the REST answer over stdio, the same object from the service on
the console) through `starforge.wire`'s reader of that body, the one the Python client uses too. None of them is a
client model, an ORM row or a service view.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from starforge.contract import Problem, ProfileEntry
from starforge.wire import (
    read_account,
    read_cluster,
    read_control,
    read_job_row,
    read_metrics,
    read_stopped,
    read_submitted,
    read_usage,
    read_verdict,
)

__all__ = [
    "Account",
    "Cluster",
    "Controlled",
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


@dataclass(frozen=True)
class Account:
    """The account behind the caller's credentials."""

    username: str
    role: str = ""

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Account:
        """Read `{"user": {...}, "username": …}` (`GET /api/whoami`) or a bare user object."""
        read = read_account(body)
        return cls(read.username, read.role)


@dataclass(frozen=True)
class Usage:
    """The account's quota caps and current use, as the console reports them."""

    quota: dict[str, Any]
    usage: dict[str, Any]

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Usage:
        """Read `{"quota": {...}, "usage": {...}}` (`GET /api/usage/mine`)."""
        read = read_usage(body)
        return cls(read.quota, read.usage)


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
        read = read_cluster(body)
        return cls(read.profiles, read.total, read.used, read.free, read.queued, read.active_count, dict(body))


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
        read = read_verdict(body)
        return cls(read.ok, read.problems, read.warnings, read.requested_gpus)


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
        read = read_submitted(body, status_code)
        return cls(read.job_id, read.run_id, read.queued, read.message, read.requested_gpus, read.warnings,
                   dict(body))


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
        read = read_job_row(row)
        return cls(read.ref, read.name, read.exp, read.status, terminal, succeeded, dict(row))

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
    """Return the point with the highest step of each key of the metrics body (`wire.read_metrics`: on a tie, the
    one served last)."""
    return {key: MetricValue(points[-1].step, points[-1].value) for key, points in read_metrics(body).items() if points}


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
        read = read_stopped(body)
        return cls(ref, read.stopped, read.status, dict(body))


@dataclass(frozen=True)
class Controlled:
    """The outcome of a pause, resume or retry (`action`): `done` false means there was nothing to do, and
    `status` says why."""

    ref: str
    action: str
    done: bool
    status: str
    message: str = ""
    body: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_body(cls, ref: str, action: str, body: Mapping[str, Any]) -> Controlled:
        """Read `POST /api/job/{action}`'s answer."""
        read = read_control(body, action)
        return cls(ref, action, read.done, read.status, read.message, dict(body))


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
