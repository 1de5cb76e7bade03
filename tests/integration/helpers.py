"""Helpers for integration tests: specs built from the console's own catalog, bundles, wire submissions."""

from __future__ import annotations

import copy
import json
import time
import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import httpx

from starforge.bundle import BundleFile, pack_bytes

if TYPE_CHECKING:
    from fastapi.testclient import TestClient


def catalog_entry(client: httpx.Client, recipe: str) -> dict[str, Any]:
    """Return the published catalog entry of `recipe`."""
    payload = client.get("/api/recipes").json()
    for entry in payload["recipes"]:
        if entry["name"] == recipe:
            return dict(entry, core=payload["core"])
    raise AssertionError(f"{recipe} is not published")


def spec_for(
    client: httpx.Client,
    recipe: str = "tinyrl/grpo",
    *,
    exp: str = "experiments/toy",
    series: str = "cpu",
    gpus: int = 1,
    nodes: int = 1,
    hyperparams: dict[str, Any] | None = None,
    **spec_extra: Any,
) -> dict[str, Any]:
    """Return a valid JobSpec for `recipe` using the console's published version, digest and runtime id."""
    entry = catalog_entry(client, recipe)
    version = entry["runtime"]["default_version"]
    runtime_id = entry["runtime"]["versions"][version].get("runtime_id", "")
    framework: dict[str, Any] = {"kind": entry["framework"], "version": version}
    if runtime_id:
        framework["runtime_id"] = runtime_id
    doc: dict[str, Any] = {
        "apiVersion": "forge/v2",
        "kind": "TrainingJob",
        "metadata": {"name": exp.rsplit("/", 1)[-1], "project": "it-lab"},
        "spec": {
            "recipe": {"name": recipe, "version": entry["version"], "digest": entry["digest"]},
            "source": {"exp": exp},
            "framework": framework,
            "resources": {"pools": [{"name": "all", "nodes": nodes, "gpus_per_node": gpus, "series": series}]},
        },
        "provenance": {"core_version": entry["core"]["version"], "git_commit": "3f2a9c1", "config_sha": "none"},
    }
    if hyperparams:
        doc["spec"]["hyperparams"] = hyperparams
    doc["spec"].update(copy.deepcopy(spec_extra))
    return doc


def bundle(files: dict[str, bytes | str] | None = None) -> bytes:
    """Return a gzip tar bundle of `{path: content}` (a tiny experiment by default)."""
    files = files or {"experiments/toy/config.yaml": "grpo:\n  max_num_steps: 5\n"}
    members = [BundleFile(name, data.encode() if isinstance(data, str) else data) for name, data in files.items()]
    data, _info = pack_bytes(members)
    return data


def submit(
    client: httpx.Client,
    spec: dict[str, Any],
    *,
    data: bytes | None = None,
    profile: str | None = None,
    key: str | None = None,
    extra_meta: dict[str, Any] | None = None,
) -> httpx.Response:
    """POST /api/jobs exactly as the sf client does (gzip body, X-Forge-Meta, Idempotency-Key)."""
    pools = spec.get("spec", {}).get("resources", {}).get("pools", [{}])
    meta = {
        "exp": spec["spec"]["source"]["exp"],
        "profile": profile or (pools[0].get("series") if pools else "cpu"),
        "git_commit": "3f2a9c1",
        "git_dirty": False,
        "config_sha": "none",
        **(extra_meta or {}),
        "spec": spec,
    }
    body = bundle() if data is None else data
    headers = {
        "Content-Type": "application/gzip",
        "X-Forge-Meta": json.dumps(meta, ensure_ascii=True),
        "Idempotency-Key": key or uuid.uuid4().hex,
    }
    return client.post("/api/jobs", content=body, headers=headers)


ANSWERS = {"submitted": 200, "queued": 202, "pending": 202}  # a job's first status -> the code its submission gets


def admitted(response: httpx.Response, status: str | None = None) -> str:
    """Assert `response` admitted one job, in `status` when given (else in whichever the console's load decided),
    with the code that tells it: 200 for a job that takes capacity at once (`submitted`), 202 for one that waits
    (`queued`, `pending`) with its reason; return the job id."""
    assert response.status_code in (200, 202), response.text
    body = response.json()
    assert body["status"] == (status or body["status"]) and ANSWERS.get(body["status"]) == response.status_code, (
        response.status_code, body)
    assert body["queued"] is (response.status_code == 202) and (body["message"] or not body["queued"]), body
    return str(body["job_id"])


TERMINAL = frozenset({"succeeded", "failed", "stopped"})


def wait_for_status(api: httpx.Client, job: str, statuses: Iterable[str], timeout: float = 120) -> dict[str, Any]:
    """Poll `GET /api/job` until the job's status is one of `statuses`; return its row (AssertionError on timeout)."""
    wanted = set(statuses)
    deadline = time.monotonic() + timeout
    row: dict[str, Any] = {}
    while time.monotonic() < deadline:
        row = dict(api.get("/api/job", params={"id": job}).json())
        if row["status"] in wanted:
            return row
        time.sleep(0.2)
    raise AssertionError(f"job {job} did not reach {sorted(wanted)} within {timeout:.0f} s: {row.get('status')}")


def wait_for_end(api: httpx.Client, job: str, timeout: float = 120) -> dict[str, Any]:
    """Poll `GET /api/job` until the job reaches a final status and return its row (AssertionError on timeout)."""
    return wait_for_status(api, job, TERMINAL, timeout)


def stop_every_service(api: httpx.Client, timeout: float = 120) -> None:
    """Stop the account's services and wait until their jobs have ended: a job outlives its console by design, and a
    service never ends by itself, so a test that leaves one running leaves a model server on the machine."""
    for service in api.get("/api/services", params={"all": "true"}).json()["services"]:
        api.post(f"/api/services/{service['id']}/stop")
        wait_for_end(api, service["id"], timeout)


def forwarding(rest: TestClient) -> httpx.MockTransport:
    """Return an httpx transport that answers every request with the in-process app (whole bodies, no streaming):
    the Python client and MCP's client backend talk to a console without a socket."""

    def handler(request: httpx.Request) -> httpx.Response:
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host", "content-length")}
        answer = rest.request(request.method, request.url.raw_path.decode("ascii"), headers=headers,
                              content=request.read())
        kept = [(k, v) for k, v in answer.headers.multi_items()
                if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")]
        return httpx.Response(answer.status_code, headers=kept, content=answer.content)

    return httpx.MockTransport(handler)
