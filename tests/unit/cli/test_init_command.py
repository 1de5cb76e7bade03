"""`sf init` through the real `sf` entry point in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests import forkserver

SF = [sys.executable, "-c", "from starforge.cli.main import run; run()"]


def sf(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return forkserver.run(list(args), cwd=cwd, env=env)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tname = Test\n\temail = test@example.com\n")
    return {**os.environ, "GIT_CONFIG_GLOBAL": str(config), "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CEILING_DIRECTORIES": str(tmp_path), "NO_COLOR": "1"}


def test_init_creates_and_commits_a_lab(tmp_path: Path, env: dict[str, str]) -> None:
    done = sf("init", "my-lab", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert "Created the lab my-lab" in done.stderr and "first commit" in done.stderr
    assert "sf new <exp> --method <framework>/<method>" in done.stderr  # the option every other place names
    root = tmp_path / "my-lab"
    assert "--recipe" not in (root / "README.md").read_text()
    assert yaml.safe_load((root / "starforge.yaml").read_text())["name"] == "my-lab"
    log = subprocess.run(["git", "log", "--oneline"], cwd=root, capture_output=True, text=True, env=env).stdout
    assert len(log.splitlines()) == 1


def test_init_refuses_an_existing_lab(tmp_path: Path, env: dict[str, str]) -> None:
    assert sf("init", "lab", cwd=tmp_path, env=env).returncode == 0
    again = sf("init", "lab", "--yes", cwd=tmp_path, env=env)
    assert again.returncode == 1
    assert "already a StarForge lab" in again.stderr


def test_init_in_a_non_empty_folder_needs_yes(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "lab").mkdir()
    (tmp_path / "lab" / "notes.txt").write_text("keep me")
    refused = sf("init", cwd=tmp_path / "lab", env=env)
    assert refused.returncode == 1 and "not empty" in refused.stderr and "--yes" in refused.stderr
    accepted = sf("init", "--yes", "--name", "renamed", cwd=tmp_path / "lab", env=env)
    assert accepted.returncode == 0, accepted.stderr
    assert yaml.safe_load((tmp_path / "lab" / "starforge.yaml").read_text())["name"] == "renamed"
    assert (tmp_path / "lab" / "notes.txt").read_text() == "keep me"


def test_init_without_git(tmp_path: Path, env: dict[str, str]) -> None:
    done = sf("init", "plain", "--no-git", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "plain" / ".git").exists()


def test_init_refuses_a_bad_name(tmp_path: Path, env: dict[str, str]) -> None:
    done = sf("init", "x", "--name", "bad name", cwd=tmp_path, env=env)
    assert done.returncode == 1 and "not a valid lab name" in done.stderr


def test_unknown_option_is_a_usage_error(tmp_path: Path, env: dict[str, str]) -> None:
    assert sf("init", "--frobnicate", cwd=tmp_path, env=env).returncode == 2
