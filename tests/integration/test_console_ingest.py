"""Run tokens: valid only on ingest, only for their own run, and only while the run is alive."""

from __future__ import annotations

import re
import time

import httpx

from tests.integration.conftest import ConsoleProcess, unique
from tests.integration.helpers import bundle, spec_for, submit


def _sleeper(api: httpx.Client, name: str) -> str:
    spec = spec_for(api, "custom/custom", exp=f"experiments/{name}")
    spec["spec"]["framework"].update(image="nvcr.io/t/t:1", observability_url="https://example.com/x")
    script = 'echo "TOKEN=$STARFORGE_TOKEN"\nsleep 120\n'
    return str(submit(api, spec, data=bundle({f"experiments/{name}/train.sh": script})).json()["job_id"])


def _token_from_logs(console: ConsoleProcess, api: httpx.Client, job: str) -> str:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if api.get("/api/job", params={"id": job}).json()["status"] == "running":
            with httpx.stream("GET", f"{console.url}/api/job/logs/stream", params={"id": job, "tail": 0},
                              headers=api.headers, timeout=10) as response:
                for line in response.iter_lines():
                    found = re.search(r"TOKEN=(sfj_\S+)", line)
                    if found:
                        return found.group(1)
        time.sleep(0.2)
    raise AssertionError("the job never printed its token")


def test_run_tokens_are_scoped(console: ConsoleProcess) -> None:
    api = console.client(console.token_for(unique("ing")))
    mine, other = _sleeper(api, "one"), _sleeper(api, "two")
    token = _token_from_logs(console, api, mine)
    ingest = httpx.Client(base_url=f"{console.url}/api/ingest", headers={"X-StarForge-Token": token}, timeout=30)
    point = {"points": [{"key": "train/reward", "step": 1, "value": 0.5, "ts": time.time()}]}
    assert ingest.post("/metrics", json={"run_id": mine, **point}).status_code == 200
    assert ingest.post("/metrics", json={"run_id": other, **point}).status_code == 401
    bearer = httpx.Client(base_url=console.url, headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert bearer.post("/api/ingest/metrics", json={"run_id": mine, **point}).status_code == 200
    assert bearer.get("/api/whoami").status_code == 401  # a run token can do nothing else
    assert bearer.get("/api/jobs/mine").status_code == 401
    assert api.get(f"/api/jobs/{mine}/metrics").json()["latest"] == {"train/reward": 0.5}
    for job in (mine, other):
        api.post("/api/job/stop", params={"id": job})
    deadline = time.monotonic() + 30
    while api.get("/api/job", params={"id": mine}).json()["status"] != "stopped" and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ingest.post("/metrics", json={"run_id": mine, **point}).status_code == 401  # revoked when the run ended
    for client in (ingest, bearer, api):
        client.close()
