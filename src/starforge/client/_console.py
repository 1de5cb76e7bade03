"""`Console`: the typed client of one StarForge console, used by `sf` and importable by tool writers."""

from __future__ import annotations

import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx

from ._auth import refresh
from ._config import Credentials, ForgeHome, normalise_server
from ._errors import ConsoleError, NotFound, NotLoggedIn, Rejected, error_from_response
from ._http import Http, query
from ._jobs import Job, find_exact, pick, resolve
from ._logs import follow_logs
from ._meta import build_meta, empty_bundle, encode_meta
from ._models import (
    AdmissionVerdict,
    ClusterStatus,
    ControlResult,
    Metrics,
    ServerVersion,
    StopResult,
    SubmitResult,
    Usage,
    User,
)
from ._notify import Notify
from ._plugins import check_digest, pack_plugin
from ._serving import Serving
from ._sse import LogEvent
from ._transfer import DOWNLOAD_LIMITS, file_chunks, pack_path, unpack_archive

if TYPE_CHECKING:
    from ..handles import JobPick

__all__ = ["Console"]

_LIST_LIMIT = 15
_PUSH_PATHS = {"dataset": "/api/datasets/push", "corpus": "/api/corpora/push", "model": "/api/models/push"}
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
    def serving(self) -> Serving:
        """The account's inference services: start, list, extend, stop, keys and a streamed chat (`Serving`)."""
        return Serving(self._http, self._bearer)

    @property
    def notify(self) -> Notify:
        """The account's webhooks on job state changes: add, list, remove, the delivery log (`Notify`)."""
        return Notify(self._http, self._bearer)

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

    def console_status(self) -> dict[str, Any]:
        """Return the console process that answered (`this`) and the one leading the scheduler (`leader`, None
        before the first election): console id, host, pid, and the leader's fencing `epoch` and heartbeat."""
        return self._get("/api/console")

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
    def check(self, spec: Mapping[str, Any], profile: str | None = None, *,
              allow_pending: bool = False) -> AdmissionVerdict:
        """Return what admission would decide for `spec` (nothing is stored); a rejection is a verdict, not an error.
        `allow_pending`: as `submit`'s."""
        body: dict[str, Any] = {"spec": spec}
        if profile:
            body["profile"] = profile
        if allow_pending:
            body["allow_pending"] = True
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
        allow_pending: bool = False,
    ) -> SubmitResult:
        """Upload `bundle` (a gzip tar; empty when None) with `spec` in `X-Forge-Meta`; return the job or raise.

        The request is never retried here; pass the same `idempotency_key` to retry safely (a uuid4 otherwise).
        Raises `Rejected` with `problems` when admission refuses the job; a profile no capacity of the deployment
        serves is refused too, unless `allow_pending` lets the job wait (`pending`) until an operator adds some.
        """
        meta = build_meta(spec, profile=profile, exp=exp, extra=meta_extra, allow_pending=allow_pending)
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
             since: float | None = None, sweep: str = "") -> list[Job]:
        """Return the account's jobs, newest first (`all` asks for up to 200): only those of `statuses`, of
        experiment `exp`, submitted since `since` (epoch seconds) and of sweep `sweep` when given — filtered by the
        console (a sweep that is not yours raises `NotFound`)."""
        body = self._get("/api/jobs/mine" + query(limit=_LOOKUP_LIMIT if all else max(1, int(limit)),
                                                  status=",".join(statuses) or None, exp=exp or None, since=since,
                                                  sweep=sweep or None))
        rows = body.get("jobs")
        return [Job.from_row(r) for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []

    def resolve_job(self, handle: str) -> Job:
        """Return the job `handle` names among your last 200: an exact id, else the newest job of an exact
        experiment or job name, else a unique prefix of an id or a name (`starforge.handles`)."""
        return resolve(self.jobs(all=True), handle)

    def pick_job(self, handle: str) -> JobPick[Job]:
        """Return what `resolve_job` decides with its reason: the job, every job the handle matched (newest first)
        and `by_name` when they share it as their name (the newest was taken)."""
        return pick(self.jobs(all=True), handle)

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
        return StopResult.from_body(ref, body)

    def pause(self, ref: str) -> ControlResult:
        """Pause job `ref` (`POST /api/job/pause`): a waiting job is held at once; a running one is asked to save a
        checkpoint and stop, then held (`paused`), keeping its place in the queue until `resume`."""
        return ControlResult.from_body(ref, "pause", self._post("/api/job/pause" + query(id=ref)))

    def resume(self, ref: str) -> ControlResult:
        """Put paused job `ref` back in the queue in its place (`POST /api/job/resume`), or cancel a pause that is
        still under way."""
        return ControlResult.from_body(ref, "resume", self._post("/api/job/resume" + query(id=ref)))

    def retry(self, ref: str) -> ControlResult:
        """Run failed or stopped job `ref` again, as the same job, from its latest checkpoint (`POST
        /api/job/retry`); any other status raises `ConsoleError` (409) with the console's reason."""
        return ControlResult.from_body(ref, "retry", self._post("/api/job/retry" + query(id=ref)))

    def cancel_all(self) -> int:
        """Stop every active job of the account and return how many were stopped."""
        stopped = self._post("/api/jobs/cancel-all").get("stopped")
        return stopped if isinstance(stopped, int) and not isinstance(stopped, bool) else 0

    # sweeps
    def submit_sweep(self, points: Sequence[Mapping[str, Any]], bundle: bytes | None = None, *, exp: str,
                     profile: str, meta_extra: Mapping[str, Any] | None = None, max_parallel: int = 0,
                     allow_pending: bool = False) -> dict[str, Any]:
        """Submit one sweep as one decision (`POST /api/sweeps`): `points` are `{params, spec}` objects (the point's
        values as typed, and its JobSpec), sharing one `bundle`; return `{sweep_id, exp, profile, max_parallel,
        jobs: [{job_id, run_id, params, status, queued, message, warnings}]}`. Raises `Rejected` naming
        `points[i]…` when any point is refused (then nothing was submitted)."""
        meta = build_meta({}, profile=profile, exp=exp, extra=meta_extra, allow_pending=allow_pending)
        meta.pop("spec", None)
        doc = {**meta, "max_parallel": int(max_parallel), "points": [dict(p) for p in points]}
        encoded = httpx.Request("POST", self.server, files={
            "sweep": ("sweep.json", encode_meta(doc).encode("ascii"), "application/json"),
            "bundle": ("bundle.tar.gz", empty_bundle() if bundle is None else bytes(bundle), "application/gzip")})
        response = self._http.send("POST", "/api/sweeps", token=self._bearer(), content=encoded.read(),
                                   headers={"Content-Type": encoded.headers["Content-Type"]},
                                   read_timeout=self._http.timeouts.submit)
        return self._http.object_of(response)

    def sweeps(self, limit: int = 50) -> list[dict[str, Any]]:
        """Return your sweeps, newest first: `[{sweep_id, exp, profile, max_parallel, created_at, jobs, statuses}]`."""
        rows = self._get("/api/sweeps" + query(limit=max(1, int(limit)))).get("sweeps")
        return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []

    def sweep(self, sweep_id: str, metric: str = "") -> dict[str, Any]:
        """Return sweep `sweep_id` with its runs ranked by `metric` (the recipe's first primary metric by default):
        `{sweep_id, keys, metric, direction, best, statuses, runs: [{job_id, status, params, metrics, value, rank,
        best}]}`; a sweep that is not yours raises `NotFound`."""
        return self._get(f"/api/sweeps/{_segment(sweep_id)}" + query(metric=metric or None))

    def stop_sweep(self, sweep_id: str) -> dict[str, Any]:
        """Stop every unfinished job of sweep `sweep_id`: `{stopped, failed: [{id, error}]}`."""
        return self._post(f"/api/sweeps/{_segment(sweep_id)}/stop")

    def metrics(self, ref: str) -> Metrics:
        """Return the metric series job `ref` reported (`GET /api/jobs/{ref}/metrics`)."""
        return Metrics.from_body(self._get(f"/api/jobs/{_segment(ref)}/metrics"))

    def artifacts(self, ref: str) -> list[dict[str, Any]]:
        """Return what job `ref` registered: `{kind, path, format, step, size_bytes, ref}` rows, in order."""
        rows = self._get(f"/api/jobs/{_segment(ref)}/artifacts").get("artifacts")
        return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []

    def followup(self, ref: str, action: str, *, benchmarks: Sequence[str] | None = None,
                 profile: str | None = None) -> SubmitResult:
        """Queue the lifecycle `action` (export, eval) on your succeeded run `ref`, as `--then` would have; the
        result's `raw` also holds `parent` and `checkpoint`. Raises `NotFound` (not your job) or `Rejected` (not
        succeeded, no checkpoint, an action its recipe lacks)."""
        body: dict[str, Any] = {"action": action}
        if benchmarks is not None:
            body["benchmarks"] = list(benchmarks)
        if profile:
            body["profile"] = profile
        return SubmitResult.from_body(self._post(f"/api/jobs/{_segment(ref)}/followups", body), 202)

    def clean(self, exp: str) -> dict[str, Any]:
        """Delete the run folders of your finished jobs of experiment `exp` (checkpoints, exports and logs); return
        `{exp, cleaned, skipped, files, bytes, message}`. Active jobs are skipped and listed in `skipped`."""
        return self._post("/api/clean" + query(exp=exp))

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
        return self._rows("/api/datasets", "datasets")

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
        return self.push_asset("dataset", path, name, version, public=public, owner=owner)

    def push_asset(self, kind: str, path: str | Path, name: str, version: str, *, public: bool = False,
                   owner: str | None = None, description: str = "") -> dict[str, Any]:
        """Upload the file or folder `path` as a new `kind` version `name@version` (kind: dataset, corpus or model;
        in `owner`'s namespace, the caller's by default) and return `{ref, id, version, visibility, files,
        total_bytes}`; versions are immutable (re-pushing one raises `ConsoleError` with status 409)."""
        if kind not in _PUSH_PATHS:
            raise ValueError(f"kind must be one of {', '.join(_PUSH_PATHS)}, not {kind!r}")
        packed = pack_path(Path(path))
        with packed.handle:
            url = _PUSH_PATHS[kind] + query(name=name, version=version, owner=owner or None,
                                            visibility="public" if public else "private",
                                            description=description or None)
            response = self._http.send("POST", url, token=self._bearer(), content=file_chunks(packed.handle),
                                       headers={"Content-Type": "application/gzip",
                                                "Content-Length": str(packed.size)},
                                       read_timeout=max(self._http.timeouts.submit, 600.0))
            return self._http.object_of(response)

    def models(self) -> list[dict[str, Any]]:
        """Return the models this account may use (own, public, granted): `[{id, versions (a count), version_names
        (newest first), latest, visibility, description, production}]`."""
        return self._rows("/api/models", "models")

    def model(self, ref: str) -> dict[str, Any]:
        """Return one model you may use, `owner/name`: `{id, description, visibility, versions: [{version, stage,
        description, files, total_bytes, created_at, …}]}`."""
        owner, _, name = ref.partition("@")[0].partition("/")
        return self._get(f"/api/models/{_segment(owner)}/{_segment(name)}")

    def corpora(self) -> list[dict[str, Any]]:
        """Return the corpora this account may read: `[{id, visibility, versions, latest, description}]`."""
        return self._rows("/api/corpora", "corpora")

    def volumes(self) -> list[dict[str, Any]]:
        """Return the volumes this account may mount: `[{id, visibility, versions, allow_download, allow_preview,
        description}]`."""
        return self._rows("/api/volumes", "volumes")

    def _rows(self, path: str, key: str) -> list[dict[str, Any]]:
        rows = self._get(path).get(key)
        return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []

    def jobspec(self, ref: str) -> dict[str, Any]:
        """Return the admitted JobSpec of job `ref`, owner stamped (`GET /api/jobs/{ref}/jobspec`)."""
        body = self._get(f"/api/jobs/{_segment(ref)}/jobspec")
        inner = body.get("jobspec")
        return inner if "apiVersion" not in body and isinstance(inner, dict) else body

    def inputs(self, ref: str) -> dict[str, Any]:
        """Return what run `ref` is made of (`GET /api/jobs/{ref}/inputs`)."""
        return self._get(f"/api/jobs/{_segment(ref)}/inputs")

    def lineage(self, ref: str) -> dict[str, Any]:
        """Return run `ref`'s parents and children, yours only (`GET /api/jobs/{ref}/lineage`)."""
        return self._get(f"/api/jobs/{_segment(ref)}/lineage")

    def diff(self, a: str, b: str) -> dict[str, Any]:
        """Return why runs `a` and `b` differ: `{summary, identical, sections, files, metrics}`
        (`GET /api/jobs/{a}/diff/{b}`)."""
        return self._get(f"/api/jobs/{_segment(a)}/diff/{_segment(b)}")

    def render(self, ref: str, fmt: str = "kuberay") -> str:
        """Return job `ref` rendered as an engine's document, e.g. its KubeRay RayJob manifest as YAML text
        (`GET /api/jobs/{ref}/render?format=kuberay`)."""
        body = self._get(f"/api/jobs/{_segment(ref)}/render" + query(format=fmt))
        return str(body.get("manifest", ""))

    # benchmarks
    def benchmark_suites(self) -> list[dict[str, Any]]:
        """Return the benchmark suites this console offers: `{name, pack, pack_version, digest, metrics,
        description, builtin}`, by name."""
        rows = self._get("/api/benchmarks").get("suites")
        return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []

    def benchmarks(self, ref: str) -> list[dict[str, Any]]:
        """Return the benchmark scores run `ref` reported: `{benchmark, metric, value, stderr, repeat, runner,
        model}`."""
        rows = self._get(f"/api/jobs/{_segment(ref)}/benchmarks").get("benchmarks")
        return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []

    def compare_benchmarks(self, runs: Sequence[str]) -> dict[str, Any]:
        """Return the console's comparison of `runs` (the first is the baseline): `{runs, baseline, rows: [{benchmark,
        metric, higher_is_better, runs: [{run_id, n, mean, spread, values, delta, verdict, note}]}]}`."""
        return self._get("/api/benchmarks/compare" + query(runs=",".join(runs)))

    # plugins
    def plugins(self) -> list[dict[str, Any]]:
        """Return every published plugin with its latest version: `{id, kind, latest_version, enabled, summary}`."""
        rows = self._get("/api/plugins").get("plugins")
        return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []

    def plugin(self, owner: str, name: str, version: str | None = None) -> dict[str, Any]:
        """Return one plugin version (the latest by default): `{id, version, kind, summary, enabled, digest, …}`."""
        return self._get(f"/api/plugins/{_segment(owner)}/{_segment(name)}" + query(version=version or None))

    def publish_plugin(self, path: str | Path, *, owner: str | None = None) -> dict[str, Any]:
        """Publish the plugin folder `path` (with its plugin.yaml) under `owner` (the caller's namespace by default)
        and return `{id, version, kind, digest, size_bytes}`; versions are immutable (409 on a re-publish), and an
        answer whose digest differs from the folder's own raises `ConsoleError`."""
        packed = pack_plugin(Path(path))
        response = self._http.send("POST", "/api/plugins/publish" + query(owner=owner or None), token=self._bearer(),
                                   content=packed.data, headers={"Content-Type": "application/gzip"},
                                   read_timeout=self._http.timeouts.submit)
        answer = self._http.object_of(response)
        check_digest(packed, answer)
        return answer

    def set_plugin_enabled(self, owner: str, name: str, enabled: bool, *, version: str | None = None) -> dict[str, Any]:
        """Enable or disable a plugin (every version, or `version`): `{id, versions_affected}` (owner or admin)."""
        body: dict[str, Any] = {"enabled": enabled, **({"version": version} if version else {})}
        return self._http.request("PATCH", f"/api/plugins/{_segment(owner)}/{_segment(name)}", token=self._bearer(),
                                  json_body=body)

    # administration (an administrator's token; anyone else gets Forbidden)
    def admin_users(self) -> list[dict[str, Any]]:
        """Return every account: `{id, username, role, email, disabled, auth_source}`."""
        rows = self._get("/api/admin/users").get("users")
        return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []

    def admin_create_user(self, username: str, *, role: str | None = None, email: str | None = None) -> dict[str, Any]:
        """Create an account and return `{user, token}` (its first API token, shown once)."""
        body = {"username": username, **({"role": role} if role else {}), **({"email": email} if email else {})}
        return self._post("/api/admin/users", body)

    def admin_set_role(self, username: str, role: str) -> dict[str, Any]:
        """Change an account's role and return the account."""
        return self._http.request("PATCH", f"/api/admin/users/{_segment(username)}/role" + query(role=role),
                                  token=self._bearer())

    def admin_set_disabled(self, username: str, disabled: bool) -> dict[str, Any]:
        """Disable an account (its tokens revoked, its jobs stopped) or enable it again; return the account."""
        return self._http.request("PATCH", f"/api/admin/users/{_segment(username)}/disabled"
                                  + query(disabled=disabled), token=self._bearer())

    def admin_quota(self, username: str) -> dict[str, Any]:
        """Return an account's quota `{username, max_concurrent_gpus, max_concurrent_jobs, daily_gpu_hours, …}`."""
        return self._get(f"/api/admin/quotas/{_segment(username)}")

    def admin_set_quota(self, username: str, values: Mapping[str, Any]) -> dict[str, Any]:
        """Set the given quota keys of an account (the others keep their value) and return its whole quota."""
        return self._post("/api/admin/quotas", {**values, "username": username})

    def admin_create_token(self, username: str, *, name: str | None = None,
                           expires_in: float | None = None) -> dict[str, Any]:
        """Create an API token for an account, expiring after `expires_in` seconds (never by default); the answer's
        `token` is the secret, shown this once."""
        body = {"username": username, **({"name": name} if name else {}),
                **({"expires_in": expires_in} if expires_in is not None else {})}
        return self._post("/api/admin/tokens", body)

    def admin_tokens(self, username: str) -> list[dict[str, Any]]:
        """Return an account's API tokens as metadata: `{id, name, status, created_at, expires_at, …}`."""
        rows = self._get("/api/admin/tokens" + query(username=username)).get("tokens")
        return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []

    def admin_revoke_token(self, token_id: int | str) -> dict[str, Any]:
        """Revoke an API token by id (refused from its next request on) and return its metadata."""
        return self._http.request("DELETE", f"/api/admin/tokens/{_segment(str(token_id))}", token=self._bearer())

    def admin_shares(self) -> dict[str, Any]:
        """Return every account's fair share (`GET /api/admin/shares`): `{fair_share: {...}, shares: [{username,
        weight, share, usage_gpu_hours, allocated, borrowed, waiting_jobs}]}`."""
        return self._get("/api/admin/shares")

    def admin_set_share(self, username: str, weight: float) -> dict[str, Any]:
        """Set an account's fair-share weight (`PUT /api/admin/shares/{username}` `{weight}`)."""
        return self._http.request("PUT", f"/api/admin/shares/{_segment(username)}", token=self._bearer(),
                                  json_body={"weight": weight})

    def admin_maintenance(self) -> dict[str, Any]:
        """Return maintenance mode: `{maintenance_mode, note, blockers[], remaining_active, safe_to_restart, …}`."""
        return self._get("/api/admin/maintenance")

    def admin_maintenance_drain(self, note: str | None = None) -> dict[str, Any]:
        """Turn maintenance mode on (new work refused, running jobs run on, queued jobs wait); return the state."""
        return self._post("/api/admin/maintenance/drain", {"note": note} if note else {})

    def admin_maintenance_resume(self) -> dict[str, Any]:
        """Turn maintenance mode off; return `{resuming: true}` with the state."""
        return self._post("/api/admin/maintenance/resume", {})
