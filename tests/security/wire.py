"""Requests as clients send them: submissions (headers + body), plugin packages, device logins, custom jobs."""

from __future__ import annotations

import copy
import io
import json
import tarfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.integration.conftest import ConsoleProcess
from tests.integration.helpers import bundle, spec_for, submit
from tests.security.consoles import wait_for

__all__ = ["RunningJob", "custom_job_spec", "device_login", "plugin_package", "renamed", "start_running_job",
           "submission"]


def submission(spec: dict[str, Any], *, key: str | None = None, body: bytes | None = None,
               profile: str | None = None) -> tuple[dict[str, str], bytes]:
    """Return the headers and gzip body of `POST /api/jobs` for `spec` (as `sf submit` sends them)."""
    pools = spec["spec"]["resources"]["pools"]
    meta = {
        "exp": spec["spec"]["source"]["exp"],
        "profile": profile or pools[0].get("series") or "cpu",
        "git_commit": "3f2a9c1",
        "git_dirty": False,
        "config_sha": "none",
        "spec": spec,
    }
    headers = {"Content-Type": "application/gzip", "X-Forge-Meta": json.dumps(meta, ensure_ascii=True)}
    if key is not None:
        headers["Idempotency-Key"] = key
    return headers, bundle() if body is None else body


def renamed(spec: dict[str, Any], name: str) -> dict[str, Any]:
    """Return a copy of `spec` for the experiment `experiments/<name>` (so every job can be told apart)."""
    doc = copy.deepcopy(spec)
    doc["metadata"]["name"] = name
    doc["spec"]["source"]["exp"] = f"experiments/{name}"
    return doc


def custom_job_spec(api: httpx.Client, name: str) -> dict[str, Any]:
    """Return a `custom/custom` spec on one CPU slot running `experiments/<name>/train.sh`."""
    spec = spec_for(api, "custom/custom", exp=f"experiments/{name}", series="cpu", gpus=1)
    spec["spec"]["framework"]["image"] = "nvcr.io/team/trainer:1.0"
    spec["spec"]["framework"]["observability_url"] = "https://wandb.example.com/team/p"
    return spec


def plugin_package(name: str, version: str | None = None) -> bytes:
    """Return a valid plugin package (tar.gz with plugin.yaml) for `POST /api/plugins/publish`."""
    files = {
        "plugin.yaml": f"name: {name}\nversion: {version or '1.0.' + str(uuid.uuid4().int % 10**6)}\nsummary: probe\n",
        "hook.py": "VALUE = 1\n",
    }
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(path)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def device_login(console: ConsoleProcess, approver_token: str) -> dict[str, Any]:
    """Run the device flow for the approver's account and return the session (access and refresh tokens)."""
    grant = httpx.post(f"{console.url}/api/cli/device/code", json={}).json()
    approved = httpx.post(f"{console.url}/api/cli/device/approve", json={"user_code": grant["user_code"]},
                          headers={"Authorization": f"Bearer {approver_token}"})
    assert approved.status_code == 200, approved.text
    session = httpx.post(f"{console.url}/api/cli/device/token", json={"device_code": grant["device_code"]})
    assert session.status_code == 200, session.text
    return dict(session.json())


# The job writes the run token the console gave it, then sleeps until stopped (or for 4 minutes at most).
_RUN_SCRIPT = (
    'printf %s "$STARFORGE_TOKEN" > run-token.part && mv run-token.part run-token\n'
    'exec sleep 240\n'
)


@dataclass(frozen=True)
class RunningJob:
    """A long `custom/custom` job of one account: its id, its run token (read from inside the job) and its work dir."""

    job_id: str
    run_token: str
    work: Path

    def stop(self, api: httpx.Client) -> None:
        """Stop the job through the API and wait until the console records it stopped."""
        api.post("/api/job/stop", params={"id": self.job_id})
        wait_for(lambda: api.get("/api/job", params={"id": self.job_id}).json()["status"] == "stopped",
                 what=f"job {self.job_id} to stop", timeout=30)


def start_running_job(console: ConsoleProcess, api: httpx.Client, user: str, name: str = "runner") -> RunningJob:
    """Submit a job that keeps running (one CPU slot) and return it once it has written its run token."""
    response = submit(api, custom_job_spec(api, name), data=bundle({f"experiments/{name}/train.sh": _RUN_SCRIPT}))
    assert response.status_code == 200, response.text
    job_id = response.json()["job_id"]
    work = console.state_dir / "runs" / user / name / job_id / "work"
    token = wait_for(lambda: (work / "run-token").is_file() and (work / "run-token").read_text(),
                     what="the job to write its run token")
    return RunningJob(job_id, token, work)
