"""The web console's pages: each function reads through the same services as the API, as the caller, and returns the
rendered HTML (or, for live updates, the JSON the page's script reads).

Tier: use case (every read goes through a service that owns its transaction; no HTTP here). What the caller may
see is decided by those services and `roles`, exactly as for the API: another account's job is a NotFound.
"""

from __future__ import annotations

import json
import time
from typing import Any

from ...contract import Problem
from ...wire.quota_fields import cap_text
from ..services.accounts import roles
from ..services.accounts import status as account_status
from ..services.accounts.device import PendingLogin
from ..services.benchmarks import reads as bench_reads
from ..services.context import Runtime
from ..services.errors import Rejected
from ..services.jobs import reads as job_reads
from ..services.jobs import run_series
from ..services.jobs.queries import JobRow
from ..services.jobs.rows import ACTIVE, HELD, STATUSES, TERMINAL, WAITING
from . import job_columns as cols
from .charts import Curve, Plot, attempt_marks, line_plot
from .render import render
from .run_words import event_words, failure_words, provenance_parts
from .sessions import WebCaller, local_path

__all__ = [
    "DEFAULT_ROWS",
    "device_page",
    "device_review_page",
    "error_page",
    "frame",
    "job_controls",
    "job_live",
    "job_page",
    "jobs_live",
    "jobs_page",
    "quota_page",
    "recipes_page",
    "rejections_page",
    "signin_page",
]

DEFAULT_ROWS = 200
# what the official client says of a device (wire §4.5), in the order the approval page lists it
_DEVICE_FIELDS = ("user", "hostname", "os", "os_release", "machine", "platform", "terminal", "shell", "cli_version",
                  "source", "device_id")
_MAX_DEVICE_FIELDS = 20


def frame(caller: WebCaller | None, active: str) -> dict[str, Any]:
    """Return the values every page's frame (`base.html`) reads: the caller, the active menu entry, admin or not."""
    return {"caller": caller, "active": active, "is_admin": caller is not None and roles.can_admin(caller.user)}


def signin_page(message: str = "", *, after: str = "/") -> str:
    """Return the sign-in page, with why the last attempt failed (`message`) and the page to show once signed in."""
    return render("signin.html", **frame(None, "signin"), message=message, after=local_path(after))


def error_page(caller: WebCaller | None, status: int, detail: str) -> str:
    """Return the page shown for a refused request: its status and the service's own explanation."""
    return render("error.html", **frame(caller, ""), status=status, detail=detail)


def _job_rows(rt: Runtime, caller: WebCaller, status: str, exp: str, sweep: str,
              limit: int) -> tuple[list[JobRow], list[Problem]]:
    try:  # lean rows: the page shows a few columns of up to 1,000 jobs; a sweep not the caller's is a 404 page
        return job_reads.list_job_rows(rt, user=caller.user, limit=limit, status=status, exp=exp, sweep=sweep), []
    except Rejected as refused:  # a bad filter is shown beside the form, with its hint
        return [], list(refused.problems)


def jobs_page(rt: Runtime, caller: WebCaller, *, status: str = "", exp: str = "", sweep: str = "",
              limit: int = DEFAULT_ROWS) -> str:
    """Return the jobs page: the caller's jobs newest first, filtered by status, experiment and sweep, with their
    duration, primary metric's last value, attempts, a note where the reason says something, sweep and follow-up
    marks, columns the reader may hide, and a form selecting runs for `/ui/compare`."""
    rows, problems = _job_rows(rt, caller, status, exp, sweep, limit)
    heading, named = cols.metric_heading(rows)
    now = time.time()
    return render("jobs.html", **frame(caller, "jobs"), jobs=[cols.line_of(row, now, named=named) for row in rows],
                  problems=problems, statuses=STATUSES, status=status, exp=exp, sweep=sweep, limit=limit,
                  columns={c.key: c.label for c in cols.COLUMNS} | {"metric": heading})


def jobs_live(rt: Runtime, caller: WebCaller, *, status: str = "", exp: str = "", sweep: str = "",
              limit: int = DEFAULT_ROWS) -> dict[str, Any]:
    """Return `{jobs: [{job_ref, status, message, duration, metric, attempts}]}` (`message`: the note the page
    shows) for the jobs page's live updates; the cells read as the page renders them."""
    rows, _problems = _job_rows(rt, caller, status, exp, sweep, limit)
    _heading, named = cols.metric_heading(rows)
    now = time.time()
    return {"jobs": [cols.live_cells(cols.line_of(row, now, named=named)) for row in rows]}


def _job_parts(rt: Runtime, caller: WebCaller, ref: str) -> dict[str, Any]:
    view = job_reads.show(rt, user=caller.user, ref=ref)
    artifacts = job_reads.artifacts(rt, user=caller.user, ref=view["job_ref"])["artifacts"]
    scores = bench_reads.run_summary(rt, user=caller.user, ref=view["job_ref"])["rows"]
    return {"job": view, "artifacts": artifacts, "charts": _job_plots(rt, caller, view), "benchmarks": scores,
            "final": view["status"] in TERMINAL, "failure": failure_words(view),
            "history": [event_words(e) for e in view.get("events") or []]}


def _job_plots(rt: Runtime, caller: WebCaller, view: dict[str, Any]) -> list[Plot]:
    """One chart per metric key of the job (decimated series), each resumed attempt marked at its step."""
    series = run_series.runs_series(rt, user=caller.user, refs=[view["job_ref"]])[view["run_id"]]
    marks = attempt_marks(view.get("attempt_history") or [])
    return [line_plot(key, [Curve(view["name"], view["job_ref"], s)], marks) for key, s in series.items()]


def job_controls(view: dict[str, Any], *, may_control: bool) -> tuple[str, ...]:
    """Return the buttons a job's page offers, in order, for a caller who may control jobs (`roles.can_stop`):
    pause (a waiting or placed job not already pausing), resume (a paused one, or one still pausing), retry (a
    failed or stopped one), stop (any unfinished one). The services still decide; this only hides what would be
    refused or do nothing."""
    if not may_control:
        return ()
    status = view["status"]
    asked = view.get("interrupt") or {}
    pausing = asked.get("kind") == "pause"
    shown = []
    if (status in WAITING or status in ACTIVE) and not pausing:
        shown.append("pause")
    if status in HELD or pausing:
        shown.append("resume")
    if status in ("failed", "stopped"):
        shown.append("retry")
    if status not in TERMINAL:
        shown.append("stop")
    return tuple(shown)


def job_page(rt: Runtime, caller: WebCaller, *, ref: str) -> str:
    """Return a job's page: summary, admission decision with warnings, attempts, status history, live log, metric
    charts (each attempt's start marked), artifacts, follow-up pipeline and, for those allowed, the pause, resume,
    retry and stop buttons (NotFound for a job the caller may not see)."""
    parts = _job_parts(rt, caller, ref)
    ref = parts["job"]["job_ref"]
    spec = job_reads.jobspec(rt, user=caller.user, ref=ref)
    decisions = job_reads.job_admissions(rt, user=caller.user, ref=ref)["admissions"]
    return render("job.html", **frame(caller, "jobs"), **parts, **provenance_parts(rt, caller, ref),
                  decisions=decisions, note=cols.quiet_note(parts["job"]["status"], parts["job"].get("message") or ""),
                  spec=json.dumps(spec, indent=2, sort_keys=True),
                  controls=job_controls(parts["job"], may_control=roles.can_stop(caller.user)))


def job_live(rt: Runtime, caller: WebCaller, *, ref: str) -> dict[str, Any]:
    """Return what a job's page refreshes while it runs: `{status, final, message}`, its charts' data (`plots`: the
    payloads `charts.js` redraws in place, and `no_metrics`: what to say while there are none) and, as HTML, its
    facts, attempts, status history and artifacts."""
    parts = _job_parts(rt, caller, ref)
    job = parts["job"]
    failure = parts["failure"]  # a failed job says why in words; its exit code is a detail of its page
    message = f"Why it failed: {failure['headline']}" if failure else cols.quiet_note(job["status"], job.get("message") or "")
    empty = "This job reported no metrics." if parts["final"] else "No metrics reported yet."
    return {"status": job["status"], "final": parts["final"], "message": message,
            "plots": [plot.payload for plot in parts["charts"]], "no_metrics": empty,
            **{name: render(f"_{name}.html", **parts)
               for name in ("facts", "benchmarks", "attempts", "history", "artifacts")}}


def rejections_page(rt: Runtime, caller: WebCaller, *, limit: int = 50) -> str:
    """Return the caller's recent admission decisions, each problem with its field and hint."""
    decisions = job_reads.admissions(rt, user=caller.user, limit=limit)["admissions"]
    return render("rejections.html", **frame(caller, "rejections"), decisions=decisions)


def quota_page(rt: Runtime, caller: WebCaller) -> str:
    """Return the caller's quota and usage, and the cluster's capacity per series."""
    report = account_status.usage_report(rt, user=caller.user)
    cluster = account_status.cluster_report(rt)
    shown = {key: cap_text(key, value) for key, value in report["quota"].items()}  # as the table says to show it
    return render("quota.html", **frame(caller, "quota"), quota=shown, usage=report["usage"], cluster=cluster)


def recipes_page(rt: Runtime, caller: WebCaller) -> str:
    """Return the served recipe catalog: each recipe with its summary, runtime versions and parameters."""
    return render("recipes.html", **frame(caller, "recipes"), recipes=list(rt.catalog.recipes))


def device_page(caller: WebCaller, *, code: str = "", message: str = "") -> str:
    """Return the first step of approving a CLI device login: the code (as a link filled it in) to look up, and the
    outcome of the last step; nothing is approved from here."""
    return render("device.html", **frame(caller, "device"), code=code[:16], message=message)


def _device_facts(device: dict[str, object]) -> list[tuple[str, str]]:
    known = [k for k in _DEVICE_FIELDS if k in device]
    names = (known + sorted(str(k) for k in device if k not in _DEVICE_FIELDS))[:_MAX_DEVICE_FIELDS]
    facts = []
    for name in names:
        value = device[name]
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
        facts.append((name[:64], text[:200]))
    return facts


def device_review_page(caller: WebCaller, login: PendingLogin) -> str:
    """Return the second step: which device asks (what it says of itself, when and from which address it asked),
    with the buttons approving it for the caller and, when the caller may, denying it."""
    return render("device_review.html", **frame(caller, "device"), login=login, facts=_device_facts(login.device))

