"""Services on a real SQLite store, in process: a start goes through admission and writes its job and row; every
refusal is at its field with nothing written; the sweep stops expired services; extend, stop and keys."""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from starforge.console.app import build_console
from starforge.console.operator import register_data
from starforge.console.services.accounts import credentials as accounts
from starforge.console.services.accounts.credentials import UserView, hash_token
from starforge.console.services.context import Runtime
from starforge.console.services.errors import Conflict, NotFound, Rejected
from starforge.console.services.jobs.rows import build_job, create_job, set_status
from starforge.console.services.serving import keys, lifecycle
from starforge.console.settings import load_settings
from starforge.console.store.models import Artifact, Job, Service, ServiceKey, User
from starforge.contract import parse_or_raise

TRAINED: dict[str, Any] = {
    "apiVersion": "forge/v2", "kind": "TrainingJob", "metadata": {"name": "toy", "owner": "alice"},
    "spec": {"recipe": {"name": "tinyrl/grpo", "version": "1.0.0", "digest": "sha256:" + "0" * 64},
             "source": {"exp": "experiments/toy"},
             "framework": {"kind": "tinyrl", "version": "1.0.0", "runtime_id": "tinyrl-1.0.0"},
             "resources": {"pools": [{"name": "all", "nodes": 1, "gpus_per_node": 1, "series": "cpu"}]}},
    "provenance": {"core_version": "0.4.0"},
}


@pytest.fixture()
def rt(tmp_path: Path) -> Iterator[Runtime]:
    roots = tmp_path / "models"
    (roots / "tiny").mkdir(parents=True)
    settings = load_settings(state_dir=tmp_path / "state", run_background=False, capacity={"cpu": 2, "h200": 64},
                             model_roots=(str(roots),))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        runtime = build_console(settings).runtime
    yield runtime
    runtime.db.dispose()


def _user(rt: Runtime, name: str) -> UserView:
    with rt.db.write() as db:
        return accounts.create_user(db, name)


def _run(rt: Runtime, user: UserView, *, checkpoint: Path | None) -> str:
    with rt.db.write() as db:
        job = create_job(db, build_job(user_id=user.id, username=user.username, spec=parse_or_raise(TRAINED),
                                       exp="experiments/toy", profile="cpu", priority=0, meta={}, resolved={},
                                       package_sha=""))
        for status in ("submitted", "running", "succeeded"):
            set_status(db, job, status)
        db.flush()
        if checkpoint is not None:
            job.run_dir = str(checkpoint.parent.parent)  # the run folder its output folder `out` is in
            checkpoint.mkdir(parents=True)
            db.add(Artifact(run_id=job.id, kind="checkpoint", path=str(checkpoint), step=4, created_at=time.time()))
        return job.id


def _counts(rt: Runtime) -> tuple[int, int]:
    with rt.db.read() as db:
        return db.scalar(select(func.count()).select_from(Job).where(Job.action == "serve")) or 0, \
            db.scalar(select(func.count()).select_from(Service)) or 0


def _refused(rt: Runtime, user: UserView, body: dict[str, Any]) -> list[tuple[str, str]]:
    before = _counts(rt)
    with pytest.raises(Rejected) as caught:
        lifecycle.start(rt, user=user, body=body)
    assert caught.value.status == 422 and all(p.hint for p in caught.value.problems), caught.value.problems
    assert _counts(rt) == before  # nothing half-written
    return [(p.field, p.code) for p in caught.value.problems]


def test_a_run_checkpoint_starts_a_queued_service_job_of_the_cpu_recipe(rt: Runtime, tmp_path: Path) -> None:
    alice = _user(rt, "alice")
    ckpt = rt.settings.state_dir / "runs" / "alice" / "toy" / "r-x" / "out" / "checkpoint-4"
    run = _run(rt, alice, checkpoint=ckpt)
    outcome = lifecycle.start(rt, user=alice, body={"model": f"run:{run}", "ttl_hours": 2})
    view = outcome.body
    assert outcome.status_code == 202
    assert view["model"] == f"run:{run}" and view["run_id"] == run and view["model_path"] == str(ckpt)
    assert view["server"] == "transformers" and view["status"] == "queued" and view["profile"] == "cpu"
    assert view["url"] == f"/api/services/{view['id']}/v1" and view["gpus"] == 0
    assert view["expires_at"] == pytest.approx(view["created_at"] + 7200)
    assert view["idle_ttl_s"] == rt.settings.serving.idle_ttl_seconds
    with rt.db.read() as db:
        job = db.get(Job, view["id"])
        assert job is not None and job.action == "serve" and job.recipe == "serving/transformers"
        assert json.loads(job.resolved_json)["init_from"] == str(ckpt) and job.status == "queued"
    assert lifecycle.list_services(rt, user=alice)["services"][0]["id"] == view["id"]


def test_an_export_is_served_before_the_latest_checkpoint(rt: Runtime) -> None:
    alice = _user(rt, "alice")
    out = rt.settings.state_dir / "runs" / "alice" / "toy" / "r-y" / "out"
    run = _run(rt, alice, checkpoint=out / "checkpoint-4")
    (out / "hf_export").mkdir()
    with rt.db.write() as db:
        db.add(Artifact(run_id=run, kind="hf_export", path=str(out / "hf_export"), created_at=time.time()))
    assert lifecycle.start(rt, user=alice, body={"model": f"run:{run}"}).body["model_path"] == str(out / "hf_export")


def test_an_export_swapped_for_a_link_out_of_its_run_is_not_served(rt: Runtime, tmp_path: Path) -> None:
    """A job owns its output folder: a registered export it later replaced with a link to a folder outside (another
    account's run, the console's state) is resolved as `init_from` is, so the service takes the checkpoint."""
    alice = _user(rt, "alice")
    out = rt.settings.state_dir / "runs" / "alice" / "toy" / "r-y" / "out"
    run = _run(rt, alice, checkpoint=out / "checkpoint-4")
    elsewhere = tmp_path / "someone-elses-model"
    elsewhere.mkdir()
    (out / "hf_export").symlink_to(elsewhere)
    with rt.db.write() as db:
        db.add(Artifact(run_id=run, kind="hf_export", path=str(out / "hf_export"), created_at=time.time()))
    assert lifecycle.start(rt, user=alice, body={"model": f"run:{run}"}).body["model_path"] == str(
        out / "checkpoint-4")


def test_a_folder_under_model_roots_and_a_registered_model_become_the_base(rt: Runtime, tmp_path: Path) -> None:
    alice = _user(rt, "alice")
    folder = str(tmp_path / "models" / "tiny")
    view = lifecycle.start(rt, user=alice, body={"model": folder}).body
    assert view["model_path"] == folder
    register_data(rt.db, "model", "alice/tiny@1", folder)
    view = lifecycle.start(rt, user=alice, body={"model": "alice/tiny@1"}).body
    with rt.db.read() as db:
        job = db.get(Job, view["id"])
        assert job is not None and json.loads(job.spec_json)["spec"]["model"]["base"] == "alice/tiny@1"
        assert json.loads(job.resolved_json)["spec.model.base=alice/tiny@1"] == folder


def test_every_bad_request_is_refused_at_its_field_with_nothing_started(rt: Runtime, tmp_path: Path) -> None:
    alice, bob = _user(rt, "alice"), _user(rt, "bob")
    bare = _run(rt, alice, checkpoint=None)
    theirs = _run(rt, bob, checkpoint=rt.settings.state_dir / "runs" / "bob" / "toy" / "r-z" / "out" / "c")
    assert _refused(rt, alice, {"model": "run:r-nothing"}) == [("model", "model_run_unknown")]
    assert _refused(rt, alice, {"model": f"run:{theirs}"}) == [("model", "model_run_unknown")]
    assert _refused(rt, alice, {"model": f"run:{bare}"}) == [("model", "model_no_checkpoint")]
    assert _refused(rt, alice, {"model": "alice/none@1"}) == [("model", "model_unknown")]
    assert _refused(rt, alice, {"model": str(tmp_path)}) == [("model", "model_path_refused")]
    assert _refused(rt, alice, {"model": "../etc"}) == [("model", "model_unknown")]
    assert _refused(rt, alice, {"model": "org/name", "ttl_hours": 1000}) == [("ttl_hours", "ttl_over_cap")]
    assert _refused(rt, alice, {"model": "org/name", "gpus": 32}) == [("gpus", "quota_exceeded")]
    assert _refused(rt, alice, {"model": "", "gpus": -1}) == [("model", "invalid_request"), ("gpus", "invalid_request")]


def test_the_sweep_stops_expired_services_and_only_those(rt: Runtime) -> None:
    alice = _user(rt, "alice")
    old = lifecycle.start(rt, user=alice, body={"model": "org/a"}).body["id"]
    fresh = lifecycle.start(rt, user=alice, body={"model": "org/b"}).body["id"]
    with rt.db.write() as db:
        row = db.get(Service, old)
        assert row is not None
        row.expires_at = time.time() - 1
    with rt.db.write() as db:
        assert lifecycle.any_expired(db, time.time()) and lifecycle.stop_expired(db, time.time()) == 1
    got = lifecycle.get(rt, user=alice, service_id=old)
    assert got["status"] == "stopped" and got["stop_reason"] == "idle TTL expired"
    assert lifecycle.get(rt, user=alice, service_id=fresh)["status"] == "queued"
    assert [s["id"] for s in lifecycle.list_services(rt, user=alice)["services"]] == [fresh]
    assert {s["id"] for s in lifecycle.list_services(rt, user=alice, include_stopped=True)["services"]} == {old, fresh}
    with pytest.raises(Conflict):
        lifecycle.extend(rt, user=alice, service_id=old, body={"hours": 1})


def test_extend_touch_and_stop(rt: Runtime) -> None:
    alice, bob = _user(rt, "alice"), _user(rt, "bob")
    view = lifecycle.start(rt, user=alice, body={"model": "org/a", "ttl_hours": 1}).body
    longer = lifecycle.extend(rt, user=alice, service_id=view["id"], body={"hours": 2})
    assert longer["expires_at"] == pytest.approx(view["expires_at"] + 7200)
    capped = lifecycle.extend(rt, user=alice, service_id=view["id"], body={"hours": 24})
    assert capped["expires_at"] == pytest.approx(view["created_at"] + 24 * 3600)
    with pytest.raises(Rejected) as caught:
        lifecycle.extend(rt, user=alice, service_id=view["id"], body={"hours": 25})
    assert caught.value.problems[0].field == "hours"
    with pytest.raises(NotFound):
        lifecycle.get(rt, user=bob, service_id=view["id"])
    with pytest.raises(NotFound):
        lifecycle.stop(rt, user=bob, service_id=view["id"])
    lifecycle.touch(rt, service_id=view["id"])
    assert lifecycle.stop(rt, user=alice, service_id=view["id"])["status"] == "stopped"


def test_keys_are_shown_once_stored_hashed_and_revocable(rt: Runtime) -> None:
    alice, bob = _user(rt, "alice"), _user(rt, "bob")
    sid = lifecycle.start(rt, user=alice, body={"model": "org/a"}).body["id"]
    made = keys.create_key(rt, user=alice, service_id=sid, body={"name": "nb"})
    assert made["key"].startswith("sfk-") and made["prefix"] == made["key"][:12]
    with rt.db.read() as db:
        row = db.scalar(select(ServiceKey))
        assert row is not None and made["key"] not in (row.token_hash, row.prefix + "x")
        assert row.token_hash == hash_token(made["key"])
        assert keys.key_owner(db, made["key"]) == (alice.id, sid)
    listed = keys.list_keys(rt, user=alice, service_id=sid)["keys"]
    assert listed == [{"id": made["id"], "name": "nb", "prefix": made["prefix"], "created_at": made["created_at"],
                       "revoked_at": None}]
    with pytest.raises(NotFound):
        keys.list_keys(rt, user=bob, service_id=sid)
    with pytest.raises(NotFound):
        keys.revoke_key(rt, user=bob, service_id=sid, key_id=made["id"])
    with rt.db.write() as db:
        row = db.get(User, alice.id)
        assert row is not None
        row.disabled = True
    assert keys.identify_key(rt, made["key"]) is None  # a disabled account's keys open nothing
    with rt.db.write() as db:
        row = db.get(User, alice.id)
        assert row is not None
        row.disabled = False
    assert keys.identify_key(rt, made["key"]) == (alice.id, sid)
    assert keys.revoke_key(rt, user=alice, service_id=sid, key_id=made["id"])["revoked_at"] is not None
    assert keys.identify_key(rt, made["key"]) is None


def test_a_name_or_a_model_the_contract_refuses_is_said_at_the_request_s_field(rt: Runtime) -> None:
    alice = _user(rt, "alice")
    assert [f for f, _ in _refused(rt, alice, {"model": "org/a", "name": "../../x"})] == ["name"]
    assert [f for f, _ in _refused(rt, alice, {"model": "org/a", "name": "x" * 400})] == ["name"]
    assert _refused(rt, alice, {"model": "org/a", "gpus": 10**30}) == [("gpus", "invalid_request")]


def test_a_run_being_served_is_not_cleaned(rt: Runtime) -> None:
    from starforge.console.services.jobs.experiment_clean import clean_experiment

    alice = _user(rt, "alice")
    run = _run(rt, alice, checkpoint=rt.settings.state_dir / "runs" / "alice" / "toy" / "r-s" / "out" / "c")
    sid = lifecycle.start(rt, user=alice, body={"model": f"run:{run}"}).body["id"]
    answer = clean_experiment(rt, user=alice, exp="experiments/toy")
    assert answer["cleaned"] == [] and [s["job_ref"] for s in answer["skipped"]] == [run], answer
    lifecycle.stop(rt, user=alice, service_id=sid)
    assert clean_experiment(rt, user=alice, exp="experiments/toy")["cleaned"] == [run]
