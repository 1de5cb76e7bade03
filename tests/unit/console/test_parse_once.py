"""A JobSpec is parsed at most once per process on the common path: once in the lab (`build_submission`, what
`sf submit` runs), once in the console (admission), and never again through placement, the claim, runtime planning,
preparation and the launch on the local executor — nor twice in admission when it needs the store.

The console runs in this process (an ASGI app behind the SDK's transport): calls of `starforge.contract.parse` on
the test's main thread are the lab's and the client's, calls on any other thread (the app's event loop and worker
threads, the submission writer, the scheduler's thread) are the console's.
"""

from __future__ import annotations

import os
import select
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

import starforge.contract._parse as contract_parse
from starforge.client import Console
from starforge.console.app import bootstrap_admin, build_console, create_app
from starforge.console.scheduler import Scheduler
from starforge.console.services.context import Runtime
from starforge.console.settings import load_settings
from starforge.console.store.models import Job
from starforge.engines import Isolation, LocalExecutor
from starforge.engines.base import ref_parts
from starforge.lab import SubmitOptions, build_submission, client_catalog, create_experiment, init_lab
from tests.integration import helpers
from tests.unit.lab.conftest import commit

URL = "http://console.test"


class Parses:
    """Counts `starforge.contract.parse` calls by process: `lab` (the main thread) and `console` (the others)."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()

    def wrap(self, real: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def counting(doc: Any) -> Any:
            side = "lab" if threading.current_thread() is threading.main_thread() else "console"
            with self._lock:
                self.calls[side] += 1
            return real(doc)

        return counting

    def reset(self) -> None:
        with self._lock:
            self.calls.clear()


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Parses:
    """Count every call of the contract's parse, under every name a loaded module bound it to."""
    counter = Parses()
    real = contract_parse.parse
    counting = counter.wrap(real)
    bound = [module for name, module in list(sys.modules.items())
             if name.startswith("starforge") and getattr(module, "parse", None) is real]
    assert contract_parse in bound  # parse_or_raise calls it through its module: both are counted
    for module in bound:
        monkeypatch.setattr(module, "parse", counting)
    return counter


@dataclass
class World:
    rt: Runtime
    client: Console
    scheduler: Scheduler


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    settings = load_settings(state_dir=tmp_path / "state", run_background=False, capacity={"cpu": 2})
    settings = replace(settings, runtimes=replace(settings.runtimes, cache_dir=tmp_path / "cache",
                                                  hub_cache=tmp_path / "hub"))
    built = build_console(settings)
    rt = built.runtime
    token = bootstrap_admin(rt)
    assert token
    executor = LocalExecutor({"cpu": 2}, gpus={}, isolation=Isolation.none(settings.state_dir))
    with TestClient(create_app(settings, built)) as rest:
        yield World(rt, Console(URL, token, transport=helpers.forwarding(rest)), Scheduler(rt, executor, runtimes=built.runtimes))
    built.runtimes.shutdown()
    rt.db.dispose()


def _lab(root: Path) -> Path:
    lab = init_lab(root, name="unit-lab")
    exp = create_experiment(lab, "toy", client_catalog(), method="tinyrl/grpo").path
    assert exp is not None
    config = exp / "config.yaml"
    config.write_text(config.read_text().replace("max_num_steps: 60", "max_num_steps: 2"))
    commit(lab, "a short run")
    return lab


def _on_console_thread(step: Callable[[], None]) -> None:
    """Run `step` on a thread of its own, as the console's scheduler thread runs its cycles."""
    failure: list[BaseException] = []

    def run() -> None:
        try:
            step()
        except BaseException as exc:  # re-raised on the test's thread
            failure.append(exc)

    thread = threading.Thread(target=run, name="starforge-scheduler")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]


def _wait_for_exit(ref: str) -> None:
    """Block until the job's process has exited (its pidfd turns readable): an event, not a sleep."""
    pid = int(ref_parts(ref)[1])
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return  # already gone
    try:
        ready, _, _ = select.select([fd], [], [], 300)
        assert ready, f"the job's process {pid} did not exit"
    finally:
        os.close(fd)


def test_submit_admit_and_launch_parse_the_spec_once_per_process(tmp_path: Path, world: World,
                                                                  parses: Parses) -> None:
    lab = _lab(tmp_path / "lab")
    profiles = world.client.cluster_status().profiles
    parses.reset()
    built = build_submission(lab, "toy", SubmitOptions(profiles=("cpu:1",)), profiles=profiles)
    assert built.ok and built.spec is not None, built.problems
    assert parses.calls == {"lab": 1}  # the lab's one verdict (`check_document`)

    parses.reset()
    result = world.client.submit(built.spec, built.bundle, exp=built.exp, profile=built.profile,
                                 meta_extra=built.meta)
    assert not result.queued  # placed at once: it starts on the next cycle
    _on_console_thread(world.scheduler.cycle)  # place, claim, plan the runtime, prepare, start
    with world.rt.db.read() as db:
        job = db.get(Job, result.job_id)
        assert job is not None
        status, ref = job.status, job.executor_ref
    assert status == "running" and ref.startswith("local:"), job.reason
    # admission parsed it (its first submission: the quota is not cached, so it read the store, and still parsed
    # once); the lab's client sent it without parsing
    assert parses.calls == {"console": 1}

    # the runner (its own process, outside this count) reports to the console's ingest URL, which no socket serves
    # here: its run ends at its first report, and the watch records that end without loading the job again
    _wait_for_exit(ref)
    _on_console_thread(world.scheduler.cycle)
    assert parses.calls == {"console": 1}
    with world.rt.db.read() as db:
        job = db.get(Job, result.job_id)
        assert job is not None
        assert job.status in ("succeeded", "failed") and job.exit_code is not None  # the watch saw it end


def test_a_job_admitted_by_another_process_is_parsed_once_at_its_claim(tmp_path: Path, world: World,
                                                                      parses: Parses) -> None:
    lab = _lab(tmp_path / "lab")
    built = build_submission(lab, "toy", SubmitOptions(profiles=("cpu:1",)),
                             profiles=world.client.cluster_status().profiles)
    assert built.ok and built.spec is not None, built.problems
    result = world.client.submit(built.spec, built.bundle, exp=built.exp, profile=built.profile,
                                 meta_extra=built.meta)
    assert not result.queued
    assert world.rt.submissions.handover.take(result.job_id) is not None  # as if a restarted console claimed it
    parses.reset()
    _on_console_thread(world.scheduler.cycle)
    assert parses.calls == {"console": 1}  # loaded from its row, once, for planning, preparation and the launch
    with world.rt.db.read() as db:
        job = db.get(Job, result.job_id)
        assert job is not None
        status, ref = job.status, job.executor_ref
    assert status == "running", job.reason
    _wait_for_exit(ref)
    _on_console_thread(world.scheduler.cycle)
    assert parses.calls == {"console": 1}


def test_a_check_that_needs_the_store_parses_the_spec_once(tmp_path: Path, world: World, parses: Parses) -> None:
    lab = _lab(tmp_path / "lab")
    built = build_submission(lab, "toy", SubmitOptions(profiles=("cpu:1",)),
                             profiles=world.client.cluster_status().profiles)
    assert built.ok and built.spec is not None, built.problems
    parses.reset()
    verdict = world.client.check(built.spec, profile=built.profile)  # the quota is not cached yet: the store
    assert verdict.ok, verdict.problems
    assert parses.calls == {"console": 1}
