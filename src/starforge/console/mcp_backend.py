"""The MCP tools' backend on the console: the use cases the REST routes call, run as the authenticated user.

`ServiceBackend` implements `starforge.mcp.Backend` over `services.*` — submissions, job reads, job control, the log
window, account status, the handshake — with the caller's `UserView`, so the permissions and refusals are the REST
API's (a viewer reads but cannot submit or stop, another account's job is a 404). Answers are read into the MCP
package's shapes from the very objects the routes serve, and domain errors become `BackendError`s named by their
HTTP status. Every method blocks (database, files): the tools run them in the worker threadpool.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from starforge.mcp import (
    LOOKUP_LIMIT,
    Account,
    BackendError,
    Cluster,
    Controlled,
    JobRow,
    LogWindow,
    MetricValue,
    Stopped,
    Submitted,
    Usage,
    Verdict,
    kind_for_status,
    latest_metrics,
    resolve_handle,
)

from .services import handshake
from .services.accounts import status as account_status
from .services.accounts.credentials import UserView
from .services.admission.envelope import Envelope
from .services.context import Runtime
from .services.errors import ConsoleError, Rejected
from .services.jobs import control as job_control
from .services.jobs import reads as job_reads
from .services.jobs import submissions
from .services.jobs.rows import TERMINAL
from .services.logs import window as log_window

if TYPE_CHECKING:
    from starforge.recipes import Catalog

__all__ = ["ServiceBackend", "ServiceBackends"]

P = ParamSpec("P")
T = TypeVar("T")


def _translated(method: Callable[P, T]) -> Callable[P, T]:
    """Raise the console's domain errors out of `method` as `BackendError`s (kind from the HTTP status)."""

    @functools.wraps(method)
    def call(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return method(*args, **kwargs)
        except ConsoleError as exc:
            raise BackendError(exc.detail, exc.problems, status=exc.status, kind=kind_for_status(exc.status)) from exc

    return call


def _row(view: Mapping[str, Any]) -> JobRow:
    status = str(view.get("status") or "")
    return JobRow.of(view, terminal=status in TERMINAL, succeeded=status == "succeeded")


class ServiceBackend:
    """A `starforge.mcp.Backend` on this console's services, acting as `user`."""

    def __init__(self, rt: Runtime, user: UserView) -> None:
        self.rt = rt
        self.user = user

    def whoami(self) -> Account:
        """Return the caller's account (as `GET /api/whoami`)."""
        return Account.from_body(account_status.whoami(user=self.user))

    @_translated
    def usage(self) -> Usage:
        """Return the caller's quota and usage (as `GET /api/usage/mine`)."""
        return Usage.from_body(account_status.usage_report(rt=self.rt, user=self.user))

    @_translated
    def cluster_status(self) -> Cluster:
        """Return the profile registry and capacity (as `GET /api/cluster/status`)."""
        return Cluster.from_body(account_status.cluster_report(rt=self.rt))

    def recipes(self) -> dict[str, Any]:
        """Return the served catalog payload (as `GET /api/recipes`)."""
        return handshake.recipes(rt=self.rt)

    def catalog(self) -> Catalog:
        """Return the catalog this console serves (its declarations explain refusals)."""
        served: Catalog = self.rt.catalog
        return served

    @_translated
    def check(self, spec: Mapping[str, Any], profile: str | None) -> Verdict:
        """Return admission's verdict (as `POST /api/admission/check`); a refusal of the request is a verdict."""
        body: dict[str, Any] = {"spec": spec, **({"profile": profile} if profile else {})}
        try:
            return Verdict.from_body(submissions.check(rt=self.rt, user=self.user, body=body))
        except Rejected as exc:
            return Verdict(False, tuple(exc.problems))

    @_translated
    def submit(self, spec: Mapping[str, Any], bundle: bytes | None, *, exp: str | None, profile: str,
               idempotency_key: str) -> Submitted:
        """Admit and commit the submission in the tool shape of `POST /api/jobs` (spec, exp, profile, bundle)."""
        parts: dict[str, bytes | str] = {"spec": json.dumps(spec, ensure_ascii=False), "profile": profile}
        if exp:
            parts["exp"] = exp
        if bundle:
            parts["bundle"] = bundle
        outcome = submissions.submit(rt=self.rt, user=self.user, envelope=Envelope(parts=parts),
                                     idempotency_key=idempotency_key)
        return Submitted.from_body(outcome.body, outcome.status_code)

    @_translated
    def jobs(self, limit: int) -> list[JobRow]:
        """Return the caller's newest jobs (as `GET /api/jobs/mine`)."""
        return [_row(view) for view in job_reads.list_jobs(rt=self.rt, user=self.user, limit=limit)["jobs"]]

    def job(self, handle: str) -> JobRow:
        """Return the job `handle` names among the caller's newest `LOOKUP_LIMIT`."""
        return resolve_handle(self.jobs(LOOKUP_LIMIT), handle)

    @_translated
    def job_detail(self, ref: str) -> JobRow:
        """Return the job with its attempts and queue place (as `GET /api/job`)."""
        return _row(job_reads.show(rt=self.rt, user=self.user, ref=ref))

    @_translated
    def latest_metrics(self, ref: str) -> dict[str, MetricValue]:
        """Return the latest value of each metric (from `GET /api/jobs/{ref}/metrics`)."""
        return latest_metrics(job_reads.metrics(rt=self.rt, user=self.user, ref=ref))

    @_translated
    def read_log(self, ref: str, *, tail: int, from_event_id: str | None, max_bytes: int) -> LogWindow:
        """Return a bounded window of the job's log, with the stream's event ids."""
        read = log_window.read_window(rt=self.rt, user=self.user, ref=ref, tail=tail, resume=from_event_id,
                                      limit=max_bytes)
        return LogWindow(read.text, read.status, read.ended, read.last_event_id, cut_bytes=read.cut_bytes,
                         cut_lines=read.cut_lines, stopped="size" if read.more else "")

    @_translated
    def stop(self, ref: str) -> Stopped:
        """Stop the job (as `POST /api/job/stop`)."""
        return Stopped.from_body(ref, job_control.stop(rt=self.rt, user=self.user, ref=ref))

    @_translated
    def pause(self, ref: str) -> Controlled:
        """Pause the job (as `POST /api/job/pause`)."""
        return Controlled.from_body(ref, "pause", job_control.pause(rt=self.rt, user=self.user, ref=ref))

    @_translated
    def resume(self, ref: str) -> Controlled:
        """Resume the paused job (as `POST /api/job/resume`)."""
        return Controlled.from_body(ref, "resume", job_control.resume(rt=self.rt, user=self.user, ref=ref))

    @_translated
    def retry(self, ref: str) -> Controlled:
        """Retry the failed or stopped job (as `POST /api/job/retry`)."""
        return Controlled.from_body(ref, "retry", job_control.retry(rt=self.rt, user=self.user, ref=ref))

    @_translated
    def jobspec(self, ref: str) -> dict[str, Any]:
        """Return the admitted JobSpec (as `GET /api/jobs/{ref}/jobspec`)."""
        spec: dict[str, Any] = job_reads.jobspec(rt=self.rt, user=self.user, ref=ref)
        return spec


class ServiceBackends:
    """The provider of the console's MCP endpoint: each request's backend acts as the user it authenticated.

    caller: returns the user the endpoint authenticated for a request (it raises for a request it did not).
    """

    def __init__(self, rt: Runtime, caller: Callable[[Any], UserView]) -> None:
        self.rt = rt
        self.caller = caller

    @contextmanager
    def open(self, request: Any) -> Iterator[ServiceBackend]:
        """Yield the backend of the request's caller."""
        yield ServiceBackend(self.rt, self.caller(request))
