"""`sf job artifacts` (list and --download, owner only) and failure reasons in `sf job status` and `sf job logs`,
through the real `sf` against a real console running real tinyrl and custom jobs."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import tarfile
import time
from pathlib import Path

import numpy as np

from starforge.client import Console
from tests import forkserver
from tests.integration import helpers
from tests.integration.conftest import ConsoleProcess, unique
from tests.integration.test_cli_account import sf, token_login


def _wait(client: Console, job_id: str, timeout: float = 120) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = client.job(job_id).status
        if status in ("succeeded", "failed", "stopped"):
            return status
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} did not end")


def test_artifacts_are_listed_and_downloaded_by_their_owner_only(console: ConsoleProcess, forge_home: Path,
                                                                  tmp_path: Path) -> None:
    token = token_login(console, forge_home, unique("arts"))
    with console.client(token) as http:
        spec = helpers.spec_for(http, exp="experiments/arts", hyperparams={"max_num_steps": 4,
                                                                           "checkpoint_save_period": 2})
    with Console(console.url, token) as client:
        job_id = client.submit(spec, helpers.bundle({"experiments/arts/config.yaml": "grpo: {}\n"}),
                               profile="cpu").job_id
        assert _wait(client, job_id) == "succeeded"

    listed = sf("job", "artifacts", job_id, "--json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)["artifacts"]
    steps = sorted(r["step"] for r in rows if r["kind"] == "checkpoint")
    assert steps == [2, 4]
    state = str(console.state_dir.resolve())
    assert all(state not in r["path"] and str(console.state_dir) not in r["path"] for r in rows), rows
    view = "/forge/runs/" if console.sandboxed else state  # the path the job saw: never the console's, in a sandbox
    assert all(r["path"].startswith(view) and f"/{job_id}/out/" in r["path"] for r in rows), rows
    human = sf("job", "artifacts", job_id)
    assert human.returncode == 0 and "checkpoint" in human.stdout and "STEP" in human.stdout

    target = tmp_path / "fetched"
    done = sf("job", "artifacts", job_id, "--download", str(target), "--json")
    assert done.returncode == 0, done.stderr
    weights = sorted(target.glob("checkpoints/step_*/*"))
    assert {str(p.relative_to(target)) for p in weights} <= set(json.loads(done.stdout)["files"])
    assert {p.parent.name for p in weights} == {"step_2", "step_4"}
    run_out = next(console.state_dir.glob(f"runs/*/arts/{job_id}/out"))
    for path in weights:
        original = run_out / path.relative_to(target)
        assert path.read_bytes() == original.read_bytes()
    npz = next(p for p in weights if p.suffix == ".npz")
    assert len(np.load(npz).files) > 0

    again = sf("job", "artifacts", job_id, "--download", str(target))
    assert again.returncode == 2 and "not an empty folder" in again.stderr

    # inside a lab, the documented folder (downloads/, ignored by `sf init`) leaves it committed; another is named
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CEILING_DIRECTORIES": str(tmp_path)}
    assert forkserver.run(["init", str(tmp_path / "lab")], env=env).returncode == 0
    kept = forkserver.run(["job", "artifacts", job_id, "--download", "downloads/export"], cwd=tmp_path / "lab",
                          env=env)
    assert kept.returncode == 0 and "warning" not in kept.stderr, kept.stderr
    assert (tmp_path / "lab" / "downloads" / "export" / "checkpoints").is_dir()
    status = subprocess.run(["git", "status", "--porcelain"], cwd=tmp_path / "lab", capture_output=True, text=True,
                            env=env, check=True)
    assert status.stdout == ""
    loose = forkserver.run(["job", "artifacts", job_id, "--download", "export"], cwd=tmp_path / "lab", env=env)
    assert loose.returncode == 0, loose.stderr
    assert "warning: export/ is in the lab" in loose.stderr and "add `export/` to .gitignore" in loose.stderr

    other_home = tmp_path / "other"
    other_token = token_login(console, other_home, unique("thief"))
    assert sf("job", "artifacts", job_id, home=other_home).returncode == 1
    checkpoint = next(r["path"] for r in rows if r["kind"] == "checkpoint")
    with console.client(other_token) as http:
        refused = http.get(f"/api/jobs/{job_id}/artifacts/download", params={"path": checkpoint})
    assert refused.status_code == 404
    with console.client(token) as http:
        listed_path = http.get(f"/api/jobs/{job_id}/artifacts/download", params={"path": checkpoint})
        assert listed_path.status_code == 200, listed_path.text  # downloaded by the path it is listed at
        for bad in ("/etc", "../work", "checkpoints/../../work"):
            assert http.get(f"/api/jobs/{job_id}/artifacts/download", params={"path": bad}).status_code == 404
        everything = http.get(f"/api/jobs/{job_id}/artifacts/download")  # no path: every artifact, once each
    assert everything.status_code == 200, everything.text
    with tarfile.open(fileobj=io.BytesIO(everything.content), mode="r:gz") as archive:
        names = archive.getnames()
    assert len(names) == len(set(names))
    assert {n.split("/")[1] for n in names if n.startswith("checkpoints/")} == {"step_2", "step_4"}
    shutil.rmtree(run_out / "checkpoints" / "step_2")  # rotated away after it was registered
    with console.client(token) as http:
        rest = http.get(f"/api/jobs/{job_id}/artifacts/download")
        gone = http.get(f"/api/jobs/{job_id}/artifacts/download", params={"path": "checkpoints/step_2"})
    assert rest.status_code == 200 and gone.status_code == 404
    with tarfile.open(fileobj=io.BytesIO(rest.content), mode="r:gz") as archive:
        assert {n.split("/")[1] for n in archive.getnames() if n.startswith("checkpoints/")} == {"step_4"}
    with console.client(other_token) as http:
        assert http.get(f"/api/jobs/{job_id}/artifacts/download").status_code == 404


# A trainer that fails the way Python programs do: output, a traceback naming host paths, the exception line last.
# The traceback and the line after it go to stderr, as Python writes them: forge-launch relays stdout and stderr
# through two pumps, so lines of different streams may reach the log in either order.
_FAILING = """echo boom
echo 'Traceback (most recent call last):' >&2
echo "  File \"$PWD/train.py\", line 3, in <module>" >&2
echo "    open('$PWD/out/config.json')" >&2
echo "FileNotFoundError: [Errno 2] No such file or directory: '$PWD/out/config.json'" >&2
echo 'cleaning up' >&2
exit 3
"""


def test_a_failed_job_s_reason_shows_in_status_and_at_the_end_of_logs(console: ConsoleProcess,
                                                                       forge_home: Path) -> None:
    token = token_login(console, forge_home, unique("fails"))
    with console.client(token) as http:
        spec = helpers.spec_for(http, "custom/custom", exp="experiments/boom")
        spec["spec"]["framework"]["image"] = "nvcr.io/team/trainer:1.0"
        spec["spec"]["framework"]["observability_url"] = "https://wandb.example.com/team/p"
        answer = helpers.submit(http, spec, data=helpers.bundle({"experiments/boom/train.sh": _FAILING}))
        job_id = helpers.admitted(answer, "submitted")  # the module's other job has ended
    with Console(console.url, token) as client:
        assert _wait(client, job_id) == "failed"
        reason = str(client.job(job_id).raw["message"])
    # the log's exception line says why, with the job's folders cut to their last part
    assert reason == "exit code 3: FileNotFoundError: [Errno 2] No such file or directory: '…/config.json'", reason
    assert str(console.state_dir) not in reason and "/runs/" not in reason

    status = sf("job", "status", job_id)
    assert status.returncode == 0
    line = next(line for line in status.stdout.splitlines() if line.startswith("reason"))
    assert " ".join(reason.split()) in line

    logs = sf("job", "logs", job_id)
    assert logs.returncode == 1 and "boom" in logs.stdout
    last = logs.stderr.strip().splitlines()[-1]
    assert last.startswith(f"Job {job_id} ended: failed") and " ".join(reason.split()) in last
    as_json = sf("job", "logs", job_id, "--json")
    final = json.loads(as_json.stdout.strip().splitlines()[-1])
    assert final["event"] == "status" and final["data"] == "failed" and final["reason"] == " ".join(reason.split())
