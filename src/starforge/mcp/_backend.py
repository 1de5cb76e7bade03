"""The seam every tool runs against: the console operations the tools need, performed as the caller.

Two implementations: over stdio, `starforge.mcp.stdio.ClientBackend` asks a console through the Python SDK with
the credentials of `sf login`; on the console, `starforge.console.mcp_backend.ServiceBackend` calls the console's
own services as the authenticated user. Both return the shapes of `_shapes` and raise `BackendError`, so a tool
never knows which one it runs on, and never decides a rule itself.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from ._shapes import (
    Account,
    Cluster,
    Controlled,
    JobRow,
    LogWindow,
    MetricValue,
    Stopped,
    Submitted,
    Usage,
    Verdict,
)

if TYPE_CHECKING:
    from starforge.recipes import Catalog

__all__ = ["Backend", "BackendProvider", "SharedBackend"]


class Backend(Protocol):
    """The console as one caller sees it; every method is blocking and raises `BackendError` on a refusal."""

    def whoami(self) -> Account:
        """Return the account behind the caller's credentials."""
        ...

    def usage(self) -> Usage:
        """Return the caller's quota caps and current use."""
        ...

    def cluster_status(self) -> Cluster:
        """Return the profile registry, GPU capacity and the active job count."""
        ...

    def recipes(self) -> dict[str, Any]:
        """Return the catalog payload the console publishes (`forge/recipe-catalog/v2`)."""
        ...

    def catalog(self) -> Catalog:
        """Return the recipe declarations to explain with (the served catalog, or the installed one over stdio)."""
        ...

    def check(self, spec: Mapping[str, Any], profile: str | None) -> Verdict:
        """Return admission's verdict on `spec` (nothing is stored); a rejection is a verdict, not an error."""
        ...

    def submit(self, spec: Mapping[str, Any], bundle: bytes | None, *, exp: str | None, profile: str,
               idempotency_key: str) -> Submitted:
        """Submit `spec` with its bundle (a gzip tar; none when None) under an idempotency key."""
        ...

    def jobs(self, limit: int) -> list[JobRow]:
        """Return the caller's newest jobs, newest first."""
        ...

    def job(self, handle: str) -> JobRow:
        """Return the job a handle names (an id, a unique prefix or an experiment name; see `resolve_handle`)."""
        ...

    def job_detail(self, ref: str) -> JobRow:
        """Return job `ref` as `GET /api/job` shows it: its row with its attempts, what the current one resumed
        from and, while it waits, its place in the queue."""
        ...

    def latest_metrics(self, ref: str) -> dict[str, MetricValue]:
        """Return the latest value of each metric job `ref` reported."""
        ...

    def read_log(self, ref: str, *, tail: int, from_event_id: str | None, max_bytes: int) -> LogWindow:
        """Return job `ref`'s log as it is now, never following: the last `tail` lines (0: all) bounded to the
        last `max_bytes`, or at most `max_bytes` after event id `from_event_id`."""
        ...

    def stop(self, ref: str) -> Stopped:
        """Stop job `ref`; a finished job is not an error (`stopped` is then false)."""
        ...

    def pause(self, ref: str) -> Controlled:
        """Pause job `ref` (a running one checkpoints, stops and is held; a waiting one is held at once)."""
        ...

    def resume(self, ref: str) -> Controlled:
        """Put paused job `ref` back in the queue in its place."""
        ...

    def retry(self, ref: str) -> Controlled:
        """Run failed or stopped job `ref` again from its latest checkpoint (any other status: a conflict)."""
        ...

    def jobspec(self, ref: str) -> dict[str, Any]:
        """Return the JobSpec the console admitted for job `ref` (owner stamped)."""
        ...


class BackendProvider(Protocol):
    """Opens the backend of one MCP request; `request` is the HTTP request (None over stdio)."""

    def open(self, request: Any) -> AbstractContextManager[Backend]:
        """Return a context manager yielding the request's backend and releasing it afterwards."""
        ...


class SharedBackend:
    """A provider that hands every request the same backend (stdio: one user, one process)."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    @contextmanager
    def open(self, request: Any) -> Iterator[Backend]:
        """Yield the shared backend; it stays open for the next request."""
        yield self.backend
