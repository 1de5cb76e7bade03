"""The runtime cache and its builds: one build per runtime however many threads ask, logs for every waiting job,
failures that leave nothing behind (real threads, real file locks, a real interpreter in each venv)."""

from __future__ import annotations

import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from starforge.console.scheduler import REASON_CHARS, build_failure
from starforge.engines.runtimes import (
    BuildFailed,
    RuntimeCache,
    RuntimeSettings,
    RuntimeSpec,
)
from starforge.engines.runtimes.installers import run_logged
from tests.unit.console.runtimes.probe import Probe as _Installer
from tests.unit.console.runtimes.probe import ProbeRuntimes as _Runtimes

SPEC = RuntimeSpec("probe-1.0", "cpu", "3.11", ("probe==1.0",))


def _settings(tmp_path: Path) -> RuntimeSettings:
    return RuntimeSettings(cache_dir=tmp_path / "cache", hub_cache=tmp_path / "hub")


def test_jobs_of_one_runtime_wait_for_a_single_build(tmp_path: Path) -> None:
    gate = threading.Event()
    runtimes = _Runtimes(_settings(tmp_path), _Installer(gate))
    logs = [tmp_path / f"job{i}.log" for i in range(4)]
    with ThreadPoolExecutor(4) as pool:
        futures = list(pool.map(lambda log: runtimes.prepare(SPEC, log), logs))
    assert len({id(f) for f in futures}) == 1  # every job joined the one build under way
    assert runtimes.ready(SPEC) is None
    gate.set()
    records = [f.result(timeout=30) for f in futures]
    assert runtimes.probe.installs == 1
    assert records[0].path == str(runtimes.cache.path_of(SPEC)) and records[0].installer == "probe"
    assert runtimes.ready(SPEC) == records[0]
    for log in logs:  # each waiting job's log holds the whole build, joined early or late
        text = log.read_text()
        assert "[runtime] created" in text and "[runtime] installed probe==1.0" in text
    # a later job finds it built: no second build
    again = runtimes.prepare(SPEC, tmp_path / "late.log").result(timeout=30)
    assert again == records[0] and runtimes.probe.installs == 1
    assert "is built" in (tmp_path / "late.log").read_text()
    runtimes.shutdown()


def test_builds_from_several_caches_share_the_file_lock(tmp_path: Path) -> None:
    gate = threading.Event()
    installer = _Installer(gate)
    caches = [RuntimeCache(tmp_path / "cache") for _ in range(3)]  # e.g. a console and `sf console runtime build`
    another_waits = threading.Event()

    def log(line: str) -> None:
        if "waiting for it" in line:
            another_waits.set()

    with ThreadPoolExecutor(3) as pool:
        futures = [pool.submit(c.build, SPEC, lambda: installer, log) for c in caches]
        assert another_waits.wait(timeout=30), "no second build waited for the first"
        gate.set()
        records = [f.result(timeout=30) for f in futures]
    assert installer.installs == 1 and len(set(records)) == 1
    assert [r.runtime_id for r in caches[0].records()] == ["probe-1.0"]


def test_a_failed_build_leaves_nothing_and_the_next_one_builds_again(tmp_path: Path) -> None:
    gate = threading.Event()
    gate.set()
    runtimes = _Runtimes(_settings(tmp_path), _Installer(gate, fail="ERROR: No matching distribution for probe==1.0"))
    future = runtimes.prepare(SPEC, tmp_path / "job.log")
    with pytest.raises(BuildFailed, match="No matching distribution"):
        future.result(timeout=30)
    assert not runtimes.cache.path_of(SPEC).exists() and runtimes.ready(SPEC) is None
    assert "the build failed: ERROR: No matching distribution" in (tmp_path / "job.log").read_text()
    runtimes.probe.fail = ""
    assert runtimes.prepare(SPEC, tmp_path / "job2.log").result(timeout=30).runtime_id == "probe-1.0"
    assert runtimes.probe.installs == 2
    runtimes.shutdown()


def test_an_interrupted_build_is_removed_before_building_again(tmp_path: Path) -> None:
    gate = threading.Event()
    gate.set()
    cache = RuntimeCache(tmp_path / "cache")
    leftover = cache.path_of(SPEC)
    (leftover / "lib").mkdir(parents=True)  # a folder without its record: the console died during the build
    lines: list[str] = []
    record = cache.build(SPEC, lambda: _Installer(gate), lines.append)
    assert record is not None and any("removing an unfinished build" in line for line in lines)
    assert not (leftover / "lib").exists()


def test_installer_errors_are_the_failure_reason(tmp_path: Path) -> None:
    lines: list[str] = []
    script = "import sys; print('Collecting x'); print('ERROR: Could not find a version that satisfies x'); sys.exit(1)"
    with pytest.raises(BuildFailed) as failed:
        run_logged([sys.executable, "-c", script], lines.append, timeout=60, what="installing")
    assert str(failed.value) == "ERROR: Could not find a version that satisfies x"
    assert "Collecting x" in lines
    reason = build_failure(SPEC, BuildFailed("E" * 5000))
    assert reason.startswith("the runtime probe-1.0 (python 3.11, cpu) could not be built: EEE")
    assert len(reason) == REASON_CHARS
