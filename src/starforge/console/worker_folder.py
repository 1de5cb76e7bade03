"""The folder the worker processes of one console share (`sf console up --workers N`): their per-address limits
(`throttles.db`) and their measurements for `/metrics` (`metrics/`). The parent makes it afresh before it forks, so
nothing of a previous run is counted; one folder per address the console listens on, under `<state>/run/`.

Tier: composition (files of the state folder; no database, no HTTP).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from .services.throttle_keys import SharedKeys
from .settings import Settings

__all__ = ["metrics_folder", "prepare", "throttles_file", "worker_folder"]


def worker_folder(settings: Settings) -> Path:
    """Return the shared folder of the console of `settings` (its state folder, host and port)."""
    return settings.state_dir / "run" / f"{settings.host}-{settings.port}"


def throttles_file(folder: Path) -> Path:
    """Return the file of the shared per-address limits in `folder`."""
    return folder / "throttles.db"


def metrics_folder(folder: Path) -> Path:
    """Return the folder of the workers' measurement files in `folder`."""
    return folder / "metrics"


def prepare(settings: Settings) -> Path:
    """Make the shared folder of `settings`' console empty and private (mode 0700), with an empty limits table and
    metrics folder, and return it; the parent calls it once, before any worker starts."""
    folder = worker_folder(settings)
    shutil.rmtree(folder, ignore_errors=True)
    folder.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    folder.mkdir(mode=0o700)
    metrics_folder(folder).mkdir(mode=0o700)
    SharedKeys.reset(throttles_file(folder))
    return folder
