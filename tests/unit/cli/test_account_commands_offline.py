"""Account and job commands before any request: no console configured, not logged in, corrupt state."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import forkserver

SF = [sys.executable, "-c", "from starforge.cli.main import run; run()"]


def sf(home: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "FORGE_SERVER"}
    env.update({"FORGE_HOME": str(home), "NO_COLOR": "1", **extra})
    return forkserver.run(list(args), env=env)


@pytest.mark.parametrize("args", [["whoami"], ["status"], ["job", "ls"], ["job", "logs", "x"], ["logout"]])
def test_no_console_configured(tmp_path: Path, args: list[str]) -> None:
    done = sf(tmp_path, *args)
    assert done.returncode == 1
    assert "no console configured: run `sf login --server URL`" in done.stderr


@pytest.mark.parametrize("args", [["whoami"], ["job", "ls", "--json"], ["job", "stop", "r-1"]])
def test_not_logged_in_asks_for_login(tmp_path: Path, args: list[str]) -> None:
    # the port is closed: the command must stop before any request
    done = sf(tmp_path, *args, FORGE_SERVER="http://127.0.0.1:9")
    assert done.returncode == 1
    assert "not logged in to http://127.0.0.1:9" in done.stderr and "sf login" in done.stderr


def test_json_errors_are_one_object_on_stdout(tmp_path: Path) -> None:
    done = sf(tmp_path, "job", "ls", "--json", FORGE_SERVER="http://127.0.0.1:9")
    assert json.loads(done.stdout)["ok"] is False


def test_corrupt_credentials_name_the_file(tmp_path: Path) -> None:
    (tmp_path / "credentials.json").write_text("{oops")
    done = sf(tmp_path, "whoami", FORGE_SERVER="http://127.0.0.1:9")
    assert done.returncode == 1 and str(tmp_path / "credentials.json") in done.stderr


def test_unreachable_console_on_token_login(tmp_path: Path) -> None:
    done = sf(tmp_path, "login", "--server", "http://127.0.0.1:9/", "--token", "T")
    assert done.returncode == 1 and "cannot reach the console" in done.stderr
    assert json.loads((tmp_path / "config.json").read_text()) == {"server": "http://127.0.0.1:9"}
    assert not (tmp_path / "credentials.json").exists()


def test_logout_when_not_logged_in_is_fine(tmp_path: Path) -> None:
    done = sf(tmp_path, "logout", "--server", "http://127.0.0.1:9")
    assert done.returncode == 0 and "Not logged in" in done.stderr


def test_cancel_all_needs_yes_without_a_terminal(tmp_path: Path) -> None:
    done = sf(tmp_path, "job", "cancel-all", FORGE_SERVER="http://127.0.0.1:9")
    assert done.returncode == 2 and "--yes" in done.stderr
