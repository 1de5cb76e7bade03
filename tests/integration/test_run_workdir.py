"""`GET /api/runs/{run_id}/workdir`: an engine whose nodes do not share the console's disk fetches a running job's
prepared work folder with the run's own token — no other token opens it, and nothing outside the folder leaks.

An in-process console (the real app over its ASGI interface, SQLite, no background loops): the job row is placed
and its work folder prepared by hand, as the scheduler would.
"""

from __future__ import annotations

import io
import tarfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from starforge.console.app import bootstrap_admin, build_console, create_app
from starforge.console.services.accounts import credentials as accounts
from starforge.console.settings import Settings
from starforge.console.store.models import Job
from tests.integration.helpers import spec_for, submit


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, Any]]:
    state = Path(tmp_path_factory.mktemp("workdir")) / "state"
    settings = Settings(state_dir=state, capacity={"cpu": 2}, run_background=False)
    built = build_console(settings)
    rt = built.runtime
    admin = bootstrap_admin(rt)
    with TestClient(create_app(settings, built)) as client:
        made = client.post("/api/admin/users", json={"username": f"u{uuid.uuid4().hex[:8]}"},
                           headers={"Authorization": f"Bearer {admin}"})
        client.headers["Authorization"] = f"Bearer {made.json()['token']}"
        yield client, rt


def _running_job(console: tuple[TestClient, Any], tmp: Path) -> tuple[str, str, Path]:
    """Admit a job, then do what the scheduler does: prepare its work folder, issue its token, mark it running."""
    client, rt = console
    admitted = submit(client, spec_for(client))
    assert admitted.status_code == 200, admitted.text
    job_id = admitted.json()["job_id"]
    run_dir = tmp / job_id
    (run_dir / "work" / ".starforge").mkdir(parents=True)
    (run_dir / "work" / ".starforge" / "launch.json").write_text('{"plan": 1}')
    (run_dir / "work" / "train.py").write_text("print('hi')\n")
    (tmp / "secret.txt").write_text("console state")
    (run_dir / "work" / "escape").symlink_to(tmp / "secret.txt")  # a link the job planted: never followed
    with rt.db.write() as db:
        job = db.get(Job, job_id)
        user = accounts.UserView(job.user_id, job.username, "", "", False)
        token = accounts.issue_run_token(db, user, job_id)
        job.status, job.run_dir = "running", str(run_dir)
    return job_id, token, run_dir


def test_the_runs_token_fetches_its_work_folder_and_nothing_else(console: tuple[TestClient, Any],
                                                                 tmp_path: Path) -> None:
    client, rt = console
    job_id, token, _ = _running_job(console, tmp_path)
    other_id, other_token, _ = _running_job(console, tmp_path / "other")
    fetched = client.get(f"/api/runs/{job_id}/workdir", headers={"Authorization": "", "X-StarForge-Token": token})
    assert fetched.status_code == 200, fetched.text
    with tarfile.open(fileobj=io.BytesIO(fetched.content), mode="r:gz") as archive:
        members = {m.name: archive.extractfile(m).read() for m in archive.getmembers() if m.isfile()}
    assert members == {".starforge/launch.json": b'{"plan": 1}', "train.py": b"print('hi')\n"}

    for headers in ({"Authorization": ""}, {"Authorization": "", "X-StarForge-Token": other_token},
                    {}):  # no token; another run's token; the user's own API token is not a run token
        refused = client.get(f"/api/runs/{job_id}/workdir", headers=headers)
        assert refused.status_code == 401, refused.text
    with rt.db.write() as db:
        db.get(Job, other_id).status = "succeeded"
    ended = client.get(f"/api/runs/{other_id}/workdir", headers={"Authorization": "", "X-StarForge-Token": other_token})
    assert ended.status_code == 404, ended.text
