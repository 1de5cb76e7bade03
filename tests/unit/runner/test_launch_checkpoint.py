"""`forge-launch` relays the console's "checkpoint, then stop": the preempt file, SIGUSR1, and the outcome reported.

The launcher runs in this process (so the control poll interval can be short) with a real child and a real ingest
server on loopback that stands for the console's `control` endpoint.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

from starforge.runner.launch import PREEMPT_FILE, Launcher

from .conftest import IngestServer, Job

# The job: handles SIGUSR1, says it is ready, waits for the signal, records what it saw, exits with JOB_EXIT.
JOB = r"""
import json, os, signal, sys, threading
from pathlib import Path
got = threading.Event()
signal.signal(signal.SIGUSR1, lambda signum, frame: got.set())
preempt = os.environ["FORGE_PREEMPT_FILE"]
stale = os.path.lexists(preempt)
Path("ready").write_text("yes")
signalled = got.wait(30)
Path("seen.json").write_text(json.dumps({"file": preempt, "stale": stale, "signalled": signalled,
                                         "exists": os.path.exists(preempt),
                                         "reason": Path(preempt).read_text() if os.path.exists(preempt) else ""}))
sys.exit(int(os.environ.get("JOB_EXIT", "0")))
"""
IDLE = {"action": "", "reason": "", "deadline": None}
CHECKPOINT = {"action": "checkpoint", "reason": "preempted by job j-42", "deadline": None}


def _checkpoint_when_ready(job: Job, ingest: IngestServer) -> list[str]:
    """The console's answer: a checkpoint request once the job has its handler installed, nothing before.

    Return the list of the actions answered, in order.
    """
    ready = job.workdir / "ready"
    answered: list[str] = []

    def answer() -> dict[str, Any]:
        reply = CHECKPOINT if ready.exists() else IDLE
        answered.append(reply["action"])
        return reply

    ingest.reply("control", answer)
    return answered


def _launch(job: Job) -> tuple[int, str]:
    (job.workdir / "job.py").write_text(JOB, encoding="utf-8")
    err = io.BytesIO()
    launcher = Launcher(job.workdir, environ=job.env, stdout=io.BytesIO(), stderr=err, control_interval=0.02)
    code = launcher.run()
    return code, err.getvalue().decode()


def _seen(job: Job) -> dict[str, Any]:
    return json.loads((job.workdir / "seen.json").read_text())


def test_a_checkpoint_request_creates_the_file_signals_the_job_and_a_clean_exit_is_reported_checkpointed(
    job: Job, ingest: IngestServer
) -> None:
    answered = _checkpoint_when_ready(job, ingest)
    code, err = _launch(job)

    assert code == 0, err
    seen = _seen(job)
    assert seen["signalled"] and seen["exists"] and not seen["stale"]
    assert seen["file"] == str(job.workdir / PREEMPT_FILE) and seen["reason"] == "preempted by job j-42\n"
    assert ingest.events() == ["starting", "running", "succeeded"]
    succeeded = ingest.of("lifecycle")[-1].body
    assert succeeded["reason"] == "checkpointed" and succeeded["exit_code"] == 0
    assert "[forge-launch] the console asks the job to checkpoint and stop: preempted by job j-42" in err
    assert "[forge-launch] job checkpointed and stopped at the console's request" in err
    assert "job succeeded" not in err
    # once the request was relayed, the console is not asked again
    assert answered[-1] == "checkpoint" and answered.count("checkpoint") == 1
    assert all(r.body == {"run_id": job.env["STARFORGE_RUN_ID"]} for r in ingest.of("control"))


def test_a_job_failing_after_the_request_is_reported_failed_with_its_exit_code(
    job: Job, ingest: IngestServer
) -> None:
    _checkpoint_when_ready(job, ingest)
    job.env["JOB_EXIT"] = "3"
    code, err = _launch(job)

    assert code == 3
    assert _seen(job)["signalled"]
    assert ingest.events() == ["starting", "running", "failed"]
    failed = ingest.of("lifecycle")[-1].body
    assert failed["exit_code"] == 3 and "reason" not in failed
    assert "checkpointed" not in err


def test_a_preempt_file_left_by_an_earlier_start_is_removed_and_a_planted_link_never_followed(
    job: Job, ingest: IngestServer, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    (job.workdir / PREEMPT_FILE).symlink_to(outside)
    _checkpoint_when_ready(job, ingest)
    code, err = _launch(job)

    assert code == 0, err
    seen = _seen(job)
    assert not seen["stale"] and seen["signalled"]
    assert outside.read_text() == "keep me"
    assert not (job.workdir / PREEMPT_FILE).is_symlink()


def test_without_a_request_the_job_runs_as_before_and_the_file_never_appears(
    job: Job, ingest: IngestServer
) -> None:
    (job.workdir / PREEMPT_FILE).write_text("from an earlier attempt\n")
    ingest.reply("control", lambda: IDLE)
    job.env["JOB_EXIT"] = "0"
    (job.workdir / "job.py").write_text(
        "import os, sys\nsys.exit(17 if os.path.lexists(os.environ['FORGE_PREEMPT_FILE']) else 0)\n",
        encoding="utf-8",
    )
    err = io.BytesIO()
    code = Launcher(job.workdir, environ=job.env, stdout=io.BytesIO(), stderr=err, control_interval=0.02).run()

    assert code == 0, err.getvalue().decode()
    assert ingest.events() == ["starting", "running", "succeeded"]
    assert "reason" not in ingest.of("lifecycle")[-1].body
    assert not os.path.lexists(job.workdir / PREEMPT_FILE)
