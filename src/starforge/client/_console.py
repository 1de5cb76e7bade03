"""`Console`: the typed client of one StarForge console, used by `sf` and importable by tool writers."""

from __future__ import annotations

import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import quote

import httpx

from ._auth import refresh
from ._config import Credentials, ForgeHome, normalise_server
from ._errors import ConsoleError, NotFound, NotLoggedIn, Rejected, error_from_response
from ._http import Http, query
from ._jobs import Job, find_exact, resolve
from ._logs import follow_logs
from ._meta import build_meta, empty_bundle, encode_meta
from ._models import (
    AdmissionVerdict,
    ClusterStatus,
    Metrics,
    ServerVersion,
    StopResult,
    SubmitResult,
    Usage,
    User,
)
from ._sse import LogEvent
from ._transfer import DOWNLOAD_LIMITS, file_chunks, pack_path, unpack_archive

__all__ = ["Console"]

_LIST_LIMIT = 15
_LOOKUP_LIMIT = 200


def _segment(ref: str) -> str:
    return quote(ref, safe="")


class Console:
    """A client of one console.

    server: the console URL (a trailing `/` is ignored).
    token: a bearer token used as-is (never refreshed); or
    credentials: stored credentials, refreshed before a call once `expires_at` has passed (never after a 401).
    transport: an httpx transport (e.g. `httpx.MockTransport`, `httpx.WSGITransport`) instead of the network.
    home: where refreshed credentials are saved (`Console.from_home` sets it).
    """

    def __init__(
        self,
        server: str,
        token: str | None = None,
        *,
        transport: httpx.BaseTransport | None = None,
        credentials: Credentials | None = None,
        home: ForgeHome | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.server = normalise_server(server)
        self._token = token
        self._credentials = credentials
        self._home = home
        self._clock = clock
        self._sleep = sleep
        self._http = Http(self.server, transport=transport)

    @classmethod
    def from_home(
        cls, server: str | None = None, *, home: ForgeHome | None = None, transport: httpx.BaseTransport | None = None
    ) -> Console:
        """Return a client for the configured console (`server` > FORGE_SERVER > config.json) with stored credentials."""
        home = home or ForgeHome.from_env()
        resolved = home.resolve_server(server)
        return cls(resolved, credentials=home.credentials(resolved), home=home, transport=transport)

    # lifecycle
    def close(self) -> None:
        """Release the connection pool."""
        self._http.close()

    def __enter__(self) -> Console:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    @property
    def credentials(self) -> Credentials | None:
        """Return the credentials in use (after any refresh), or None for a plain token."""
        return self._credentials

    def _bearer(self) -> str:
        if self._token:
            return self._token
        creds = self._credentials
        if creds is None:
            raise NotLoggedIn(f"not logged in to {self.server}", hint=f"run `sf login --server {self.server}`")
        if not creds.expired(self._clock()):
            return creds.access_token
        if self._home is not None:
            creds = self._home.credentials(self.server) or creds  # another `sf` may have refreshed (and rotated) it
        if creds.expired(self._clock()):
            creds = refresh(self._http, creds, clock=self._clock, sleep=self._sleep)
            if self._home is not None:
                self._home.save_credentials(self.server, creds)
        self._credentials = creds
        return creds.access_token

    def _get(self, path: str, *, read_timeout: float | None = None) -> dict[str, Any]:
        return self._http.request("GET", path, token=self._bearer(), read_timeout=read_timeout)

    def _post(self, path: str, body: Any = None) -> dict[str, Any]:
        return self._http.request("POST", path, token=self._bearer(), json_body=body)

    # account and cluster
    def whoami(self) -> User:
        """Return the account behind the token."""
        return User.from_body(self._get("/api/whoami", read_timeout=self._http.timeouts.auth))

    def version(self) -> ServerVersion:
        """Return the console's version and API (no authentication); a 404 means an older console."""
        body = self._http.request("GET", "/api/version", read_timeout=self._http.timeouts.version)
        return ServerVersion(str(body.get("server") or ""), str(body.get("api") or ""), body)

    def cluster_status(self) -> ClusterStatus:
        """Return the profile registry and GPU capacity."""
        return ClusterStatus.from_body(self._get("/api/cluster/status"))

    def usage(self) -> Usage:
        """Return the account's quota and current usage."""
        return Usage.from_body(self._get("/api/usage/mine"))

    def recipes(self) -> dict[str, Any]:
        """Return the recipe catalog payload as served (`forge/recipe-catalog/v2`)."""
        return self._get("/api/recipes")

    def extensions(self) -> list[dict[str, Any]]:
        """Return the declaration packs published to users (`GET /api/extensions?source=user`)."""
        rows = self._get("/api/extensions" + query(source="user")).get("extensions")
        return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []

    def admissions(self) -> list[dict[str, Any]]:
        """Return the account's admission decisions with their problems, newest first."""
        body = self._get("/api/admissions/mine")
        rows = body.get("admissions", body.get("decisions"))
        return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []

    def approve_device_code(self, user_code: str) -> dict[str, Any]:
        """Bind a pending device login's `user_code` to this account (`POST /api/cli/device/approve`)."""
        return self._post("/api/cli/device/approve", {"user_code": user_code.strip()})

    # submission
    def check(self, spec: Mapping[str, Any], profile: str | None = None) -> AdmissionVerdict:
        """Return what admission would decide for `spec` (nothing is stored); a rejection is a verdict, not an error."""
        body: dict[str, Any] = {"spec": spec}
        if profile:
            body["profile"] = profile
        try:
            answer = self._post("/api/admission/check", body)
        except Rejected as exc:
            return AdmissionVerdict(False, list(exc.problems), [], 0, {"detail": exc.detail})
        return AdmissionVerdict.from_body(answer)

    def submit(
        self,
        spec: Mapping[str, Any],
        bundle: bytes | None = None,
        *,
        exp: str | None = None,
        profile: str,
        meta_extra: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> SubmitResult:
        """Upload `bundle` (a gzip tar; empty when None) with `spec` in `X-Forge-Meta`; return the job or raise.

        The request is never retried here; pass the same `idempotency_key` to retry safely (a uuid4 otherwise).
        Raises `Rejected` with `problems` when admission refuses the job.
        """
        meta = build_meta(spec, profile=profile, exp=exp, extra=meta_extra)
        headers = {
            "Content-Type": "application/gzip",
            "X-Forge-Meta": encode_meta(meta),
            "Idempotency-Key": idempotency_key or str(uuid.uuid4()),
        }
        response = self._http.send(
            "POST",
            "/api/jobs",
            token=self._bearer(),
            content=empty_bundle() if bundle is None else bytes(bundle),
            headers=headers,
            read_timeout=self._http.timeouts.submit,
        )
        return SubmitResult.from_body(self._http.object_of(response), response.status_code)

    # jobs
    def jobs(self, limit: int = _LIST_LIMIT, all: bool = False, *, statuses: Sequence[str] = (), exp: str = "",
             since: float | None = None) -> list[Job]:
        """Return the account's jobs, newest first (`all` asks for up to 200): only those of `statuses`, of
        experiment `exp` and submitted since `since` (epoch seconds) when given — filtered by the console."""
        body = self._get("/api/jobs/mine" + query(limit=_LOOKUP_LIMIT if all else max(1, int(limit)),
                                                  status=",".join(statuses) or None, exp=exp or None, since=since))
        rows = body.get("jobs")
        return [Job.from_row(r) for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []

    def resolve_job(self, handle: str) -> Job:
        """Return the one job `handle` names (exact id, exact name, else a unique id/name/exp prefix) among the last 200."""
        return resolve(self.jobs(all=True), handle)

    def job(self, ref: str) -> Job:
        """Return the job whose `job_ref` or `run_id` is exactly `ref`; raise `NotFound` otherwise."""
        found = find_exact(self.jobs(all=True), ref)
        if found is None:
            raise NotFound(f"no job {ref!r} in your last {_LOOKUP_LIMIT} jobs", hint="list them with `sf job ls --all`")
        return found

    def job_detail(self, ref: str) -> Job:
        """Return job `ref` as `GET /api/job` shows it: its row with its status history and, while it waits, its place
        in the queue (`queue_position`, `queue_length`)."""
        return Job.from_row(self._get("/api/job" + query(id=ref)))

    def logs(self, ref: str, *, tail: int = 2000, follow: bool = True, live: bool = True) -> Iterator[LogEvent]:
        """Yield the `log`, `error` and `end` events of job `ref` (resuming after cuts when `follow`), ending at `end`:
        when the job ends, or (without `live`) once what its log holds now was sent."""
        return follow_logs(self._http, ref, self._bearer, tail=tail, follow=follow, sleep=self._sleep, live=live)

    def stop(self, ref: str) -> StopResult:
        """Stop job `ref`; stopping a finished job is not an error (`stopped` is then False)."""
        body = self._post("/api/job/stop" + query(id=ref))
        return StopResult(ref, bool(body.get("stopped", True)), str(body.get("status") or ""), body)

    def cancel_all(self) -> int:
        """Stop every active job of the account and return how many were stopped."""
        stopped = self._post("/api/jobs/cancel-all").get("stopped")
        return stopped if isinstance(stopped, int) and not isinstance(stopped, bool) else 0

    def metrics(self, ref: str) -> Metrics:
        """Return the metric series job `ref` reported (`GET /api/jobs/{ref}/metrics`)."""
        return Metrics.from_body(self._get(f"/api/jobs/{_segment(ref)}/metrics"))

    def artifacts(self, ref: str) -> list[dict[str, Any]]:
        """Return what job `ref` registered: `{kind, path, format, step, size_bytes, ref}` rows, in order."""
        rows = self._get(f"/api/jobs/{_segment(ref)}/artifacts").get("artifacts")
        return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []

    def download_artifact(self, ref: str, path: str, dest: str | Path) -> list[str]:
        """Fetch the artifact `path` of job `ref` (a file or a folder, as a gzip tar) and unpack it safely under
        `dest`, keeping its path inside the run's output folder; return the files written (owner or admin only)."""
        url = f"/api/jobs/{_segment(ref)}/artifacts/download" + query(path=path)
        with tempfile.TemporaryFile() as spool:
            with self._http.stream(url, token=self._bearer()) as response:
                if not response.is_success:
                    response.read()
                    raise error_from_response(response.status_code, response.content)
                received = 0
                for chunk in response.iter_bytes():
                    received += len(chunk)
                    if received > DOWNLOAD_LIMITS.max_bytes:  # checked while receiving: never fill the disk first
                        raise ConsoleError(f"the download of {path!r} is larger than "
                                           f"{DOWNLOAD_LIMITS.max_bytes >> 30} GiB; it was stopped",
                                           hint="fetch the artifact from the console machine instead")
                    spool.write(chunk)
            spool.seek(0)
            return unpack_archive(spool, Path(dest))

    # datasets
    def datasets(self) -> list[dict[str, Any]]:
        """Return the datasets this account may read (own, public, granted), versions newest first."""
        rows = self._get("/api/datasets").get("datasets")
        return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []

    def dataset(self, ref: str) -> dict[str, Any]:
        """Return one dataset version you may read, `owner/name[@version]` (the newest by default):
        `{id, version, visibility, total_bytes, files: [{name, size}], versions}`."""
        head, _, version = ref.partition("@")
        owner, _, name = head.partition("/")
        return self._get(f"/api/datasets/{_segment(owner)}/{_segment(name)}" + query(version=version or None))

    def push_dataset(self, path: str | Path, name: str, version: str, *, public: bool = False,
                     owner: str | None = None) -> dict[str, Any]:
        """Upload the file or folder `path` as dataset `name@version` (in `owner`'s namespace, the caller's by
        default) and return `{ref, id, version, visibility, files, total_bytes}`; a pushed version is immutable
        (re-pushing it raises `ConsoleError` with status 409)."""
        packed = pack_path(Path(path))
        with packed.handle:
            url = "/api/datasets/push" + query(name=name, version=version, owner=owner or None,
                                               visibility="public" if public else "private")
            response = self._http.send("POST", url, token=self._bearer(), content=file_chunks(packed.handle),
                                       headers={"Content-Type": "application/gzip",
                                                "Content-Length": str(packed.size)},
                                       read_timeout=max(self._http.timeouts.submit, 600.0))
            return self._http.object_of(response)

    def jobspec(self, ref: str) -> dict[str, Any]:
        """Return the admitted JobSpec of job `ref`, owner stamped (`GET /api/jobs/{ref}/jobspec`)."""
        body = self._get(f"/api/jobs/{_segment(ref)}/jobspec")
        inner = body.get("jobspec")
        return inner if "apiVersion" not in body and isinstance(inner, dict) else body

    def render(self, ref: str, fmt: str = "kuberay") -> str:
        """Return job `ref` rendered as an engine's document, e.g. its KubeRay RayJob manifest as YAML text
        (`GET /api/jobs/{ref}/render?format=kuberay`)."""
        body = self._get(f"/api/jobs/{_segment(ref)}/render" + query(format=fmt))
        return str(body.get("manifest", ""))
