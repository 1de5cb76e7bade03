"""The launch shows the published packs of the suites admission chose to the job, read-only, and names every suite
in `FORGE_BENCHMARKS` (a builtin one is in the job's own StarForge copy); a pack whose files changed since admission (another digest) or vanished stops the launch."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from starforge.benchmarks import BUILTIN_ROOT
from starforge.bundle import directory_digest
from starforge.console.scheduler.errors import LaunchFailure
from starforge.console.scheduler.prepare import _benchmark_mounts
from starforge.engines import JobPaths

PATHS = JobPaths(storage_root="/storage", run_dir="/storage/runs/r", inputs="/inputs")


def _entry(suite: str, task: str, pack: str, path: Path, *, builtin: bool = False) -> dict[str, object]:
    return {"suite": suite, "task": task, "pack": pack, "version": "1", "digest": directory_digest(path),
            "metrics": ["acc"], "builtin": builtin, "path": str(path)}


def test_each_pack_is_mounted_once_and_named_with_its_suites(tmp_path: Path) -> None:
    quiz = tmp_path / "quiz"
    shutil.copytree(BUILTIN_ROOT, quiz)
    resolved = {"benchmarks": [_entry("basic-choice", "basic_choice", "starforge/basic", BUILTIN_ROOT, builtin=True),
                               _entry("basic-arithmetic", "basic_arithmetic", "starforge/basic", BUILTIN_ROOT,
                                      builtin=True),
                               _entry("quiz", "basic_choice", "ann/quiz", quiz)]}
    mounts, variable = _benchmark_mounts(resolved, PATHS)
    assert [(m.source, m.target) for m in mounts] == [(quiz, "/inputs/bench-ann-quiz")]
    named = json.loads(variable)  # the builtin pack is the job's own StarForge copy's: not mounted
    assert [(n["suite"], n["task"], n["builtin"], n["path"]) for n in named] == [
        ("basic-choice", "basic_choice", True, ""), ("basic-arithmetic", "basic_arithmetic", True, ""),
        ("quiz", "basic_choice", False, "/inputs/bench-ann-quiz")]
    assert _benchmark_mounts({}, PATHS) == ([], "")


def test_a_pack_that_changed_or_vanished_stops_the_launch(tmp_path: Path) -> None:
    quiz = tmp_path / "quiz"
    shutil.copytree(BUILTIN_ROOT, quiz)
    entry = _entry("quiz", "basic_choice", "ann/quiz", quiz)
    (quiz / "choice.jsonl").write_text("{}\n")
    with pytest.raises(LaunchFailure, match="changed since the job was admitted"):
        _benchmark_mounts({"benchmarks": [entry]}, PATHS)
    shutil.rmtree(quiz)
    with pytest.raises(LaunchFailure, match="is gone from the console"):
        _benchmark_mounts({"benchmarks": [entry]}, PATHS)
