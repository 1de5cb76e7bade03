"""Provenance (jobspec-contract §14) on real temporary git repositories."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from starforge.lab import GitProvenance, ProvenanceError, config_sha, git_provenance

EXP = "experiments/my-grpo"


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=Test", "-c", "user.email=test@example.com", *args],
                          cwd=root, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q")
    (tmp_path / EXP).mkdir(parents=True)
    (tmp_path / EXP / "config.yaml").write_bytes(b"grpo:\r\n  max_num_steps: 10\n")
    (tmp_path / "starforge.yaml").write_text("apiVersion: forge/project/v1\nname: t\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "first")
    return tmp_path


def test_clean_repository(repo: Path) -> None:
    prov = git_provenance(repo, EXP)
    expected_sha = hashlib.sha256(b"grpo:\r\n  max_num_steps: 10\n").hexdigest()[:12]
    assert prov == GitProvenance(git(repo, "rev-parse", "--short", "HEAD"), False, expected_sha)
    assert prov.to_meta() == {"git_commit": prov.git_commit, "git_dirty": False, "config_sha": expected_sha}


def test_modified_tracked_file_is_dirty(repo: Path) -> None:
    (repo / "starforge.yaml").write_text("apiVersion: forge/project/v1\nname: changed\n")
    assert git_provenance(repo, EXP).git_dirty


def test_untracked_file_anywhere_is_dirty(repo: Path) -> None:
    (repo / "elsewhere").mkdir()
    (repo / "elsewhere" / "notes.txt").write_text("x")
    assert git_provenance(repo, EXP).git_dirty


def test_ignored_files_are_not_dirty(repo: Path) -> None:
    (repo / ".gitignore").write_text("out/\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore")
    (repo / "out").mkdir()
    (repo / "out" / "ckpt").write_text("x")
    assert not git_provenance(repo, EXP).git_dirty


def test_dirty_is_for_the_whole_repository_even_from_a_subdirectory_lab(repo: Path) -> None:
    (repo / "README.md").write_text("new")
    assert git_provenance(repo / "experiments", "my-grpo").git_dirty


def test_no_commit_is_a_hard_error(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    with pytest.raises(ProvenanceError, match="no commit"):
        git_provenance(tmp_path, EXP)


def test_not_a_repository_is_a_hard_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    with pytest.raises(ProvenanceError, match="not inside a git repository"):
        git_provenance(tmp_path, EXP)


def test_no_git_binary_is_a_hard_error(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(repo / "nowhere"))
    with pytest.raises(ProvenanceError, match="git is not installed"):
        git_provenance(repo, EXP)


def test_config_sha_is_none_without_the_file(tmp_path: Path) -> None:
    assert config_sha(tmp_path, "experiments/missing") == "none"
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "config.yaml").write_bytes(b"")
    assert config_sha(tmp_path, "e") == hashlib.sha256(b"").hexdigest()[:12]


def test_the_changes_that_make_it_dirty_are_named(repo: Path) -> None:
    (repo / "starforge.yaml").write_text("apiVersion: forge/project/v1\nname: changed\n")
    (repo / "export" / "model").mkdir(parents=True)
    (repo / "export" / "model" / "weights.bin").write_bytes(b"x")
    (repo / "my notes.txt").write_text("x")
    git(repo, "mv", f"{EXP}/config.yaml", f"{EXP}/base.yaml")
    changes = set(git_provenance(repo, EXP).changes)
    assert changes == {("modified", "starforge.yaml"), ("untracked", "export/"), ("untracked", "my notes.txt"),
                       ("renamed", f"{EXP}/base.yaml")}
