"""select_files on a real temporary git repository: roots, listing order, ignores, PDFs, secrets, links."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from starforge.bundle import GitListingError, is_secret_name, select_files


@pytest.fixture(autouse=True)
def _isolated_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # The developer's own git configuration (global excludes, hooks) must not change what is listed.
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("HOME", str(tmp_path))


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def _write(repo: Path, rel: str, data: bytes = b"x") -> None:
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "lab"
    root.mkdir()
    _git(root, "init", "-q")
    _write(root, ".gitignore", b"*.ckpt\nexperiments/my-rl/outputs/\n")
    tracked = [
        "experiments/my-rl/config.yaml",
        "experiments/my-rl/train.py",
        "experiments/my-rl/paper.pdf",
        "experiments/my-rl/.env",
        "experiments/my-rl/gone.txt",
        "common/util.py",
        "configs/base.yaml",
        "experiments/other/config.yaml",
        "README.md",
        "src/lib.py",
    ]
    for rel in tracked:
        _write(root, rel)
    _git(root, "add", "-A")
    (root / "experiments/my-rl/gone.txt").unlink()  # tracked, deleted from the work tree
    for rel in [
        "experiments/my-rl/notes.md",  # untracked, not ignored
        "experiments/my-rl/model.ckpt",  # ignored by pattern
        "experiments/my-rl/outputs/log.txt",  # ignored directory
        "experiments/my-rl/keys/id_rsa",
        "configs/hf_token.txt",
        "common/Report.PDF",
        "experiments/my-rl-2/config.yaml",  # shares a prefix with the experiment, outside it
        "scratch.py",
    ]:
        _write(root, rel)
    return root


def test_selection_follows_the_listing_rules(repo: Path) -> None:
    selection = select_files(repo, "experiments/my-rl")
    assert sorted(selection.files) == [
        "common/util.py",
        "configs/base.yaml",
        "experiments/my-rl/config.yaml",
        "experiments/my-rl/notes.md",
        "experiments/my-rl/train.py",
    ]
    assert sorted(selection.refused) == [
        "configs/hf_token.txt",
        "experiments/my-rl/.env",
        "experiments/my-rl/keys/id_rsa",
    ]
    assert sorted(selection.dropped) == ["common/Report.PDF", "experiments/my-rl/paper.pdf"]


def test_selection_keeps_git_listing_order(repo: Path) -> None:
    listing = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=repo,
            check=True,
            capture_output=True,
        )
        .stdout.decode()
        .split("\0")
    )
    selection = select_files(repo, "experiments/my-rl/")
    assert selection.files == [p for p in listing if p in set(selection.files)]


def test_links_inside_the_repo_are_packed_and_links_outside_are_dropped(repo: Path, tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_text("private")
    os.symlink("../../common/util.py", repo / "experiments/my-rl/util_link.py")
    os.symlink(str(tmp_path / "outside.txt"), repo / "experiments/my-rl/outside_link.txt")
    os.symlink("../my-rl/.env", repo / "experiments/my-rl/harmless.txt")
    selection = select_files(repo, "experiments/my-rl")
    assert "experiments/my-rl/util_link.py" in selection.files
    assert "experiments/my-rl/outside_link.txt" in selection.dropped
    assert "experiments/my-rl/harmless.txt" in selection.refused


def test_names_the_console_would_refuse_stop_the_upload(repo: Path) -> None:
    _write(repo, "common/back\\slash.py")
    assert "common/back\\slash.py" in select_files(repo, "experiments/my-rl").refused


def test_a_directory_that_is_not_a_repository_is_an_error(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(GitListingError):
        select_files(plain, "experiments/x")


@pytest.mark.parametrize("exp", ["", "/abs", "../up", "a/../b"])
def test_experiment_path_must_stay_inside_the_repo(repo: Path, exp: str) -> None:
    with pytest.raises(ValueError):
        select_files(repo, exp)


@pytest.mark.parametrize(
    "name",
    [
        ".env",
        ".env.local",
        ".envrc",
        ".netrc",
        "credentials.json",
        "gcp_credentials.json",
        "token.txt",
        "api_key.txt",
        "server.pem",
        "tls.key",
        "cert.p12",
        "cert.pfx",
        "id_rsa",
        "id_rsa.pub",
        "id_ed25519",
        "id_ecdsa_sk",
        "id_dsa",
        "secrets.yaml",
        "db.secret",
        "hf_token",
        "hf_token.txt",
        "a/b/.env",
        "ID_RSA",
        "Secrets.Toml",
    ],
)
def test_secret_looking_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "env",
        "my.env.txt",
        "config.yaml",
        "credentials.yaml",
        "token.json",
        "keys.txt",
        "keyboard.py",
        "rsa.py",
        "secret.py",
        "mysecrets.yaml",
        ".env/file.txt",
        "tokenizer.json",
        "monkey.pem.txt",
    ],
)
def test_ordinary_names(name: str) -> None:
    assert not is_secret_name(name)
