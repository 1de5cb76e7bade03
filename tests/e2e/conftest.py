"""End-to-end fixtures: a real console (from the integration suite) and a researcher driving the real `sf`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests import forkserver
from tests.integration.conftest import ConsoleProcess, console, forge_home, unique  # noqa: F401

SF = [sys.executable, "-c", "from starforge.cli.main import run; run()"]


@dataclass
class Researcher:
    """One account with its own FORGE_HOME, git identity and lab; `sf(...)` runs the real client in the lab."""

    user: str
    home: Path
    lab: Path
    env: dict[str, str]
    url: str = ""
    token: str = ""

    def sf(self, *args: str, cwd: Path | None = None, timeout: float = 300, **extra: str) -> subprocess.CompletedProcess[str]:
        """Run `sf args…` in the lab (or `cwd`) with this researcher's environment plus `extra` variables."""
        return forkserver.run(list(args), cwd=cwd or self.lab, env={**self.env, **extra}, timeout=timeout)

    def json(self, *args: str, **extra: str) -> Any:
        """Run `sf args… --json`, require exit 0 and return the one JSON object it printed."""
        done = self.sf(*args, "--json", **extra)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def git(self, *args: str) -> str:
        """Run git in the lab and return its stdout."""
        done = subprocess.run(["git", *args], cwd=self.lab, env=self.env, capture_output=True, text=True, check=True)
        return done.stdout

    def commit(self, message: str = "work") -> None:
        """Commit everything in the lab."""
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)

    def api(self, path: str) -> Any:
        """GET `path` from the console with this researcher's token (polling a job costs no `sf` process)."""
        answer = httpx.get(self.url + path, headers={"Authorization": f"Bearer {self.token}"}, timeout=30)
        assert answer.status_code == 200, answer.text
        return answer.json()

    def jobs(self) -> list[dict[str, Any]]:
        """Return the account's jobs (`sf job ls --all --json`)."""
        return list(self.json("job", "ls", "--all")["jobs"])


def make_researcher(server: ConsoleProcess, tmp_path: Path, prefix: str = "r", *, lab: bool = True) -> Researcher:
    """Create a FORGE_HOME logged in (`sf login --token`) as a fresh user, and (`lab`) a lab made by `sf init`."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    gitconfig = tmp_path / "gitconfig"
    gitconfig.write_text("[user]\n\tname = Researcher\n\temail = researcher@example.com\n")
    home = tmp_path / "forge-home"
    base = {k: v for k, v in os.environ.items() if not k.startswith(("FORGE_", "SF_"))}
    env = {**base, "FORGE_HOME": str(home), "NO_COLOR": "1", "GIT_CONFIG_GLOBAL": str(gitconfig),
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CEILING_DIRECTORIES": str(tmp_path)}
    user = unique(prefix)
    person = Researcher(user, home, tmp_path / "lab", env, server.url, server.token_for(user))
    login = person.sf("login", "--server", server.url, "--token", person.token, cwd=tmp_path)
    assert login.returncode == 0, login.stderr
    if lab:
        made = person.sf("init", "lab", "--name", "e2e-lab", cwd=tmp_path)
        assert made.returncode == 0, made.stderr
    return person


@pytest.fixture
def researcher(console: ConsoleProcess, tmp_path: Path) -> Researcher:  # noqa: F811
    """A logged-in researcher with a fresh lab."""
    return make_researcher(console, tmp_path)
