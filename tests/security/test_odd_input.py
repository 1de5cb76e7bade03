"""Odd input on every route from signed-in callers (administrator, operator, a job's run token): malformed,
wrongly typed, deeply nested or oversized values are refused with a 4xx, never a 5xx, and the console stays up."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from tests.integration.conftest import ConsoleProcess
from tests.security.consoles import Launcher, account, server_errors
from tests.security.routes import Route, app_routes, fill
from tests.security.wire import RunningJob, start_running_job

WRONG_TYPES = (
    b'{"username": 1, "role": [], "email": {}, "enabled": "maybe", "spec": "x", "profile": 3, "user_code": 5,'
    b' "refresh_token": {}, "device_code": [], "device": 7, "max_concurrent_gpus": "lots",'
    b' "max_concurrent_jobs": 1e309, "daily_gpu_hours": -1, "allowed_profiles": "cpu", "priority": "high",'
    b' "kind": 7, "ref": null, "path": 3, "grants": "bob", "visibility": 1, "run_id": 12, "event": {},'
    b' "points": "x", "chunks": [1, 2], "params": [], "nodes": 5, "step": "s", "samples": {}, "version": [1]}'
)
# name -> (body, X-Forge-Meta header); each variant also sends odd query values and odd path segments
VARIANTS: dict[str, tuple[bytes, str]] = {
    "not json": (b"\xff\xfe{not json", "\xff\xfe{not json"),
    "json array": (b"[1, 2]", "[1, 2]"),
    "json null": (b"null", "null"),
    "json string": (b'"text"', '"text"'),
    "wrong types": (WRONG_TYPES, WRONG_TYPES.decode()),
    "deep nesting": (b"[" * 100_000, "[" * 50_000),
    "nan and infinity": (b'{"max_concurrent_gpus": NaN, "step": Infinity, "username": "x"}', '{"exp": NaN}'),
}
ODD_QUERY = {"id": "../../etc/passwd", "limit": "9" * 30, "all": "maybe", "role": "root", "disabled": "perhaps",
             "owner": "..", "version": "../x", "tail": "-5", "from": "not-an-id", "code": "<>&\"'"}
ODD_PATH = {"ref": "r-" + "z" * 300, "username": "u" * 300, "owner": "..", "name": "..", "kind": "..",
            "path": "metrics/../../x"}


@dataclass
class Bench:
    """A console with a running job, and the callers that probe it."""

    console: ConsoleProcess
    routes: list[Route]
    callers: dict[str, str]
    job: RunningJob


@pytest.fixture(scope="module")
def bench(launch_module: Launcher, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bench]:
    console = launch_module("sqlite", {"capacity": {"cpu": 1}, "image_allowlist": ["nvcr.io"],
                                       "stop_grace_seconds": 1})
    user, token = account(console, "odd")
    with console.client(token) as api:
        job = start_running_job(console, api, user)
        try:
            yield Bench(console, app_routes(tmp_path_factory.mktemp("inventory") / "state"),
                        {"admin": console.admin_token, "operator": token, "run-token": job.run_token}, job)
        finally:
            job.stop(api)


def _probe(http: httpx.Client, route: Route, token: str, variant: str, run_id: str) -> tuple[int, str]:
    body, meta = VARIANTS[variant]
    headers = [(b"Authorization", f"Bearer {token}".encode()), (b"X-StarForge-Token", token.encode()),
               (b"Content-Type", b"application/json"), (b"Idempotency-Key", variant.encode()),
               (b"X-Forge-Meta", meta.encode("latin-1"))]  # sent as ISO-8859-1 bytes, like urllib
    if route.path.startswith("/api/ingest/") and variant == "wrong types":
        body = body.replace(b'"run_id": 12', b'"run_id": "' + run_id.encode() + b'"')  # reach past the token check
    content = body if route.mutating else None
    query = {k: v for k, v in ODD_QUERY.items() if k in route.query_params}
    path = fill(route.path, ODD_PATH, "..")
    with http.stream(route.method, path, params=query, headers=headers, content=content) as response:
        text = "" if "text/event-stream" in response.headers.get("content-type", "") else response.read().decode(
            "utf-8", errors="replace")
    return response.status_code, text


@pytest.mark.parametrize("caller", ["admin", "operator", "run-token"])
def test_odd_input_never_gets_a_5xx(bench: Bench, caller: str) -> None:
    errors_before = len(server_errors(bench.console))
    failures: list[str] = []
    sent = 0
    with httpx.Client(base_url=bench.console.url, timeout=30) as http:
        for route in bench.routes:
            for variant in VARIANTS:
                try:
                    status, text = _probe(http, route, bench.callers[caller], variant, bench.job.job_id)
                except httpx.TransportError as exc:
                    failures.append(f"{route.method} {route.path} [{variant}]: no answer ({exc!r})")
                    continue
                sent += 1
                if status >= 500:
                    failures.append(f"{route.method} {route.path} [{variant}]: {status} {text[:120]!r}")
    assert httpx.get(f"{bench.console.url}/api/version").status_code == 200
    logged = server_errors(bench.console)[errors_before:]
    assert not failures, f"{caller}: {len(failures)} of {sent + len(failures)} odd requests failed:\n" + "\n".join(
        failures) + f"\n({len(logged)} unhandled exceptions in the console log)"
