"""Lab tests: a private FORGE_HOME (the recipe digest cache), no overlays, and small real labs under git."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from starforge.contract import ProfileEntry
from starforge.lab import client_catalog, create_experiment, init_lab
from starforge.recipes import Catalog

REGISTRY = (
    ProfileEntry("cpu", "cpu", 1, 1),
    ProfileEntry("h200", "h200", 1, 8),
    ProfileEntry("h100", "h100", 1, 8),
)



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


@pytest.fixture(scope="module")
def builtin() -> Catalog:
    """The catalog the client serves itself (builtin recipes, no overlays)."""
    return client_catalog()


@pytest.fixture
def lab(tmp_path: Path, builtin: Catalog) -> Path:
    """A committed lab `unit-lab` with one experiment, `toy` (tinyrl/grpo); a module may define its own."""
    root = init_lab(tmp_path / "lab", name="unit-lab")
    assert create_experiment(root, "toy", builtin, method="tinyrl/grpo").path is not None
    commit(root)
    return root
