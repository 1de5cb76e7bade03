"""What `sf job status`, `sf job ls` and `sf job pause|resume|retry` say, from the rows a console serves: a job's
attempts and the checkpoint it resumed from, each attempt when there were several, a paused or preempted job's
state, and what a control verb did."""

from __future__ import annotations

from typing import Any

import pytest

from starforge.cli._job_text import attempt_text, control_said, status_text
from starforge.cli._output import Output
from starforge.cli.cmd_job import jobs_table
from starforge.client import ControlResult, Job

NOW = 10_000.0


def _plain(headers: Any, rows: Any) -> str:
    return Output(as_json=False).table(rows, headers)


def _job(**fields: Any) -> Job:
    row = {"job_ref": "r-abc", "run_id": "r-abc", "name": "toy", "exp": "experiments/toy", "status": "running",
           "requested_gpus": 1, "submitted_at": NOW - 600, **fields}
    return Job.from_row(row)


def test_the_attempt_line_names_the_checkpoint_and_its_step() -> None:
    assert attempt_text({"attempts": 2, "resumed_from": "/forge/runs/a/toy/r-abc/out/checkpoint-20",
                         "resume_step": 20}) == "attempt 2 (resumed from checkpoint-20, step 20)"
    assert attempt_text({"attempts": 1, "resumed_from": None}) == "attempt 1"
    assert attempt_text({"attempts": 3, "resumed_from": None}) == (
        "attempt 3 (started over: no checkpoint to resume from)")
    assert attempt_text({"attempts": 0}) == "" and attempt_text({}) == ""  # not started, or not counted


def test_status_shows_the_attempts_and_each_one_when_there_were_several() -> None:
    history = [
        {"number": 1, "started_at": NOW - 500, "ended_at": NOW - 300, "outcome": "preempted",
         "reason": "preempted by r-big; it resumes from its latest checkpoint when capacity frees",
         "resumed_from": None, "resume_step": None},
        {"number": 2, "started_at": NOW - 120, "ended_at": None, "outcome": "", "reason": "",
         "resumed_from": "/forge/runs/a/toy/r-abc/out/checkpoint-20", "resume_step": 20},
    ]
    text = status_text(_job(attempts=2, resumed_from=history[1]["resumed_from"], resume_step=20, max_restarts=2,
                            restarts=1, attempt_history=history), _plain, now=NOW)
    facts, table = text.split("\n\n")
    assert "attempts   attempt 2 (resumed from checkpoint-20, step 20)" in facts.splitlines()
    assert "restarts   1 of 2 used (after a failure it starts again by itself)" in facts.splitlines()
    header, first, second = table.splitlines()
    assert header.split() == ["#", "STARTED", "ENDED", "OUTCOME", "RESUMED", "FROM", "REASON"]
    assert first.split()[:7] == ["1", "8m", "ago", "5m", "ago", "preempted", "-"] and "preempted by r-big" in first
    assert second.split()[:7] == ["2", "2m", "ago", "-", "running", "checkpoint-20,", "step"]

    one = status_text(_job(attempts=1, attempt_history=history[:1]), _plain, now=NOW)
    assert "\n\n" not in one and "attempts   attempt 1" in one  # one attempt: no table


def test_status_says_a_paused_job_is_held_and_a_preempted_one_is_checkpointing() -> None:
    paused = status_text(_job(status="paused", message="paused by alice; `sf job resume r-abc` puts it back"),
                         _plain, now=NOW)
    assert "queue      held: it keeps its place and starts again after `sf job resume r-abc`" in paused
    waiting = status_text(_job(status="queued", message="waiting for 8 GPUs", queue_position=2, queue_length=5,
                               profile="h200"), _plain, now=NOW)
    assert "reason     waiting for 8 GPUs" in waiting and "queue      2nd of 5 waiting for h200" in waiting
    preempted = status_text(_job(interrupt={"kind": "preempt", "by": "r-big", "at": NOW},
                                 message="preempted by r-big: saving a checkpoint"), _plain, now=NOW)
    assert "stopping   preempted by r-big: saving a checkpoint, then stopping" in preempted
    assert "reason     preempted by r-big: saving a checkpoint" in preempted


def test_the_job_list_shows_attempts_as_a_number_only_when_the_console_counts_them() -> None:
    out = Output(as_json=False)
    counted = jobs_table(out, [_job(attempts=2), _job(job_ref="r-new", run_id="r-new", attempts=0)])
    head, first, second = counted.splitlines()
    assert head.split() == ["ID", "NAME", "STATUS", "GPUS", "ATTEMPTS", "SUBMITTED"]
    assert first.split()[4] == "2" and second.split()[4] == "0"
    official = jobs_table(out, [_job()])  # a console that does not count them: no column
    assert "ATTEMPTS" not in official


@pytest.mark.parametrize(("action", "body", "text", "success", "hint"), [
    ("pause", {"paused": True, "status": "running"},
     "Asked r-abc to checkpoint and stop; it is held paused then (sf job resume r-abc)", True, "sf job status r-abc"),
    ("pause", {"paused": True, "status": "paused"},
     "Paused job r-abc: it keeps its place in the queue and is not started until resumed", True, "sf job resume r-abc"),
    ("pause", {"paused": False, "status": "paused"}, "Job r-abc is already paused", False, "sf job resume r-abc"),
    ("pause", {"paused": False, "status": "succeeded"},
     "Job r-abc was not paused: it is succeeded (already finished, stopping or pausing)", False, "sf job status r-abc"),
    ("resume", {"resumed": True, "status": "queued"},
     "Resumed job r-abc: it is back in the queue in its place and resumes from its latest checkpoint", True,
     "sf job status r-abc"),
    ("resume", {"resumed": True, "status": "running"}, "Cancelled the pause of r-abc: it keeps running", True, ""),
    ("resume", {"resumed": False, "status": "running"}, "Job r-abc is not paused (running): nothing to resume", False,
     ""),
    ("retry", {"retried": True, "status": "queued"},
     "Retrying job r-abc: it is queued again as the same job and resumes from its latest checkpoint", True,
     "sf job logs r-abc"),
    ("resume", {"message": "the console's own words"}, "the console's own words", True, ""),
])
def test_what_a_control_verb_says(action: str, body: dict[str, Any], text: str, success: bool, hint: str) -> None:
    said = control_said(ControlResult.from_body("r-abc", action, body))
    assert (said.text, said.success, said.hint) == (text, success, hint)


def test_status_shows_the_image_and_the_digest_it_runs_on() -> None:
    digest = "sha256:" + "ab" * 32
    pulled = status_text(_job(image="registry.lab:5000/team/trainer:2.3", image_digest=digest), _plain, now=NOW)
    assert any(line.startswith("image") and line.endswith(f"registry.lab:5000/team/trainer:2.3 ({digest})")
               for line in pulled.splitlines()), pulled
    waiting = status_text(_job(image="registry.lab:5000/team/trainer:2.3", image_digest=""), _plain, now=NOW)
    assert "registry.lab:5000/team/trainer:2.3 (not pulled yet)" in waiting
    assert not any(line.startswith("image") for line in status_text(_job(), _plain, now=NOW).splitlines())
