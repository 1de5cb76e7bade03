"""Lab tests: a private FORGE_HOME (the recipe digest cache), no overlays, and small real labs under git."""

from __future__ import annotations

import subprocess
from pathlib import Path

from starforge.contract import ProfileEntry

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
