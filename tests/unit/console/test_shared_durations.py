"""The measurements of a console of several worker processes are the console's: each process counts into a file of
its own in one folder and a snapshot sums them all, so a scrape answered by any worker reports every submission,
those of a worker that exited included; a console of one process counts in memory as before."""

from __future__ import annotations

import multiprocessing
import stat
from pathlib import Path

from starforge.console.services.observability.recorder import SUBMISSION_BUCKETS, Durations, Observations


def _observe(folder: str, seconds: list[float], label: str) -> None:
    durations = Observations.shared_in(Path(folder)).submissions
    for value in seconds:
        durations.observe(value, label)


def test_every_process_counts_into_one_snapshot(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    children = [context.Process(target=_observe, args=(str(tmp_path), [0.002, 0.2], "started")),
                context.Process(target=_observe, args=(str(tmp_path), [7.0], "rejected"))]
    for child in children:
        child.start()
    for child in children:
        child.join(30)
        assert child.exitcode == 0
    mine = Observations.shared_in(tmp_path).submissions  # this process, after both children exited
    mine.observe(0.004, "started")
    seen = mine.snapshot()
    assert sorted(seen) == ["rejected", "started"]  # labels nobody observed are left out
    started = seen["started"]
    assert started.count == 3 and abs(started.total - 0.206) < 1e-9
    assert dict(started.buckets)[0.0025] == 1 and dict(started.buckets)[0.005] == 2
    assert dict(started.buckets)[0.25] == 3 and started.buckets[-1] == (float("inf"), 3)
    assert seen["rejected"].count == 1 and dict(seen["rejected"].buckets)[5.0] == 0
    assert len(list(tmp_path.glob("submissions.*"))) == 3  # one file per process
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in tmp_path.iterdir())


def test_an_undeclared_label_is_not_counted_and_never_fails(tmp_path: Path) -> None:
    durations = Observations.shared_in(tmp_path).cycles
    durations.observe(0.01, "sideways")
    durations.observe(0.01, "place")
    assert list(durations.snapshot()) == ["place"]


def test_one_process_counts_in_memory_under_any_label() -> None:
    durations = Durations(SUBMISSION_BUCKETS)
    durations.observe(0.01, "anything")
    durations.observe(20.0, "anything")
    seen = durations.snapshot()["anything"]
    assert (seen.count, dict(seen.buckets)[0.01], seen.buckets[-1]) == (2, 1, (float("inf"), 2))
