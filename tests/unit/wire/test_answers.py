"""The console's answers are read once (`starforge.wire`): the Python client and MCP see the same values in the same
body, and a body with missing or mistyped fields still reads, as its empty values."""

from __future__ import annotations

from typing import Any

import pytest

from starforge.client._jobs import Job
from starforge.client._models import (
    AdmissionVerdict,
    ClusterStatus,
    Metrics,
    StopResult,
    SubmitResult,
    Usage,
    User,
)
from starforge.contract import Problem
from starforge.mcp._shapes import Account, Cluster, JobRow, Stopped, Submitted, Verdict, latest_metrics
from starforge.mcp._shapes import Usage as McpUsage
from starforge.wire import (
    StoppedBody,
    read_account,
    read_cluster,
    read_job_row,
    read_metrics,
    read_stopped,
    read_submitted,
    read_usage,
    read_verdict,
)

GARBAGE: list[Any] = [{}, {"user": 3, "gpu": "x", "profiles": "p", "problems": "no", "warnings": {}, "series": [1],
                           "points": 7, "metrics": [], "queued": 0, "status": None, "stopped": 0}]


def test_an_account_reads_alike_in_the_client_and_mcp() -> None:
    body = {"user": {"username": "alice", "role": "admin", "email": "a@x"}}
    read = read_account(body)
    assert (read.username, read.role, read.email) == ("alice", "admin", "a@x")
    assert (User.from_body(body).username, User.from_body(body).role) == (Account.from_body(body).username,
                                                                        Account.from_body(body).role)
    assert read_account({"username": "bob"}).username == "bob"  # a bare user object


def test_the_cluster_report_reads_alike_and_falls_back_to_the_gpu_prefixed_keys() -> None:
    body = {"profiles": [{"name": "h200", "series": "h200", "gpus": 8}, {"series": "nameless"}],
            "gpu": {"gpu_total": 16, "gpu_used": 4, "gpu_free": 12, "queued": 2, "blocked": 1,
                    "series": [{"name": "h200"}, "x"]}, "active_count": 3}
    read = read_cluster(body)
    assert (read.total, read.used, read.free, read.queued, read.blocked, read.active_count) == (16, 4, 12, 2, 1, 3)
    assert [p.name for p in read.profiles] == ["h200"] and read.series == ({"name": "h200"},)
    client, mcp = ClusterStatus.from_body(body), Cluster.from_body(body)
    assert (client.profiles, client.total, client.used, client.free, client.queued, client.active_count) == \
        (mcp.profiles, mcp.total, mcp.used, mcp.free, mcp.queued, mcp.active_count)
    assert client.raw == mcp.body == body


def test_a_verdict_reads_alike_and_defaults_ok_to_no_problems() -> None:
    body = {"problems": [{"field": "spec.x", "code": "bad", "message": "m"}, "free text"], "requested_gpus": 8}
    read = read_verdict(body)
    assert not read.ok and read.requested_gpus == 8
    assert read.problems == (Problem("spec.x", "bad", "m"), Problem("<root>", "warning", "free text"))
    assert tuple(AdmissionVerdict.from_body(body).problems) == Verdict.from_body(body).problems == read.problems
    assert read_verdict({}).ok and read_verdict({"ok": False}).ok is False


@pytest.mark.parametrize(("body", "status", "queued"), [({"run_id": "r1"}, 202, True), ({"run_id": "r1"}, 200, False),
                                                        ({"run_id": "r1", "queued": False}, 202, False)])
def test_a_submission_answer_reads_alike_and_a_202_is_queued_unless_told(body: dict[str, Any], status: int,
                                                                         queued: bool) -> None:
    read = read_submitted(body, status)
    assert (read.job_id, read.run_id, read.queued) == ("r1", "r1", queued)
    client, mcp = SubmitResult.from_body(body, status), Submitted.from_body(body, status)
    assert (client.job_id, client.run_id, client.queued, client.warnings) == \
        (mcp.job_id, mcp.run_id, mcp.queued, mcp.warnings)


def test_a_stop_answer_and_usage_read_alike() -> None:
    assert read_stopped({"stopped": False, "status": "succeeded"}) == StoppedBody(False, "succeeded")
    client, mcp = StopResult.from_body("j", {"stopped": False, "status": "succeeded"}), \
        Stopped.from_body("j", {"stopped": False, "status": "succeeded"})
    assert (client.stopped, client.status) == (mcp.stopped, mcp.status) == (False, "succeeded")
    assert read_stopped({}).stopped is True
    body = {"quota": {"gpus": 8}, "usage": {"gpus": 2}}
    assert (Usage.from_body(body).quota, Usage.from_body(body).usage) == (McpUsage.from_body(body).quota,
                                                                        McpUsage.from_body(body).usage)
    assert read_usage(body).quota == {"gpus": 8}


def test_a_job_row_reads_alike_with_either_timestamp_form() -> None:
    row = {"run_id": "r-9", "name": "toy", "exp": "experiments/toy", "status": "RUNNING", "gpus": 4,
           "submitted_at": "2026-01-01T00:00:00Z"}
    read = read_job_row(row)
    assert (read.ref, read.status, read.requested_gpus, read.submitted_at) == ("r-9", "running", 4, 1767225600.0)
    job, mcp = Job.from_row(row), JobRow.of(row, terminal=False, succeeded=False)
    assert (job.ref, job.name, job.exp, job.status) == (mcp.ref, mcp.name, mcp.exp, mcp.status)
    assert read_job_row({"submitted_at": 12}).submitted_at == 12.0
    assert read_job_row({"submitted_at": "yesterday"}).submitted_at is None


def test_metrics_read_every_served_form_ordered_by_step_and_the_latest_is_the_same_for_both() -> None:
    body = {"series": {"loss": [[2, 0.5, "t2"], [1, 0.9], [3, "nan?"]]},
            "points": [{"key": "reward", "step": 4, "value": 1}],
            "metrics": {"loss": [{"step": 0, "value": 1.2}]}}
    read = read_metrics(body)
    assert [(p.step, p.value) for p in read["loss"]] == [(0, 1.2), (1, 0.9), (2, 0.5)]
    assert list(read) == ["loss", "reward"]
    client = Metrics.from_body(body).latest()
    mcp = latest_metrics(body)
    assert {k: (p.step, p.value) for k, p in client.items()} == {k: (v.step, v.value) for k, v in mcp.items()} == \
        {"loss": (2, 0.5), "reward": (4, 1.0)}


@pytest.mark.parametrize("body", GARBAGE)
def test_a_body_with_missing_or_mistyped_fields_reads_as_empty_values(body: dict[str, Any]) -> None:
    assert read_account(body).username == ""
    cluster = read_cluster(body)
    assert (cluster.profiles, cluster.total, cluster.series) == ((), 0, ())
    assert read_verdict(body).problems == () and read_verdict(body).warnings == ()
    assert read_submitted(body).job_id == "" and read_submitted(body).warnings == ()
    assert read_metrics(body) == {}
    assert read_job_row(body).ref == "" and read_job_row(body).pipeline is None
