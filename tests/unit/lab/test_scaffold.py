"""`init_lab`: the files it writes, the first commit and its author, and what it refuses."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from starforge.lab import LAB_FILE, LabExists, ScaffoldError, find_root, init_lab


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def no_identity(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run git as a user with no configured identity (no global or system config, no EMAIL)."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    for name in ("EMAIL", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def identity(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_identity: None) -> None:
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tname = Ada Lovelace\n\temail = ada@example.com\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))


def test_lab_files(tmp_path: Path, identity: None) -> None:
    root = init_lab(tmp_path / "my-lab")
    assert root == (tmp_path / "my-lab").resolve()
    assert yaml.safe_load((root / LAB_FILE).read_text()) == {"apiVersion": "forge/project/v1", "name": "my-lab"}
    for sub in ("experiments", "common", "configs"):
        assert (root / sub / ".gitkeep").is_file()
    assert "# my-lab" in (root / "README.md").read_text()
    ignored = (root / ".gitignore").read_text().splitlines()
    for entry in (".starforge/", "outputs/", "out/", "runs/", "downloads/", ".env", ".env.*", "*.pem", "*.key",
                  "credentials.json", "__pycache__/"):
        assert entry in ignored
    assert find_root(root / "experiments") == root


def test_first_commit_holds_every_file_and_leaves_a_clean_tree(tmp_path: Path, identity: None) -> None:
    root = init_lab(tmp_path / "lab")
    assert git(root, "status", "--porcelain") == ""
    tracked = set(git(root, "ls-files").splitlines())
    assert tracked == {".gitignore", "README.md", LAB_FILE, "experiments/.gitkeep", "common/.gitkeep",
                       "configs/.gitkeep"}
    assert git(root, "log", "--format=%an <%ae>") == "Ada Lovelace <ada@example.com>"


def test_fixed_author_when_git_has_no_identity(tmp_path: Path, no_identity: None) -> None:
    root = init_lab(tmp_path / "lab")
    assert git(root, "log", "--format=%an <%ae>|%s") == "StarForge <sf@starforge.invalid>|Create the StarForge lab lab"
    local = subprocess.run(["git", "config", "--local", "user.email"], cwd=root, capture_output=True, text=True)
    assert local.stdout.strip() == ""  # the fallback is used for this commit only, never written to the config


def test_refuses_an_existing_lab(tmp_path: Path, identity: None) -> None:
    root = init_lab(tmp_path / "lab")
    with pytest.raises(LabExists, match="already a StarForge lab"):
        init_lab(root, allow_non_empty=True)


def test_refuses_a_non_empty_folder_unless_allowed(tmp_path: Path, identity: None) -> None:
    target = tmp_path / "lab"
    target.mkdir()
    (target / "README.md").write_text("mine\n")
    (target / ".gitignore").write_text("*.log")
    with pytest.raises(ScaffoldError, match="not empty") as caught:
        init_lab(target)
    assert "--yes" in caught.value.hint
    assert not (target / LAB_FILE).exists()
    init_lab(target, allow_non_empty=True)
    assert (target / "README.md").read_text() == "mine\n"
    ignored = (target / ".gitignore").read_text().splitlines()
    assert ignored[0] == "*.log" and ".starforge/" in ignored and ignored.count("*.log") == 1


def test_an_empty_git_repository_counts_as_empty(tmp_path: Path, identity: None) -> None:
    target = tmp_path / "lab"
    target.mkdir()
    git(target, "init", "-q")
    init_lab(target)
    assert (target / LAB_FILE).is_file()


def test_no_git(tmp_path: Path, identity: None) -> None:
    root = init_lab(tmp_path / "lab", git=False)
    assert not (root / ".git").exists()


def test_inside_an_existing_repository_nothing_is_initialised_or_committed(tmp_path: Path, identity: None) -> None:
    outer = tmp_path / "mono"
    outer.mkdir()
    git(outer, "init", "-q")
    root = init_lab(outer / "labs" / "a")
    assert not (root / ".git").exists()
    assert subprocess.run(["git", "rev-parse", "--verify", "-q", "HEAD"], cwd=outer).returncode != 0


@pytest.mark.parametrize(("name", "loaded"), [("true", "true"), ("1.0", "1.0"), ("no", "no"), ("my.lab_2", "my.lab_2")])
def test_names_always_load_as_strings(tmp_path: Path, identity: None, name: str, loaded: str) -> None:
    root = init_lab(tmp_path / "x", name=name, git=False)
    assert yaml.safe_load((root / LAB_FILE).read_text())["name"] == loaded


@pytest.mark.parametrize("name", ["my lab", "lab/x", "", "é"])
def test_invalid_names_are_refused(tmp_path: Path, identity: None, name: str) -> None:
    with pytest.raises(ScaffoldError, match="not a valid lab name"):
        init_lab(tmp_path / "x", name=name, git=False)
    assert not (tmp_path / "x").exists()
