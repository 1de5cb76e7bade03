"""Slurm states in StarForge's terms, and the squeue / sacct parsers (hetjob components, batch-step exit codes)."""

from __future__ import annotations

import pytest

from starforge.engines.slurm import (
    Mapped,
    SlurmJobState,
    map_state,
    parse_sacct,
    parse_squeue,
    waiting_text,
)


@pytest.mark.parametrize(("state", "reason", "expected"), [
    ("PENDING", "Resources", Mapped("pending", "Resources")),
    ("PENDING", "Priority", Mapped("pending", "Priority")),
    ("PENDING", "QOSMaxGRESPerUser", Mapped("pending", "QOSMaxGRESPerUser")),
    ("PENDING", "None", Mapped("pending", "")),
    ("REQUEUED", "None", Mapped("pending", "requeued by Slurm")),
    ("CONFIGURING", "None", Mapped("running", "")),
    ("RUNNING", "None", Mapped("running", "")),
    ("COMPLETING", "", Mapped("running", "")),
    ("COMPLETED", "None", Mapped("succeeded", "")),
    ("FAILED", "NonZeroExitCode", Mapped("failed", "the job failed on the cluster (NonZeroExitCode)")),
    ("NODE_FAIL", "None", Mapped("failed", "a node of the job failed")),
    ("OUT_OF_MEMORY", "", Mapped("failed", "the job ran out of memory")),
    ("TIMEOUT", "TimeLimit", Mapped("failed", "the job reached its time limit (TimeLimit)")),
    ("BOOT_FAIL", "", Mapped("failed", "a node of the job failed to boot")),
    ("DEADLINE", "", Mapped("failed", "the job reached its deadline")),
    ("PREEMPTED", "", Mapped("failed", "the job was preempted by Slurm")),
    ("CANCELLED", "None", Mapped("stopped", "cancelled")),
    ("CANCELLED by 0", "None", Mapped("stopped", "cancelled by uid 0")),
    ("CANCELLED+", "", Mapped("stopped", "cancelled")),
    ("running", "", Mapped("running", "")),
    ("SUSPENDED", "", Mapped("running", "suspended by Slurm (SUSPENDED)")),
    ("WARPED", "", Mapped("running", "unknown Slurm state 'WARPED'")),
    ("", "", Mapped("running", "unknown Slurm state ''")),
])
def test_map_state(state: str, reason: str, expected: Mapped) -> None:
    assert map_state(state, reason) == expected


def test_parse_squeue_keeps_the_pending_reason_and_combines_hetjob_components() -> None:
    text = "\n".join([
        "101|PENDING|Resources",
        "102|RUNNING|None",
        "103+0|RUNNING|None",
        "103+1|PENDING|Priority",
        "",
        "garbage line",
    ])
    assert parse_squeue(text) == {
        "101": SlurmJobState("101", "pending", "Resources"),
        "102": SlurmJobState("102", "running", ""),
        "103": SlurmJobState("103", "running", ""),
    }


def test_parse_sacct_takes_the_top_level_state_and_the_batch_exit_code() -> None:
    text = "\n".join([
        "201|COMPLETED|0:0|None",
        "201.batch|COMPLETED|0:0|",
        "201.extern|COMPLETED|0:0|",
        "202|FAILED|1:0|NonZeroExitCode",
        "202.batch|FAILED|3:0|",
        "202.extern|COMPLETED|0:0|",
        "202.0|FAILED|3:0|",
        "203|CANCELLED by 1000|0:15|None",
        "203.batch|CANCELLED|0:15|",
        "204|TIMEOUT|0:0|TimeLimit",
        "204.batch|CANCELLED|0:15|",
        "205+0|COMPLETED|0:0|None",
        "205+0.batch|COMPLETED|0:0|",
        "205+1|OUT_OF_MEMORY|0:125|None",
    ])
    assert parse_sacct(text) == {
        "201": SlurmJobState("201", "succeeded", "", 0, None),
        "202": SlurmJobState("202", "failed", "the job failed on the cluster (NonZeroExitCode)", 3, None),
        "203": SlurmJobState("203", "stopped", "cancelled by uid 1000", 0, 15),
        "204": SlurmJobState("204", "failed", "the job reached its time limit (TimeLimit)", 0, 15),
        "205": SlurmJobState("205", "failed", "the job ran out of memory", 0, None),  # the batch step's code
    }


def test_a_step_never_decides_the_job_state() -> None:
    assert parse_sacct("301.batch|FAILED|2:0|\n301.0|FAILED|2:0|") == {}


@pytest.mark.parametrize(("reason", "expected"), [
    ("Resources", "Slurm: Resources (the nodes or GPUs it needs are busy)"),
    ("ReqNodeNotAvail, UnavailableNodes:n2", "Slurm: ReqNodeNotAvail, UnavailableNodes:n2 (a node it needs is down, "
                                             "drained or reserved)"),
    ("QOSMaxGRESPerUser", "Slurm: QOSMaxGRESPerUser (a QOS limit holds it)"),
    ("SomethingNew", "Slurm: SomethingNew"),
    ("None", "waiting in Slurm's queue"),
])
def test_waiting_text_keeps_slurms_reason_first(reason: str, expected: str) -> None:
    assert waiting_text(reason) == expected
