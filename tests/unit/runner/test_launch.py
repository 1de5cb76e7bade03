"""`forge-launch` end to end: a real job directory, a real child process and a real ingest server on loopback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from starforge.wire import read_exit_record
from tests.specs import minimal_spec, mutate

from .conftest import RUN_ID, TOKEN, IngestServer, Job, launch_plan


def _write_plan(job: Job, **changes: object) -> None:
    (job.workdir / ".starforge" / "launch.json").write_text(
        json.dumps(launch_plan(**changes)), encoding="utf-8"
    )


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is dead, only not yet reaped


def _wait_for_file(path: Path, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def test_success_reports_lifecycle_in_order_registers_artifacts_and_forwards_output(
    job: Job, ingest: IngestServer
) -> None:
    job.env["JOB_REPORT"] = "1"
    result = job.launch()

    assert result.returncode == 0, result.stderr.decode()
    assert ingest.events() == ["starting", "running", "succeeded"]
    for request in ingest.requests:
        assert request.headers["x-starforge-token"] == TOKEN
        assert request.headers["content-type"] == "application/json"
        assert request.body["run_id"] == RUN_ID
    assert all(r.body["ts"].endswith("Z") for r in ingest.of("lifecycle"))
    # the child's output reached forge-launch's own streams
    assert b"hello from the job\n" in result.stdout
    assert b"a warning from the job\n" in result.stderr
    assert b"[forge-launch] job succeeded" in result.stderr
    # the child saw the overrides rendered as dot-overrides, the plan env, its own process group, the workdir
    seen = job.seen()
    assert seen["argv"] == [
        "--config",
        "experiments/my-grpo/config.yaml",
        "grpo.max_num_steps=40",
        "grpo.val_at_start=true",
        "policy.lr=1e-06",
        "policy.name='tiny model'",  # Hydra's grammar: a string with a space is quoted
    ]
    assert seen["plan_var"] == "from-plan"
    assert seen["pgid_is_pid"] is True
    assert Path(seen["cwd"]) == job.workdir
    # artifacts: absolute paths, step parsed, formats from the plan, registered before the terminal event
    artifacts = [r.body for r in ingest.of("artifact")]
    assert artifacts == [
        {
            "run_id": RUN_ID,
            "kind": "checkpoint",
            "path": str(job.out_dir / "checkpoints" / "step_5"),
            "format": "npz",
            "step": 5,
            "size_bytes": 100,
        },
        {
            "run_id": RUN_ID,
            "kind": "log",
            "path": str(job.out_dir / "logs"),
            "format": "text",
            "size_bytes": 5,
        },
    ]
    order = [r.path for r in ingest.requests if r.path in ("artifact", "lifecycle")]
    assert order == ["lifecycle", "lifecycle", "artifact", "artifact", "lifecycle"]
    # the job's own metric came through the report SDK with the inherited credentials
    assert [(p["key"], p["step"], p["value"]) for p in ingest.points()] == [("train/loss", 5, 0.5)]
    assert (job.out_dir / "metrics.jsonl").read_text().count("\n") == 1


def test_cli_flags_render_as_separate_arguments(job: Job, ingest: IngestServer) -> None:
    config = launch_plan()["config"] | {"mode": "cli-flags"}
    _write_plan(job, config=config)
    assert job.launch().returncode == 0
    assert job.seen()["argv"][2:] == [  # argparse conventions (OpenRLHF): a true boolean is a bare switch
        "--grpo.max_num_steps",
        "40",
        "--grpo.val_at_start",
        "--policy.lr",
        "1e-06",
        "--policy.name",
        "tiny model",
    ]


def test_child_failure_is_reported_and_its_exit_code_propagated(job: Job, ingest: IngestServer) -> None:
    job.env["JOB_EXIT"] = "3"
    result = job.launch()

    assert result.returncode == 3
    assert ingest.events() == ["starting", "running", "failed"]
    failed = ingest.of("lifecycle")[-1].body
    assert failed["exit_code"] == 3 and "signal" not in failed
    assert [a.body["kind"] for a in ingest.of("artifact")] == ["checkpoint", "log"]  # registered anyway
    assert b"exit code 3" in result.stderr


def test_the_exit_record_is_written_for_the_executor(job: Job, ingest: IngestServer, tmp_path: Path) -> None:
    exit_file = tmp_path / "exit.json"
    job.env["FORGE_EXIT_FILE"] = str(exit_file)
    job.env["JOB_EXIT"] = "3"
    before = time.time()
    assert job.launch().returncode == 3

    record, problems = read_exit_record(exit_file)
    assert problems == [] and record is not None
    assert (record.exit_code, record.signal) == (3, None)
    assert record.finished_at is not None and before <= record.finished_at <= time.time()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("exit")) == ["exit.json"]


def test_an_unwritable_exit_record_does_not_change_the_exit_status(job: Job, ingest: IngestServer) -> None:
    job.env["FORGE_EXIT_FILE"] = str(job.workdir / "no-such-dir" / "exit.json")
    assert job.launch().returncode == 0


def test_identity_mismatch_is_refused_before_the_child_starts(job: Job, ingest: IngestServer) -> None:
    job.env["FORGE_RECIPE_DIGEST"] = "sha256:" + "1" * 64
    del job.env["FORGE_RUNTIME_ID"]
    result = job.launch()

    assert result.returncode == 1
    assert not job.ran()
    assert ingest.events() == ["failed"]
    assert ingest.of("lifecycle")[0].body["reason"] == "identity_mismatch"
    stderr = result.stderr.decode()
    assert (
        "FORGE_RECIPE_DIGEST" in stderr
        and "1" * 64 in stderr
        and minimal_spec()["spec"]["recipe"]["digest"] in stderr
    )
    assert "FORGE_RUNTIME_ID: the environment has (unset) but the JobSpec has 'nemo-rl-0.7.0'" in stderr
    assert "FORGE_RECIPE:" not in stderr  # only the differing variables are named


def test_plan_that_disagrees_with_the_spec_is_refused(job: Job, ingest: IngestServer) -> None:
    plan = launch_plan()
    _write_plan(job, framework=plan["framework"] | {"version": "0.8.0"})
    result = job.launch()
    assert result.returncode == 1 and not job.ran()
    assert (
        "FORGE_FRAMEWORK_VERSION: the JobSpec has '0.7.0' but the launch plan has '0.8.0'"
        in result.stderr.decode()
    )


def test_malformed_jobspec_fails_the_job_with_every_problem(job: Job, ingest: IngestServer) -> None:
    broken = mutate(mutate(minimal_spec(), "apiVersion", "forge/v1"), "spec.recipe.digest", "sha256:nope")
    (job.workdir / ".starforge" / "jobspec.json").write_text(json.dumps(broken), encoding="utf-8")
    result = job.launch()

    assert result.returncode == 1
    assert not job.ran()
    assert ingest.events() == ["failed"]
    body = ingest.of("lifecycle")[0].body
    assert body["reason"] == "jobspec_invalid" and body["exit_code"] == 1
    assert [p["field"] for p in body["problems"]] == ["apiVersion", "spec.recipe.digest"]
    stderr = result.stderr.decode()
    assert "apiVersion: must be forge/v2" in stderr and "spec.recipe.digest" in stderr


def test_missing_jobspec_and_malformed_plan_are_failed_jobs_not_crashes(
    job: Job, ingest: IngestServer
) -> None:
    (job.workdir / ".starforge" / "jobspec.json").unlink()
    result = job.launch()
    assert result.returncode == 1 and b"does not exist" in result.stderr and b"Traceback" not in result.stderr

    (job.workdir / ".starforge" / "jobspec.json").write_text(json.dumps(minimal_spec()), encoding="utf-8")
    _write_plan(job, argv=[], apiVersion="forge/launch/v0")
    result = job.launch()
    assert result.returncode == 1 and not job.ran()
    assert [p["field"] for p in ingest.of("lifecycle")[-1].body["problems"]] == [
        "launch.apiVersion",
        "launch.argv",
    ]


def test_one_500_is_retried(job: Job, ingest: IngestServer) -> None:
    ingest.answer_next("lifecycle", 500)
    result = job.launch()

    assert result.returncode == 0
    assert [(r.body["event"], r.status) for r in ingest.of("lifecycle")] == [
        ("starting", 500),
        ("starting", 200),
        ("running", 200),
        ("succeeded", 200),
    ]


def test_403_on_starting_aborts_before_the_child_starts(job: Job, ingest: IngestServer) -> None:
    ingest.answer_always("lifecycle", 403)
    result = job.launch()

    assert result.returncode == 1
    assert not job.ran()
    assert len(ingest.of("lifecycle")) == 1  # a 403 is never retried
    assert b"scripted 403" in result.stderr


def test_sigterm_stops_the_child_group_and_reports_failed(job: Job, ingest: IngestServer) -> None:
    job.env["JOB_MODE"] = "hang"
    proc = subprocess.Popen(job.command(), env=job.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_for_file(job.workdir / "ready")
        grandchild = int((job.workdir / "grandchild.pid").read_text())
        assert ingest.wait_for(lambda: "running" in ingest.events())
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=20)
    finally:
        proc.kill()

    assert proc.returncode == 128 + signal.SIGTERM, stderr.decode()
    assert ingest.wait_for(lambda: not _alive(grandchild), timeout=5)
    assert ingest.events() == ["starting", "running", "failed"]
    failed = ingest.of("lifecycle")[-1].body
    assert failed["signal"] == "SIGTERM" and failed["reason"] == "stopped"
    assert b"received SIGTERM" in stderr


def test_a_child_ignoring_sigterm_is_killed_after_the_grace_period(job: Job, ingest: IngestServer) -> None:
    job.env.update({"JOB_MODE": "stubborn", "FORGE_STOP_GRACE": "0.5"})
    proc = subprocess.Popen(job.command(), env=job.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_for_file(job.workdir / "ready")
        grandchild = int((job.workdir / "grandchild.pid").read_text())
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=20)
        elapsed = time.monotonic() - started
    finally:
        proc.kill()

    assert proc.returncode == 128 + signal.SIGKILL, stderr.decode()
    assert 0.4 < elapsed < 10
    assert ingest.wait_for(lambda: not _alive(grandchild), timeout=5)
    assert ingest.of("lifecycle")[-1].body["signal"] == "SIGKILL"
    assert b"grace period over" in stderr


def test_five_megabytes_of_output_do_not_deadlock(job: Job, ingest: IngestServer) -> None:
    job.env["JOB_MODE"] = "flood"
    result = job.launch(timeout=30)

    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.count(b"x" * 1023 + b"\n") == 5 * 1024
    assert result.stderr.count(b"\xff\xfe not utf-8 ") == 5 * 1024  # binary-safe
    assert ingest.events()[-1] == "succeeded"


def test_ingest_disabled_runs_the_job_and_sends_nothing(job: Job, ingest: IngestServer) -> None:
    job.env["STARFORGE_ENABLED"] = "0"
    job.env["JOB_REPORT"] = "1"
    result = job.launch()

    assert result.returncode == 0
    assert ingest.requests == []
    assert b"ingest disabled" in result.stderr
    assert b"found checkpoint" in result.stderr
    assert (job.out_dir / "metrics.jsonl").exists()


def test_unstartable_program_fails_the_job(job: Job, ingest: IngestServer) -> None:
    _write_plan(job, argv=[os.path.join(str(job.workdir), "no-such-program")], config={})
    result = job.launch()

    assert result.returncode == 1
    assert ingest.events() == ["starting", "failed"]
    assert ingest.of("lifecycle")[-1].body["reason"] == "start_failed"


def test_on_a_two_node_job_the_first_node_speaks_for_it_and_the_second_runs_its_share(
        job: Job, ingest: IngestServer, tmp_path: Path) -> None:
    exit_file = tmp_path / "exit.json"
    job.env.update({"FORGE_EXIT_FILE": str(exit_file), "NNODES": "2", "NODE_RANK": "1", "JOB_EXIT": "3"})
    second = job.launch()
    assert second.returncode == 3  # its status is the engine's to see
    assert job.ran() and ingest.events() == [] and ingest.of("artifact") == []
    assert not exit_file.exists()  # the first node's record is the job's
    assert b"[forge-launch] (node 1) job failed" in second.stderr

    job.env.update({"NODE_RANK": "0", "JOB_EXIT": "0"})
    assert job.launch().returncode == 0
    assert ingest.events() == ["starting", "running", "succeeded"]
    assert exit_file.exists()
