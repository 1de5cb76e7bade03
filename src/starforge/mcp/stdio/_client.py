"""The stdio backend: the tools' operations through the Python SDK (`starforge.client.Console`), as `sf` would.

Every call goes to the console's REST API with the caller's credentials, so an agent has exactly the permissions
of a person using `sf` with the same login; the client's errors become `BackendError`s of the same kinds.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from starforge.client import Console, ConsoleError

from .._errors import BackendError
from .._handles import LOOKUP_LIMIT, resolve_handle
from .._shapes import (
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
    latest_metrics,
)
from ._window import Network, network_transport, read_window

if TYPE_CHECKING:
    from starforge.recipes import Catalog

__all__ = ["ClientBackend", "Connect", "translated"]

Connect = Callable[[httpx.BaseTransport | None], Console]


@contextmanager
def translated() -> Iterator[None]:
    """Turn the client's errors raised inside the block into `BackendError`s (kind: the client's error class)."""
    try:
        yield
    except ConsoleError as exc:
        raise BackendError(exc.title, exc.problems, hint=exc.hint, status=exc.status, detail=exc.detail,
                           kind=type(exc).__name__) from exc


def _installed_catalog() -> Catalog:
    from starforge.lab import client_catalog

    return client_catalog()


class ClientBackend:
    """A `Backend` on a console's REST API.

    connect: returns a client of the console with the caller's credentials; given a transport, the client sends
    through it (the log window's), otherwise through the network.
    network: the transport under the log window, chosen per URL (proxies included).
    lab: the lab root the lab tools work in, or None.
    catalog: returns the recipe declarations to explain with (default: the installed catalog, with overlays).
    """

    def __init__(self, connect: Connect, *, network: Network = network_transport, lab: Path | None = None,
                 catalog: Callable[[], Catalog] = _installed_catalog) -> None:
        self._connect = connect
        self._network = network
        self.lab = lab
        self._catalog = functools.cache(catalog)
        self._console: Console | None = None

    @property
    def console(self) -> Console:
        """Return the shared client, connecting on first use (its errors surface as the tool's error)."""
        if self._console is None:
            self._console = self._connect(None)
        return self._console

    def close(self) -> None:
        """Close the shared client, if one was opened."""
        if self._console is not None:
            self._console.close()
            self._console = None

    @translated()
    def whoami(self) -> Account:
        """Return the account behind the token (`GET /api/whoami`)."""
        return Account.from_body(dict(self.console.whoami().raw))

    @translated()
    def usage(self) -> Usage:
        """Return the quota and usage (`GET /api/usage/mine`)."""
        return Usage.from_body(self.console.usage().raw)

    @translated()
    def cluster_status(self) -> Cluster:
        """Return the profile registry and capacity (`GET /api/cluster/status`)."""
        return Cluster.from_body(self.console.cluster_status().raw)

    @translated()
    def recipes(self) -> dict[str, Any]:
        """Return the published catalog payload (`GET /api/recipes`)."""
        return self.console.recipes()

    def catalog(self) -> Catalog:
        """Return the installed catalog (cached; raises ValueError or OSError for a broken tree)."""
        return self._catalog()

    @translated()
    def check(self, spec: Mapping[str, Any], profile: str | None) -> Verdict:
        """Return admission's verdict (`POST /api/admission/check`)."""
        verdict = self.console.check(spec, profile or None)
        return Verdict(verdict.ok, tuple(verdict.problems), tuple(verdict.warnings), verdict.requested_gpus)

    @translated()
    def submit(self, spec: Mapping[str, Any], bundle: bytes | None, *, exp: str | None, profile: str,
               idempotency_key: str) -> Submitted:
        """Upload the submission as `sf submit` does (`POST /api/jobs`, gzip body and `X-Forge-Meta`)."""
        result = self.console.submit(spec, bundle, exp=exp, profile=profile, idempotency_key=idempotency_key)
        return Submitted.from_body(result.raw, 202 if result.queued else 200)

    @translated()
    def jobs(self, limit: int) -> list[JobRow]:
        """Return the caller's newest jobs (`GET /api/jobs/mine`)."""
        return [JobRow.of(j.raw, terminal=j.terminal, succeeded=j.succeeded) for j in self.console.jobs(limit=limit)]

    def job(self, handle: str) -> JobRow:
        """Return the job `handle` names among the newest `LOOKUP_LIMIT`."""
        return resolve_handle(self.jobs(LOOKUP_LIMIT), handle)

    @translated()
    def job_detail(self, ref: str) -> JobRow:
        """Return the job with its attempts and queue place (`GET /api/job`)."""
        found = self.console.job_detail(ref)
        return JobRow.of(found.raw, terminal=found.terminal, succeeded=found.succeeded)

    @translated()
    def latest_metrics(self, ref: str) -> dict[str, MetricValue]:
        """Return the latest value of each metric (`GET /api/jobs/{ref}/metrics`)."""
        return latest_metrics(self.console.metrics(ref).raw)

    @translated()
    def read_log(self, ref: str, *, tail: int, from_event_id: str | None, max_bytes: int) -> LogWindow:
        """Return a bounded window of the log stream (`GET /api/job/logs/stream`), never following."""
        return read_window(self._connect, self._network, ref, tail=tail, from_event_id=from_event_id,
                           max_bytes=max_bytes)

    @translated()
    def stop(self, ref: str) -> Stopped:
        """Stop the job (`POST /api/job/stop`)."""
        return Stopped.from_body(ref, self.console.stop(ref).raw)

    @translated()
    def pause(self, ref: str) -> Controlled:
        """Pause the job (`POST /api/job/pause`)."""
        return Controlled.from_body(ref, "pause", self.console.pause(ref).raw)

    @translated()
    def resume(self, ref: str) -> Controlled:
        """Resume the paused job (`POST /api/job/resume`)."""
        return Controlled.from_body(ref, "resume", self.console.resume(ref).raw)

    @translated()
    def retry(self, ref: str) -> Controlled:
        """Retry the failed or stopped job (`POST /api/job/retry`)."""
        return Controlled.from_body(ref, "retry", self.console.retry(ref).raw)

    @translated()
    def jobspec(self, ref: str) -> dict[str, Any]:
        """Return the admitted JobSpec (`GET /api/jobs/{ref}/jobspec`)."""
        return self.console.jobspec(ref)
