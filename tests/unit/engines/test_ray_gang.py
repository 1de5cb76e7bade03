"""The gang's parts that need no Ray: a rank's process and its stop, the job's state while the launcher waits."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

from starforge.engines.ray.executor import _gang_state
from starforge.engines.ray.gang import GANG_FILE, GANG_STATUS_FILE
from starforge.engines.ray.rank import Rank, _descendants

# the rank's command starts a grandchild in a session of its own (as bubblewrap starts the job), then waits on it
SPAWNER = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; print('grandchild up', flush=True); time.sleep(120)"],
                         start_new_session=True)
print(f"grandchild {child.pid}", flush=True)
sys.exit(child.wait())
"""


def test_a_rank_s_stop_reaches_a_process_in_another_session_and_its_status_says_the_signal(tmp_path: Path) -> None:
    log = tmp_path / "output.log"
    os.mkfifo(log)  # the rank appends its output here: the test reads it as it comes (no polling)
    reader = os.open(log, os.O_RDONLY | os.O_NONBLOCK)
    os.set_blocking(reader, True)
    token = tmp_path / "run-token"
    token.write_text("tok-123\n")
    rank = Rank()
    check = "import os; assert os.environ['STARFORGE_TOKEN'] == 'tok-123'\n"  # read from the token file on the node
    rank.start([sys.executable, "-c", check + SPAWNER], {"PATH": os.environ["PATH"]}, cwd=str(tmp_path),
               log_file=str(log), token_file=str(token), token_variable="STARFORGE_TOKEN", args_file="")
    with os.fdopen(reader, encoding="utf-8") as output:
        grandchild = int(output.readline().split()[1])
        assert output.readline().strip() == "grandchild up"  # the job is up: both processes run
        assert rank._process is not None and grandchild in _descendants(rank._process.pid)
        assert os.getpgid(grandchild) != os.getpgid(rank._process.pid)  # beyond the rank's process group
        rank.signal(int(signal.SIGTERM))
        assert rank.wait() == 128 + signal.SIGTERM
        assert output.read() == ""  # every writer has gone: the grandchild too


def test_a_rank_that_cannot_start_says_why(tmp_path: Path) -> None:
    rank = Rank()
    try:
        rank.start(["/nonexistent/python"], {}, cwd=str(tmp_path), log_file=str(tmp_path / "log"), token_file="",
                   token_variable="STARFORGE_TOKEN", args_file="")
    except RuntimeError as exc:
        assert "cannot start the rank's command" in str(exc)
    else:
        raise AssertionError("a missing command started")


def test_a_gang_job_is_pending_with_the_launcher_s_reason_until_its_ranks_run(tmp_path: Path) -> None:
    assert _gang_state(tmp_path) is None  # not a gang: Ray's own RUNNING stands
    (tmp_path / GANG_FILE).write_text("{}")
    state = _gang_state(tmp_path)
    assert state is not None and state.state == "pending" and "reserving" in state.detail
    (tmp_path / GANG_STATUS_FILE).write_text(json.dumps({"state": "waiting", "message": "waiting for 2 nodes"}))
    state = _gang_state(tmp_path)
    assert state is not None and (state.state, state.detail) == ("pending", "Ray: waiting for 2 nodes")
    (tmp_path / GANG_STATUS_FILE).write_text(json.dumps({"state": "running", "message": "2 ranks running"}))
    state = _gang_state(tmp_path)
    assert state is not None and state.state == "running"
