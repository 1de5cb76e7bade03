"""The merged config is read from the launch plan in the run's work folder, which the job itself may rewrite: a link,
a linked folder or a FIFO in the plan's place reaches no other file and never blocks the console."""

from __future__ import annotations

import os
from pathlib import Path

from starforge.console.services.runs.inputs import _plan_text
from starforge.wire import PLAN_FILE


def _plan_at(run: Path) -> Path:
    plan = run / "work" / PLAN_FILE
    plan.parent.mkdir(parents=True)
    return plan


def test_the_console_written_plan_is_read(tmp_path: Path) -> None:
    _plan_at(tmp_path / "run").write_text('{"apiVersion": "x"}', encoding="utf-8")
    assert _plan_text(tmp_path / "run") == '{"apiVersion": "x"}'


def test_a_link_in_the_plans_place_reads_nothing(tmp_path: Path) -> None:
    secret = tmp_path / "other-users-plan.json"
    secret.write_text('{"secret": 1}', encoding="utf-8")
    _plan_at(tmp_path / "run").symlink_to(secret)
    assert _plan_text(tmp_path / "run") == ""


def test_a_linked_folder_on_the_way_reads_nothing(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere" / ".starforge"
    elsewhere.mkdir(parents=True)
    (elsewhere / "launch.json").write_text('{"secret": 1}', encoding="utf-8")
    (tmp_path / "run" / "work").mkdir(parents=True)
    (tmp_path / "run" / "work" / ".starforge").symlink_to(elsewhere)
    assert _plan_text(tmp_path / "run") == ""


def test_a_fifo_in_the_plans_place_does_not_block(tmp_path: Path) -> None:
    os.mkfifo(_plan_at(tmp_path / "run"))
    assert _plan_text(tmp_path / "run") == ""  # returns at once: opened without blocking, refused as not a file
