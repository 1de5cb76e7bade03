"""The API on an in-process console (SQLite, no background loop): routes as adapters over the services, with the
wire answers unchanged — the admitted spec served from its one store, SSE framing, the device flow's status codes."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from starforge.console import operator
from starforge.console.app import bootstrap_admin, create_app
from starforge.console.services.logs.stream import format_event
from starforge.console.settings import load_settings
from starforge.console.store.models import Job


@pytest.fixture()
def console(tmp_path: Path) -> Iterator[tuple[TestClient, Any]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # alembic's, about its own configuration
        app = create_app(load_settings(state_dir=tmp_path, run_background=False, capacity={"cpu": 1},
                                      unplaceable="queue"))  # h200 jobs wait as pending
    rt = app.state.runtime
    bootstrap_admin(rt)
    with TestClient(app) as client:
        yield client, rt
    rt.db.dispose()


def _auth(rt: Any, username: str, role: str = "operator") -> dict[str, str]:
    return {"Authorization": f"Bearer {operator.create_token(rt.db, username, role, create=True)}"}


def _spec(client: TestClient, headers: dict[str, str]) -> dict[str, Any]:
    payload = client.get("/api/recipes", headers=headers).json()
    entry = next(e for e in payload["recipes"] if e["name"] == "tinyrl/grpo")
    return {
        "apiVersion": "forge/v2", "kind": "TrainingJob", "metadata": {"name": "toy", "project": "lab"},
        "spec": {"recipe": {"name": "tinyrl/grpo", "version": entry["version"], "digest": entry["digest"]},
                 "source": {"exp": "experiments/toy"},
                 "framework": {"kind": "tinyrl", "version": "1.0.0", "runtime_id": "tinyrl-1.0.0"},
                 "resources": {"pools": [{"name": "all", "nodes": 1, "gpus_per_node": 8, "series": "h200"}]}},
        "provenance": {"core_version": payload["core"]["version"]},
    }


def _submit(client: TestClient, headers: dict[str, str], spec: dict[str, Any]) -> Any:
    return client.post("/api/jobs", headers=headers, files={"spec": (None, json.dumps(spec))})


def test_the_admitted_spec_is_stored_once_and_served_from_the_database(console: tuple[TestClient, Any]) -> None:
    client, rt = console
    alice = _auth(rt, "alice")
    answer = _submit(client, alice, _spec(client, alice))
    assert answer.status_code == 202 and answer.json()["queued"] is True, answer.text  # no h200 here: pending
    job_id = answer.json()["job_id"]
    served = client.get(f"/api/jobs/{job_id}/jobspec", headers=alice).json()
    assert served["metadata"]["owner"] == "alice"
    with rt.db.read() as db:
        row = db.get(Job, job_id)
        assert row is not None and json.loads(row.spec_json) == served
    assert not (rt.settings.state_dir / "jobs" / job_id / "jobspec.json").exists()


def test_refusals_keep_their_order_and_shape(console: tuple[TestClient, Any]) -> None:
    client, rt = console
    viewer = _auth(rt, "val", "viewer")
    bad_envelope = client.post("/api/jobs", headers=viewer, content=b"")
    assert bad_envelope.status_code == 400  # the envelope is read before the role is checked
    assert bad_envelope.json()["problems"][0]["field"] == "X-Forge-Meta"
    refused = _submit(client, viewer, _spec(client, viewer))
    assert refused.status_code == 403 and refused.json() == {"detail": "viewers can read but not submit jobs",
                                                             "problems": []}
    check = client.post("/api/admission/check", headers=viewer, json={"profile": "cpu"})
    assert check.status_code == 422 and check.json()["problems"][0]["field"] == "spec"
    assert client.post("/api/jobs/cancel-all", headers=viewer).status_code == 403
    assert client.get("/api/admin/users", headers=viewer).json()["detail"] == "administrators only"


def test_a_stopped_job_streams_its_end_event_with_data(console: tuple[TestClient, Any]) -> None:
    client, rt = console
    alice = _auth(rt, "alice")
    job_id = _submit(client, alice, _spec(client, alice)).json()["job_id"]
    assert client.post("/api/job/stop", params={"id": job_id}, headers=alice).json() == {
        "stopped": True, "status": "stopped", "job_ref": job_id}
    stream = client.get("/api/job/logs/stream", params={"id": job_id, "tail": 0}, headers=alice)
    assert stream.headers["content-type"].startswith("text/event-stream")
    assert stream.text == ": stream open\n\nid: 0\nevent: end\ndata: stopped\n\n"
    bad = client.get("/api/job/logs/stream", params={"id": job_id, "from": "x"}, headers=alice)
    assert bad.status_code == 422 and bad.json()["problems"][0]["field"] == "from"
    assert client.get("/api/job/logs/stream", params={"id": job_id}).status_code == 401


def test_log_events_carry_their_own_newlines() -> None:
    assert format_event(b"a\nb\n", 4) == "id: 4\nevent: log\ndata: a\ndata: b\ndata: \n\n"
    assert format_event(b"x\r\ny", 9) == "id: 9\nevent: log\ndata: x\ndata: y\n\n"


def test_the_device_flow_answers_with_its_own_statuses(console: tuple[TestClient, Any]) -> None:
    client, rt = console
    alice = _auth(rt, "alice")
    started = client.post("/api/cli/device/code", json={"device": "not base64 json"}).json()
    assert started["verification_uri"].endswith("/cli/device") and started["interval"] > 0
    pending = client.post("/api/cli/device/token", json={"device_code": started["device_code"]})
    assert pending.status_code == 400 and pending.json() == {"detail": "authorization_pending",
                                                             "error": "authorization_pending"}
    approved = client.post("/api/cli/device/approve", headers=alice, json={"user_code": started["user_code"]})
    assert approved.json() == {"approved": True, "username": "alice", "device": {}}
    session = client.post("/api/cli/device/token", json={"device_code": started["device_code"]}).json()
    assert session["user"] == {"username": "alice", "role": "operator", "email": ""}
    assert session["token_type"] == "Bearer" and session["expires_in"] > 60
    missing = client.post("/api/auth/refresh", json={})
    assert missing.status_code == 422 and missing.json()["problems"][0]["field"] == "refresh_token"
    assert client.post("/api/auth/logout", json={"refresh_token": session["refresh_token"]}).json() == {"ok": True}
    assert client.post("/api/auth/refresh", json={"refresh_token": session["refresh_token"]}).status_code == 401
    page = client.get("/cli/device", params={"code": started["user_code"]}, follow_redirects=False)
    assert page.status_code == 303 and page.headers["location"] == f"/ui/device?code={started['user_code']}"
