"""Job rows and the client-side id resolution of wire-protocol §8.1."""

from __future__ import annotations

from typing import Any

import pytest

from starforge.client import AmbiguousJob, Job, NotFound
from starforge.client._jobs import find_exact, pick, resolve


def row(ref: str, run: str, name: str, status: str = "running", **extra: Any) -> Job:
    return Job.from_row({"job_ref": ref, "run_id": run, "name": name, "status": status,
                         "exp": f"experiments/{name}", **extra})


JOBS = [
    row("r-7f3k2m9q1x", "r-7f3k2m9q1x", "my-grpo", "RUNNING"),
    row("slurm-4412", "r-7a00000000", "my-sft", "succeeded"),
    row("r-9zz0000000", "r-9zz0000000", "my-grpo-long", "failed"),
    row("r-b000000000", "r-b000000000", "b", "queued"),
]


def test_exact_job_ref_and_run_id() -> None:
    assert resolve(JOBS, "slurm-4412") is JOBS[1]
    assert resolve(JOBS, "r-7a00000000") is JOBS[1]
    assert find_exact(JOBS, "r-7a00000000") is JOBS[1]
    assert find_exact(JOBS, "r-7a") is None


def test_unique_prefix_of_job_ref_run_id_name_or_exp_basename() -> None:
    assert resolve(JOBS, "slurm") is JOBS[1]
    assert resolve(JOBS, "r-7a") is JOBS[1]
    assert resolve(JOBS, "r-9") is JOBS[2]
    assert resolve(JOBS, "my-s") is JOBS[1]
    named = [Job.from_row({"job_ref": "x1", "name": "", "exp": "experiments/deep/thing"})]
    assert resolve(named, "thi") is named[0]


def test_exact_name_wins_over_longer_names_sharing_the_prefix() -> None:
    assert resolve(JOBS, "my-grpo") is JOBS[0]


def test_an_exact_name_of_several_jobs_names_the_newest() -> None:
    twice = [row("r-2", "r-2", "exp"), row("r-1", "r-1", "exp"), row("r-3", "r-3", "exp-long")]  # newest first
    assert resolve(twice, "exp") is twice[0]
    picked = pick(twice, "exp")
    assert picked.by_name and [j.ref for j in picked.matches] == ["r-2", "r-1"]
    assert not pick(twice, "r-2").by_name


def test_ambiguous_prefix_lists_every_candidate() -> None:
    with pytest.raises(AmbiguousJob) as caught:
        resolve(JOBS, "r-")
    message = str(caught.value)
    assert "matches 4 jobs" in message
    for ref in ("r-7f3k2m9q1x", "slurm-4412", "r-9zz0000000", "r-b000000000"):
        assert ref in message
    assert caught.value.hint


@pytest.mark.parametrize("handle", ["nope", "", "   "])
def test_no_match_is_not_found(handle: str) -> None:
    with pytest.raises(NotFound):
        resolve(JOBS, handle)


def test_row_fields_are_normalised() -> None:
    job = Job.from_row({"run_id": "r-1", "status": "SUCCEEDED", "gpus": 4, "submitted_at": "2026-01-01T00:00:00Z",
                        "pipeline": {"state": "partial", "steps": [{"status": "SUCCEEDED"}, {"status": "FAILED"}]}})
    assert job.ref == "r-1" and job.status == "succeeded" and job.succeeded and job.terminal
    assert job.requested_gpus == 4
    assert job.submitted_at == 1767225600.0
    assert job.pipeline_progress == "1/2!"
    assert Job.from_row({"submitted_at": "2026-01-01T00:00:00"}).submitted_at == 1767225600.0  # naive = UTC
    assert Job.from_row({"submitted_at": 12}).submitted_at == 12.0
    assert Job.from_row({"requested_gpus": True}).requested_gpus == 0
    assert not Job.from_row({"status": "paused"}).terminal
