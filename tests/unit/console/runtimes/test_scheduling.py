"""The scheduler and runtime builds on a real SQLite store: a placed job whose runtime is missing is `preparing`,
the scheduler thread never waits for the build, a stop ends it `stopped`, a failed build fails it with the
installer's error, and after a restart its build starts again."""

from __future__ import annotations

import contextlib
import threading
import time
import warnings
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from starforge.console.app import build_console
from starforge.console.scheduler import Scheduler
from starforge.console.services.accounts import credentials as accounts
from starforge.console.services.context import Runtime
from starforge.console.services.jobs.rows import build_job, create_job, set_status, stop_job
from starforge.console.services.logs.store import log_path
from starforge.console.settings import load_settings
from starforge.console.store.models import Job
from starforge.contract import parse_or_raise
from starforge.engines import Isolation, LocalExecutor
from starforge.engines.runtimes import Runtimes
from tests.unit.console.runtimes.probe import Probe as _Installer
from tests.unit.console.runtimes.probe import ProbeRuntimes as _Runtimes

DOC = {
    "apiVersion": "forge/v2", "kind": "TrainingJob", "metadata": {"name": "toy", "project": "lab", "owner": "alice"},
    "spec": {"recipe": {"name": "tinyrl/grpo", "version": "1.0.0", "digest": "sha256:" + "0" * 64},
             "source": {"exp": "experiments/toy"},
             "framework": {"kind": "tinyrl", "version": "1.0.0", "runtime_id": "tinyrl-1.0.0"},
             "resources": {"pools": [{"name": "all", "nodes": 1, "gpus_per_node": 1, "series": "cpu"}]}},
    "provenance": {"core_version": "0.4.0"},
}


@pytest.fixture()
def rt(tmp_path: Path) -> Iterator[Runtime]:
    settings = load_settings(state_dir=tmp_path / "state", run_background=False, capacity={"cpu": 2})
    # the console's environment has tinyrl's numpy: without it, tinyrl's runtime is built
    settings = replace(settings, runtimes=replace(settings.runtimes, cache_dir=tmp_path / "cache",
                                                  hub_cache=tmp_path / "hub", console_env=False))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        runtime = build_console(settings).runtime
    yield runtime
    runtime.db.dispose()


class Builds:
    """The recipe runtimes the next scheduler of the test's console runs on: a probe whose builds wait on a gate."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.runtimes: Runtimes = Runtimes(rt.settings.runtimes)

    def probe(self, fail: str = "") -> threading.Event:
        """Swap in a probe (as a new console process would start its own) and return the gate its builds wait on."""
        gate = threading.Event()
        self.runtimes.shutdown()
        self.runtimes = _Runtimes(self.rt.settings.runtimes, _Installer(gate, fail))
        return gate

    def scheduler(self) -> Scheduler:
        """Return a scheduler of the console on the local engine and the current runtimes."""
        executor = LocalExecutor({"cpu": 2}, isolation=Isolation.none(self.rt.settings.state_dir))
        return Scheduler(self.rt, executor, runtimes=self.runtimes)


@pytest.fixture()
def builds(rt: Runtime) -> Iterator[Builds]:
    made = Builds(rt)
    yield made
    made.runtimes.shutdown()


def _placed(rt: Runtime) -> str:
    with rt.db.write() as db:
        alice = accounts.create_user(db, "alice")
        job = create_job(db, build_job(user_id=alice.id, username="alice", spec=parse_or_raise(DOC),
                                       exp="experiments/toy", profile="cpu", priority=3, meta={}, resolved={},
                                       package_sha=""))
        set_status(db, job, "submitted", reason="placed")
        return job.id


def _job(rt: Runtime, job_id: str) -> Job:
    with rt.db.read() as db:
        job = db.get(Job, job_id)
        assert job is not None
        db.expunge(job)
        return job


def _until_built(rt: Runtime, scheduler: Scheduler) -> None:
    for build in list(scheduler.launcher.preparing.values()):
        with contextlib.suppress(Exception):  # a failed build is what some tests want
            build.future.result(timeout=30)
    deadline = time.monotonic() + 30
    while scheduler.runtimes._inflight and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_stopped_preparing_job_ends_stopped_and_never_starts(rt: Runtime, builds: Builds) -> None:
    gate = builds.probe()
    job_id = _placed(rt)
    scheduler = builds.scheduler()
    scheduler.cycle()  # returns while the build waits on its gate: the scheduler thread never blocks on it
    job = _job(rt, job_id)
    assert job.status == "preparing" and job.reason == "building runtime tinyrl-1.0.0 (python 3.11, cpu)"
    assert log_path(job.run_dir).is_file()  # the build writes into the job's log before the run folder is laid out
    with rt.db.write() as db:
        row = db.get(Job, job_id)
        assert row is not None
        stop_job(db, row, "stopped on request")
    scheduler.cycle()
    assert _job(rt, job_id).status == "stopped"
    gate.set()
    _until_built(rt, scheduler)
    scheduler.cycle()
    job = _job(rt, job_id)
    assert job.status == "stopped" and job.executor_ref == ""
    assert builds.runtimes.cache.records()  # the build went on: the next job finds it built


def test_a_failed_build_fails_the_job_with_the_installers_error(rt: Runtime, builds: Builds) -> None:
    gate = builds.probe(fail="ERROR: No matching distribution found for numpy>=1.24")
    job_id = _placed(rt)
    scheduler = builds.scheduler()
    scheduler.cycle()
    gate.set()
    _until_built(rt, scheduler)
    scheduler.cycle()
    job = _job(rt, job_id)
    assert job.status == "failed"
    assert job.reason == ("the runtime tinyrl-1.0.0 (python 3.11, cpu) could not be built: "
                          "ERROR: No matching distribution found for numpy>=1.24")
    assert "[runtime] the build failed: ERROR: No matching" in log_path(job.run_dir).read_text()


def test_a_restarted_console_builds_the_runtime_of_a_preparing_job_again(rt: Runtime, builds: Builds) -> None:
    first = builds.probe(fail="ERROR: the first console stopped")  # its console stops before the build ends
    job_id = _placed(rt)
    old = builds.scheduler()
    old.cycle()
    assert _job(rt, job_id).status == "preparing"
    first.set()
    _until_built(rt, old)  # the old process is gone, and its file lock with it; its scheduler never cycles again
    gate = builds.probe(fail="ERROR: the second build ran")  # the next console process
    again = builds.scheduler()
    again.reconcile()
    assert _job(rt, job_id).status == "submitted"
    again.cycle()
    assert _job(rt, job_id).status == "preparing"
    gate.set()
    _until_built(rt, again)
    again.cycle()
    job = _job(rt, job_id)
    assert job.status == "failed" and job.reason.endswith("ERROR: the second build ran")
    assert builds.runtimes.probe.installs == 1  # type: ignore[attr-defined]
