"""The official client's `sf export` and `sf clean` (starforge-core 0.3.56, run as a black box) against our console:
`POST /api/post` creates the same follow-up job `sf export` / `--then export` create, and `POST /api/clean` deletes
the experiment's finished runs.

The official client exports only runs of the frameworks it has adapters for (tinyrl is not one: it refuses
locally, before any request), and none of those trains on this machine. So the parent is a nemo-rl/grpo job of the
user, admitted over our API and then finished by hand with a registered checkpoint, as its run would have done; the
export child waits for h200 capacity, which this deployment does not have.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from starforge.console.scheduler import run_dir_of
from starforge.console.services.registries import artifacts
from starforge.console.store.models import Job
from tests.compat.conftest import OfficialUser, job_row, make_user, output
from tests.integration.conftest import ConsoleProcess
from tests.integration.helpers import admitted, spec_for, submit


@pytest.fixture(scope="module")
def grpo_lab(official_console: ConsoleProcess, official_sf: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lab made by the official client's `sf init` and `sf new my-grpo --method nemo-rl/grpo`, committed."""
    base = tmp_path_factory.mktemp("official-lifecycle")
    maker = make_user(official_console, official_sf, base, prefix="lc")
    for args, where in ((("init", "lab", "--yes", "--name", "compat"), base),
                        (("new", "my-grpo", "--method", "nemo-rl/grpo"), base / "lab")):
        made = maker.sf(*args, cwd=where)
        assert made.returncode == 0, output(made)
    for git in (("add", "-A"), ("commit", "-q", "-m", "my-grpo")):
        subprocess.run(["git", *git], cwd=base / "lab", env=maker.env, check=True, capture_output=True)
    return base / "lab"


def _finished_run(console: ConsoleProcess, user: OfficialUser) -> tuple[str, str]:
    """Admit a nemo-rl/grpo run of `experiments/my-grpo` for `user`, then finish it with one checkpoint."""
    with user.api() as api:
        answer = submit(api, spec_for(api, "nemo-rl/grpo", exp="experiments/my-grpo", series="h200", gpus=8))
    run = admitted(answer, "pending")  # h200 has no capacity here
    with console.database().write() as db:
        job: Any = db.get(Job, run)
        run_dir = run_dir_of(console.state_dir, job.username, job.exp, run)
        checkpoint = run_dir / "out" / "checkpoints" / "step_10"
        checkpoint.mkdir(parents=True)
        (checkpoint / "weights.bin").write_bytes(b"0" * 64)
        artifacts.register(db, run, "checkpoint", str(checkpoint), step=10, size_bytes=64)
        job.status, job.run_dir = "succeeded", str(run_dir)
    return run, str(checkpoint)


def test_official_export_creates_the_follow_up_and_clean_deletes_the_run(
        official_console: ConsoleProcess, grpo_lab: Path, user: OfficialUser) -> None:
    run, checkpoint = _finished_run(official_console, user)
    export = ("export", "my-grpo", "--checkpoint-format", "nemo-dcp", "--profile", "h200", "--checkpoint")

    wrong = user.sf(*export, "/elsewhere/step_3", cwd=grpo_lab)
    assert wrong.returncode == 1, output(wrong)
    assert "registered a checkpoint '/elsewhere/step_3'" in " ".join(output(wrong).split())

    done = user.sf(*export, checkpoint, cwd=grpo_lab)
    assert done.returncode == 0, output(done)
    with user.api() as api:
        child = next(row for row in api.get("/api/jobs/mine").json()["jobs"] if row.get("parent") == run)
        assert child["action"] == "export" and child["status"] in ("queued", "pending"), child
        assert child["job_ref"] in output(done)
        assert api.get(f"/api/jobs/{child['job_ref']}/jobspec").json()["spec"]["resources"]["pools"][0]["name"] \
            == "lifecycle"
        assert api.post("/api/job/stop", params={"id": child["job_ref"]}).json()["stopped"] is True

        cleaned = user.sf("clean", "my-grpo", "--yes", cwd=grpo_lab)
        assert cleaned.returncode == 0, output(cleaned)
        assert api.get(f"/api/jobs/{run}/artifacts").json()["artifacts"] == []
        assert job_row(api, run)["status"] == "succeeded"
    assert not (official_console.state_dir / "runs" / user.user).joinpath("my-grpo", run).exists()
