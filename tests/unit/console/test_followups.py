"""Follow-ups on a real SQLite store: one `create_job` for children too, the follow-up checks, and their exemptions."""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from starforge.console.app import build_console
from starforge.console.services.accounts import credentials as accounts
from starforge.console.services.admission import FOLLOWUP_CHECKS, POLICY_CHECKS
from starforge.console.services.admission.followup import EXEMPT, EXEMPT_CODES, admit_followup
from starforge.console.services.context import Runtime
from starforge.console.services.jobs.followups import child_spec, create_followups
from starforge.console.services.jobs.rows import build_job, create_job, set_status
from starforge.console.services.quota import caps as quota
from starforge.console.settings import load_settings
from starforge.console.store.models import Admission, Job
from starforge.contract import parse_or_raise

DOC: dict[str, Any] = {
    "apiVersion": "forge/v2", "kind": "TrainingJob", "metadata": {"name": "toy", "project": "lab", "owner": "alice"},
    "spec": {"recipe": {"name": "tinyrl/grpo", "version": "1.0.0", "digest": "sha256:" + "0" * 64},
             "source": {"exp": "experiments/toy"},
             "framework": {"kind": "tinyrl", "version": "1.0.0", "runtime_id": "tinyrl-1.0.0"},
             "resources": {"pools": [{"name": "all", "nodes": 1, "gpus_per_node": 1, "series": "cpu"}]},
             "lifecycle": {"on_success": ["export"]}},
    "provenance": {"core_version": "0.4.0"},
}


@pytest.fixture()
def rt(tmp_path: Path) -> Iterator[Runtime]:
    settings = load_settings(state_dir=tmp_path, run_background=False, capacity={"cpu": 2})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # alembic's, about its own configuration
        runtime = build_console(settings).runtime
    yield runtime
    runtime.db.dispose()


def _succeeded_parent(rt: Runtime, **quota_values: Any) -> str:
    with rt.db.write() as db:
        alice = accounts.create_user(db, "alice")
        if quota_values:
            quota.set_quota(db, alice, quota_values, rt.settings.quota)
        job = create_job(db, build_job(user_id=alice.id, username="alice", spec=parse_or_raise(DOC),
                                       exp="experiments/toy", profile="cpu", priority=3,
                                       meta={"git_commit": "3f2a9c1"}, resolved={}, package_sha="sha"))
        for status in ("submitted", "running", "succeeded"):
            set_status(db, job, status)
        job.started_at = time.time() - 7200  # two GPU hours today
        return job.id


def _followups(rt: Runtime, parent: str) -> list[Job]:
    with rt.db.write() as db:
        job = db.get(Job, parent)
        assert job is not None
        created = create_followups(db, parent=job, catalog=rt.catalog, settings=rt.settings)
    with rt.db.read() as db:
        return [row for row in (db.get(Job, run_id) for run_id in created) if row is not None]


def test_every_policy_check_is_rechecked_or_exempt_with_a_reason() -> None:
    assert set(FOLLOWUP_CHECKS) | set(EXEMPT) == set(POLICY_CHECKS)
    assert not set(FOLLOWUP_CHECKS) & set(EXEMPT)
    assert all(EXEMPT.values())
    assert set(EXEMPT_CODES) == {"quota_exhausted"}


def test_a_child_is_created_like_a_submission_and_queued(rt: Runtime) -> None:
    parent = _succeeded_parent(rt)
    [child] = _followups(rt, parent)
    assert (child.status, child.waiting_for, child.reason) == ("queued", "capacity", f"export step of {parent}")
    assert (child.parent_id, child.action, child.priority, child.package_sha) == (parent, "export", 3, "sha")
    assert (child.name, child.exp, child.profile, child.recipe) == ("toy", "experiments/toy", "cpu", "tinyrl/grpo")
    assert child.requested_gpus == 1 and json.loads(child.series_gpus) == {"cpu": 1}
    assert json.loads(child.meta_json) == {"git_commit": "3f2a9c1"}
    assert json.loads(child.resolved_json) == {"init_from": ""}
    spec = json.loads(child.spec_json)
    assert "lifecycle" not in spec["spec"] and spec["metadata"]["owner"] == "alice"
    assert spec["spec"]["resources"] == {"pools": [{"name": "lifecycle", "nodes": 1, "gpus_per_node": 1,
                                                    "series": "cpu"}]}
    with rt.db.read() as db:
        audit = db.scalars(select(Admission).where(Admission.job_id == child.id)).one()
        assert (audit.source, audit.verdict) == ("followup", "queued")


def test_a_child_the_checks_refuse_fails_with_every_problem(rt: Runtime) -> None:
    parent = _succeeded_parent(rt, allowed_profiles=["h200"], max_concurrent_gpus=0)
    [child] = _followups(rt, parent)
    assert child.status == "failed"
    assert child.reason.startswith("The export step was refused\n- X-Forge-Meta.profile: ")
    with rt.db.read() as db:
        audit = db.scalars(select(Admission).where(Admission.job_id == child.id)).one()
        assert audit.verdict == "rejected"
        assert [p["code"] for p in json.loads(audit.problems_json)] == ["profile_not_allowed"]


def test_the_daily_budget_is_exempt_but_the_concurrent_cap_is_not(rt: Runtime) -> None:
    spent = _succeeded_parent(rt, daily_gpu_hours=1.0, max_concurrent_gpus=1)
    assert [c.status for c in _followups(rt, spent)] == ["queued"]  # 2 of 1 GPU hours used today: still queued
    with rt.db.read() as db:
        alice = accounts.get_user(db, "alice")
        wider = child_spec(parse_or_raise(DOC), series="cpu", gpus=2)
        problems = admit_followup(db, rt.settings, spec=wider, owner=alice, profile="cpu",
                                  recipe=rt.catalog.get("tinyrl/grpo"))
    assert [p.code for p in problems] == ["quota_exceeded"]  # a child above the cap could never start


def test_a_disabled_account_gets_no_follow_ups(rt: Runtime) -> None:
    parent = _succeeded_parent(rt)
    with rt.db.write() as db:
        accounts.set_disabled(db, "alice", True)
    assert _followups(rt, parent) == []
