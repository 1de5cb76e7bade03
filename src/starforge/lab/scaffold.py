"""`sf init`: create a lab (starforge.yaml, experiments/, common/, configs/, README, .gitignore) and commit it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from ..bundle import SECRET_PATTERNS
from .discovery import LAB_FILE

__all__ = ["LAB_API_VERSION", "LabExists", "ScaffoldError", "init_lab"]

LAB_API_VERSION = "forge/project/v1"

_NAME = re.compile(r"^[A-Za-z0-9._-]+$")  # metadata.project's grammar: the lab name becomes every job's project
_PLAIN = re.compile(r"^[A-Za-z][A-Za-z0-9._-]*$")
_YAML_WORDS = {"y", "yes", "n", "no", "true", "false", "on", "off", "null"}
_DIRS = ("experiments", "common", "configs")
_FALLBACK_AUTHOR = ("StarForge", "sf@starforge.invalid")

GITIGNORE_LINES = (
    "# StarForge",
    ".starforge/",
    "",
    "# outputs, and what `sf job artifacts --download downloads/<name>` fetches",
    "outputs/",
    "out/",
    "runs/",
    "downloads/",
    "",
    "# secrets: never committed, and `sf submit` refuses to upload them (starforge.yaml bundle.allow_secrets)",
    *SECRET_PATTERNS,
    "",
    "# Python",
    "__pycache__/",
    "*.pyc",
    ".venv/",
)

_README = """\
# {name}

A StarForge lab: each experiment is a folder that `sf` turns into a post-training job.

```
starforge.yaml     the lab's name (every job's project)
experiments/       one folder per experiment: config.yaml, recipe.lock.json, your files
common/            code and data shared by every experiment (packed with each job)
configs/           shared configuration files (packed with each job)
```

## Start

```
sf login --server https://console.example.com     # once per console
sf methods                                        # the recipe catalog
sf new my-exp --method <framework>/<method>       # create experiments/my-exp
sf validate my-exp                                # local checks, no network
git add -A && git commit -m "my-exp"              # jobs record the commit they ran from
sf submit my-exp --profile <profile>[:gpus]
sf job logs my-exp
sf job artifacts my-exp --download downloads/my-exp   # downloads/ is ignored: the lab stays committed
```

Only `experiments/<exp>/`, `common/` and `configs/` travel with a job, and only files git knows about
(tracked or not ignored). Secrets such as `.env` or `*.pem` are ignored here, and `sf submit` refuses any file
whose name or content looks like a credential (a private key, a cloud or hub token). To send one on purpose, list
its exact path in starforge.yaml:

```
bundle:
  allow_secrets:
    - experiments/my-exp/fixtures/test_key
```
"""


class ScaffoldError(RuntimeError):
    """Raised when a lab cannot be created here (bad name, non-empty directory, git failure); `hint` says how."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint


class LabExists(ScaffoldError):
    """Raised when the directory already holds a `starforge.yaml`."""


def _yaml_scalar(name: str) -> str:
    if _PLAIN.match(name) and name.lower() not in _YAML_WORDS:
        return name
    return f'"{name}"'


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                          env={**os.environ, "LC_ALL": "C"}, encoding="utf-8", errors="replace")


def _inside_work_tree(path: Path) -> bool:
    existing = next(p for p in (path, *path.parents) if p.is_dir())
    probe = _git(existing, "rev-parse", "--is-inside-work-tree")
    return probe.returncode == 0 and probe.stdout.strip() == "true"


def _write_new(path: Path, text: str) -> None:
    if not path.exists():
        path.write_text(text, encoding="utf-8")


def _merge_gitignore(path: Path) -> None:
    if not path.exists():
        path.write_text("\n".join(GITIGNORE_LINES) + "\n", encoding="utf-8")
        return
    current = path.read_text(encoding="utf-8-sig", errors="replace")
    have = {line.strip() for line in current.splitlines()}
    missing = [line for line in GITIGNORE_LINES if line and not line.startswith("#") and line not in have]
    if missing:
        sep = "" if current.endswith("\n") or not current else "\n"
        path.write_text(current + sep + "\n# StarForge\n" + "\n".join(missing) + "\n", encoding="utf-8")


def _commit(root: Path, name: str) -> None:
    steps: list[tuple[str, ...]] = [("init",)]
    identity: list[str] = []
    for key, fallback in zip(("user.name", "user.email"), _FALLBACK_AUTHOR, strict=True):
        if not _git(root, "config", key).stdout.strip():
            identity += ["-c", f"{key}={fallback}"]
    steps += [("add", "-A"), (*identity, "commit", "-q", "-m", f"Create the StarForge lab {name}")]
    for args in steps:
        done = _git(root, *args)
        if done.returncode != 0:
            message = (done.stderr or done.stdout).strip().splitlines()
            raise ScaffoldError(f"`git {' '.join(args)}` failed in {root}: {message[-1] if message else done.returncode}")


def init_lab(
    directory: Path | str, name: str | None = None, git: bool = True, *, allow_non_empty: bool = False
) -> Path:
    """Create a lab in `directory` and return its root; with `git`, init a repository and commit the lab.

    Existing files are never overwritten (a `.gitignore` gains the missing entries). A directory that is
    already a lab raises `LabExists`; a non-empty one raises `ScaffoldError` unless `allow_non_empty`. Inside
    an existing git work tree no repository is created and nothing is committed.
    """
    root = Path(directory).expanduser().resolve()
    if (root / LAB_FILE).exists():
        raise LabExists(f"{root} is already a StarForge lab ({LAB_FILE} exists)")
    if root.exists() and not root.is_dir():
        raise ScaffoldError(f"{root} exists and is not a directory")
    lab_name = (name if name is not None else root.name).strip()
    if not _NAME.match(lab_name):
        raise ScaffoldError(
            f"{lab_name!r} is not a valid lab name: use letters, digits, '.', '_' and '-'",
            "pass --name",
        )
    if root.is_dir() and not allow_non_empty and any(p.name != ".git" for p in root.iterdir()):
        raise ScaffoldError(f"{root} is not empty", "pass --yes to create the lab among the existing files")
    if git and shutil.which("git") is None:
        raise ScaffoldError("git is not installed", "install git, or pass --no-git")
    commit = git and not _inside_work_tree(root)

    root.mkdir(parents=True, exist_ok=True)
    for sub in _DIRS:
        (root / sub).mkdir(exist_ok=True)
        if not any((root / sub).iterdir()):
            (root / sub / ".gitkeep").touch()
    _write_new(root / "README.md", _README.format(name=lab_name))
    _merge_gitignore(root / ".gitignore")
    (root / LAB_FILE).write_text(f"apiVersion: {LAB_API_VERSION}\nname: {_yaml_scalar(lab_name)}\n", encoding="utf-8")
    if commit:
        _commit(root, lab_name)
    return root
