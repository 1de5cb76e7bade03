"""The auth matrix's moving parts: who calls (Identity), alice's world on the console, one call and its answer."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.integration.conftest import ConsoleProcess, unique
from tests.security.routes import Route, fill
from tests.security.wire import plugin_package, renamed, submission

__all__ = ["JOB_PARAMS", "NO_SUCH_JOB", "PLUGIN", "Answer", "Call", "Identity", "World", "calls_for", "send"]

JOB_PARAMS = {"ref", "id", "run_id", "job_ref"}
NAMESPACE_PARAMS = {"owner", "username"}
PLUGIN = "probe"
NO_SUCH_JOB = "r-zzzzzzzzzz"


@dataclass(frozen=True)
class Identity:
    """Who calls: the Authorization header sent, and the account behind it (None for strangers)."""

    name: str
    header: str | None
    username: str | None = None
    role: str | None = None
    bare_token: str = ""
    refresh_token: str = ""


@dataclass
class World:
    """The dedicated console with alice's resources and every identity of the matrix."""

    console: ConsoleProcess
    routes: list[Route]
    alice: str
    viewer: str
    tokens: dict[str, str]
    spec: dict[str, Any]
    pending_job: str
    running_job: str
    run_token: str
    identities: dict[str, Identity] = field(default_factory=dict)

    @property
    def job_ids(self) -> tuple[str, str]:
        """Return alice's job ids (never to appear in another account's answers)."""
        return self.pending_job, self.running_job

    def admin(self) -> httpx.Client:
        """Return an administrator's client."""
        return self.console.client(self.console.admin_token)


@dataclass(frozen=True)
class Call:
    """One request of the matrix and what it aims at."""

    route: Route
    target: str            # "alice": alice's job or namespace; "self": the caller's own namespace; "none"
    job: str = ""          # the job id sent (alice's, or NO_SUCH_JOB for the twin)

    @property
    def job_scoped(self) -> bool:
        """Return True when the call names alice's job (the twin names a job that does not exist)."""
        return bool(self.job) and self.job != NO_SUCH_JOB


@dataclass(frozen=True)
class Answer:
    """What came back: status, the body (empty for event streams), and the request line for messages."""

    status: int
    text: str
    line: str

    def detail(self) -> Any:
        """Return the JSON `detail`, or None."""
        try:
            body = json.loads(self.text)
        except ValueError:
            return None
        return body.get("detail") if isinstance(body, dict) else None


def calls_for(route: Route, who: Identity, w: World) -> list[Call]:
    """Return the calls probing `route` for `who`: alice's resources, the caller's own, and a no-such-job twin."""
    params = route.params()
    if params & JOB_PARAMS:
        return [Call(route, "alice", w.pending_job), Call(route, "alice", NO_SUCH_JOB)]
    if params & NAMESPACE_PARAMS:
        own = [Call(route, "self")] if who.username else []
        return [Call(route, "alice"), *own]
    return [Call(route, "none")]


def send(http: httpx.Client, call: Call, who: Identity, w: World, grant: dict[str, Any]) -> Answer:
    """Send one call of the matrix and return the answer (event streams are not read past their headers)."""
    route = call.route
    owner = w.alice if call.target == "alice" else (who.username or w.alice)
    values = {"ref": call.job, "id": call.job, "run_id": call.job, "job_ref": call.job, "owner": owner,
              "username": owner, "name": PLUGIN, "kind": "corpus", "path": "metrics"}
    path = fill(route.path, values)
    query_values = {"id": call.job, "limit": "1000", "all": "true", "role": "admin", "disabled": "true",
                    "owner": owner, "tail": "0", "code": grant["user_code"]}
    query = {k: query_values[k] for k in route.query_params if k in query_values}
    headers = {"Authorization": who.header} if who.header else {}
    content: bytes | None = None
    key = route.key
    if key == ("POST", "/api/jobs"):
        spec = renamed(w.spec, unique("probe"))
        extra, content = submission(spec, key=unique("key"))
        headers.update(extra)
    elif key == ("POST", "/api/plugins/publish"):
        content = plugin_package(PLUGIN)
        headers["Content-Type"] = "application/gzip"
    elif route.mutating:
        fields = {"id": call.job or w.pending_job, "run_id": call.job or w.pending_job, "job_ref": call.job,
                  "username": owner, "role": "admin", "email": "x@example.com", "user_code": grant["user_code"],
                  "device_code": "not-a-device-code", "refresh_token": who.refresh_token or "sfr_not-a-token",
                  "spec": w.spec, "profile": "h200", "enabled": False, "max_concurrent_gpus": 1000,
                  "kind": "corpus", "ref": f"{w.alice}/handbook@v1", "path": "/etc", "visibility": "public",
                  "event": "failed", "points": [{"key": "x", "step": 1, "value": 1.0, "ts": 0}]}
        content = json.dumps(fields).encode()
        headers["Content-Type"] = "application/json"
    with http.stream(route.method, path, params=query, headers=headers, content=content) as response:
        streaming = "text/event-stream" in response.headers.get("content-type", "")
        text = "" if streaming else response.read().decode("utf-8", errors="replace")
    line = f"{route.method} {response.request.url.raw_path.decode()[:140]}"
    return Answer(response.status_code, text, line)
