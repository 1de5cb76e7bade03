"""Lab tests: a private FORGE_HOME (the recipe digest cache), no overlays, and small real labs under git."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from starforge.contract import ProfileEntry

REGISTRY = (
    ProfileEntry("cpu", "cpu", 1, 1),
    ProfileEntry("h200", "h200", 1, 8),
    ProfileEntry("h100", "h100", 1, 8),
)


@pytest.fixture(scope="session", autouse=True)
def _private_forge_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Point FORGE_HOME at a session directory and clear FORGE_RECIPE_PATH, so no test reads the user's state."""
    home = tmp_path_factory.mktemp("forge-home")
    saved = {k: os.environ.get(k) for k in ("FORGE_HOME", "FORGE_RECIPE_PATH")}
    os.environ["FORGE_HOME"] = str(home)
    os.environ.pop("FORGE_RECIPE_PATH", None)
    yield home
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def git(root: Path, *args: str) -> str:
    """Run git with a fixed identity in `root` and return its stdout."""
    done = subprocess.run(["git", "-c", "user.name=Test", "-c", "user.email=test@example.com", *args],
                          cwd=root, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def commit(root: Path, message: str = "work") -> str:
    """Commit everything in the lab and return the abbreviated commit."""
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "-m", message)
    return git(root, "rev-parse", "--short", "HEAD")
