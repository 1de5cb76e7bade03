"""A failed job's reason carries the last meaningful error line of its log: bounded, without host paths."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from starforge.console.services.jobs.failure_line import MAX_LINE, failure_line, failure_reason

_TRACEBACK = """[forge-launch] job started (pid 3)
/opt/runtimes/trl/lib/python3.11/site-packages/transformers/training_args.py:1541: FutureWarning: deprecated
  warnings.warn("deprecated", FutureWarning)
Traceback (most recent call last):
  File "/opt/runtimes/starforge/runner/pinned.py", line 27, in main
    runpy.run_module(module, run_name="__main__", alter_sys=True)
  File "/opt/runtimes/trl/lib/python3.11/site-packages/transformers/training_args.py", line 1782, in _validate_args
    raise ValueError(error_message)
ValueError: Your setup doesn't support bf16/gpu. You need to assign use_cpu if you want to train the model on CPU.
[forge-launch] job failed (exit code 1); exiting with 1
"""


def _run(tmp_path: Path, text: str) -> Path:
    (tmp_path / "logs").mkdir(parents=True, exist_ok=True)
    (tmp_path / "logs" / "output.log").write_text(text, encoding="utf-8")
    return tmp_path


def test_the_exception_line_of_the_last_traceback_is_the_reason(tmp_path: Path) -> None:
    assert failure_reason(1, _run(tmp_path, _TRACEBACK)) == (
        "exit code 1: ValueError: Your setup doesn't support bf16/gpu. You need to assign use_cpu if you want to "
        "train the model on CPU.")


def test_a_chained_traceback_gives_the_final_exception(tmp_path: Path) -> None:
    log = ("Traceback (most recent call last):\n  File \"a.py\", line 1\nKeyError: 'x'\n\nDuring handling of the above "
           "exception, another exception occurred:\n\nTraceback (most recent call last):\n  File \"a.py\", line 3\n"
           "    raise RuntimeError('bad config') from None\nRuntimeError: bad config\n")
    assert failure_line(_run(tmp_path, log)) == "RuntimeError: bad config"


def test_without_a_traceback_the_last_line_naming_an_error_is_the_reason(tmp_path: Path) -> None:
    log = ("step 1 loss 2.0\nerror: CUDA out of memory on device 0\n\x1b[31mstep 2\x1b[0m\n"
           "[forge-launch] job failed (exit code 3); exiting with 3\n")
    assert failure_reason(3, _run(tmp_path, log)) == "exit code 3: error: CUDA out of memory on device 0"


def test_a_log_that_says_nothing_keeps_the_exit_code_alone(tmp_path: Path) -> None:
    quiet = "step 1\nstep 2\n[forge-launch] job failed (exit code 2)\n"
    assert failure_reason(2, _run(tmp_path, quiet)) == "exit code 2"
    assert failure_reason(2, tmp_path / "no-such-run") == "exit code 2"
    assert failure_reason(2, "") == "exit code 2"


def test_host_paths_are_cut_to_their_last_part_and_urls_kept(tmp_path: Path) -> None:
    log = (f"Traceback (most recent call last):\n  File \"x\"\nFileNotFoundError: [Errno 2] No such file or directory: "
           f"'{tmp_path}/runs/alice/exp/r-1/work/config.json' (see https://hf.co/docs/a/b, bf16/gpu)\n")
    line = failure_line(_run(tmp_path, log))
    assert line == ("FileNotFoundError: [Errno 2] No such file or directory: '…/config.json' "
                    "(see https://hf.co/docs/a/b, bf16/gpu)")
    assert str(tmp_path) not in line


def test_the_line_is_bounded_and_only_the_log_s_tail_is_read(tmp_path: Path) -> None:
    log = "Error: first\n" + "x" * 200_000 + "\nRuntimeError: " + "y" * 1000 + "\n"
    line = failure_line(_run(tmp_path, log))
    assert len(line) == MAX_LINE and line.startswith("RuntimeError: yyy") and line.endswith("…")


def test_a_log_replaced_by_a_link_is_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("Traceback (most recent call last):\nValueError: the console's secret\n", encoding="utf-8")
    run = tmp_path / "run"
    (run / "logs").mkdir(parents=True)
    os.symlink(secret, run / "logs" / "output.log")
    assert failure_reason(1, run) == "exit code 1"


@pytest.mark.parametrize("line", ["Killed", "RuntimeError: boom"])
def test_progress_bars_redrawn_with_carriage_returns_leave_their_last_state(tmp_path: Path, line: str) -> None:
    assert failure_line(_run(tmp_path, f"10%|#  |\r50%|## |\r{line}\n")) == line


def test_forge_launch_s_refusal_to_start_is_the_reason_without_its_prefix(tmp_path: Path) -> None:
    log = ("[forge-launch] refusing to start: the launch plan is unreadable\n"
           "[forge-launch]   - plan.argv: must be a list [plan_invalid]\n")
    assert failure_line(_run(tmp_path, log)) == "refusing to start: the launch plan is unreadable"


def test_a_later_attempt_fails_for_its_own_reason_never_the_previous_attempts(tmp_path: Path) -> None:
    second = ("\n[starforge] ──── attempt 2 of r-x (attempt 1 failed: exit code 1: ValueError: …): resuming from "
              "checkpoint-4 (step 4) ────\n[forge-launch] job started (pid 9)\n")
    assert failure_reason(3, _run(tmp_path, _TRACEBACK + second)) == "exit code 3"
    assert failure_reason(3, _run(tmp_path, _TRACEBACK + second + "OSError: disk full\n")) == (
        "exit code 3: OSError: disk full")
