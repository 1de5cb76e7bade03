"""Evaluation follow-ups on benchmark suites, on a real SQLite store: `on_success: [eval]` with
`spec.evaluation.suites` and `sf eval --benchmarks` (a follow-up on request) make the same evalkit/benchmark job on
the parent's checkpoint; an unknown suite is refused at its field and nothing is created."""

from __future__ import annotations

import copy
import json
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from starforge.console.app import build_console
from starforge.console.services.accounts import credentials as accounts
from starforge.console.services.context import Runtime
from starforge.console.services.errors import Rejected
from starforge.console.services.jobs.followup_requests import FollowupAsk, request_followup
from starforge.console.services.jobs.followups import create_followups
from starforge.console.services.jobs.rows import build_job, create_job, set_status
from starforge.console.store.models import Artifact, Job
from starforge.contract import parse_or_raise
from tests.unit.console.test_followups import DOC


@pytest.fixture()
def rt(tmp_path: Path) -> Iterator[Runtime]:
    settings = load_settings_for(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # alembic's, about its own configuration
        runtime = build_console(settings).runtime
    yield runtime
    runtime.db.dispose()


def load_settings_for(state: Path) -> Any:
    from starforge.console.settings import load_settings

    return load_settings(state_dir=state, run_background=False, capacity={"cpu": 2})


def _parent(rt: Runtime, user: str, doc: dict[str, Any]) -> tuple[str, accounts.UserView]:
    with rt.db.write() as db:
        owner = accounts.create_user(db, user)
        job = create_job(db, build_job(user_id=owner.id, username=user, spec=parse_or_raise(doc),
                                       exp="experiments/toy", profile="cpu", priority=3, meta={}, resolved={},
                                       package_sha="sha"))
        for status in ("submitted", "running", "succeeded"):
            set_status(db, job, status)
        db.flush()
        db.add(Artifact(run_id=job.id, kind="checkpoint", path="/state/runs/x/out/ckpt", step=5,
                        created_at=time.time()))
        return job.id, owner


def _row(rt: Runtime, run_id: str) -> Job:
    with rt.db.read() as db:
        row = db.get(Job, run_id)
        assert row is not None
        db.expunge(row)
        return row


def _is_benchmark_child(row: Job, parent: str, suites: str) -> None:
    spec = json.loads(row.spec_json)["spec"]
    assert (row.recipe, row.action, row.parent_id, row.package_sha) == ("evalkit/benchmark", "eval", parent, "")
    assert spec["hyperparams"]["suites"] == suites and spec["framework"]["kind"] == "evalkit"
    resolved = json.loads(row.resolved_json)
    assert resolved["init_from"] == "/state/runs/x/out/ckpt"
    assert [b["suite"] for b in resolved["benchmarks"]] == suites.split(",")


def test_on_success_eval_with_suites_is_a_benchmark_job(rt: Runtime) -> None:
    doc = copy.deepcopy(DOC)
    doc["spec"]["lifecycle"] = {"on_success": ["eval"]}
    doc["spec"]["evaluation"] = {"suites": ["basic-arithmetic", "basic-choice"]}
    parent, _ = _parent(rt, "alice", doc)
    with rt.db.write() as db:
        job = db.get(Job, parent)
        assert job is not None
        [child] = create_followups(db, parent=job, catalog=rt.catalog, settings=rt.settings)
    row = _row(rt, child)
    assert row.status == "queued", row.reason
    _is_benchmark_child(row, parent, "basic-arithmetic,basic-choice")


def test_sf_eval_benchmarks_makes_the_same_job_and_refuses_an_unknown_suite(rt: Runtime) -> None:
    parent, owner = _parent(rt, "bob", DOC)  # tinyrl/grpo declares no eval step: the suites make it runnable
    made = request_followup(rt, user=owner, ref=parent, ask=FollowupAsk("eval", ("basic-choice",)))
    _is_benchmark_child(_row(rt, made.body["job_id"]), parent, "basic-choice")
    with pytest.raises(Rejected) as refused:
        request_followup(rt, user=owner, ref=parent, ask=FollowupAsk("eval", ("basic-choice", "no-such")))
    [problem] = refused.value.problems
    assert problem.field == "spec.evaluation.suites" and "basic-arithmetic" in problem.hint
    with rt.db.read() as db:
        assert db.query(Job).filter(Job.parent_id == parent).count() == 1
    with pytest.raises(Rejected):  # without suites, the recipe's own (missing) eval step is still refused
        request_followup(rt, user=owner, ref=parent, ask=FollowupAsk("eval"))
