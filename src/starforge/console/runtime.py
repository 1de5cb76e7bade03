"""The console runtime: everything `create_app` builds once (settings, database, served catalog, background work)."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .settings import Settings
from .store import Database

__all__ = ["Runtime", "load_served_catalog"]


def load_served_catalog(settings: Settings) -> Any:
    """Load the catalog this console serves (builtin unless `catalog.path` is set); raise on an invalid tree."""
    from starforge.recipes import load_catalog

    cat = settings.catalog
    return load_catalog(
        Path(cat.path) if cat.path else None,
        scheme=cat.digest_scheme,
        overlays=False,
        core_version=cat.core_version,
        core_requirement=cat.core_requirement,
    )


@dataclass
class Runtime:
    """Shared state of one console process; routers reach it through `request.app.state.runtime`."""

    settings: Settings
    db: Database
    catalog: Any
    wakeup: threading.Event = field(default_factory=threading.Event)
    background: list[Any] = field(default_factory=list)
    capacity: dict[str, int] = field(default_factory=dict)
    isolation: Any = None  # executors.isolation.Isolation, prepared (and checked) when the console starts

    def __post_init__(self) -> None:
        if not self.capacity:
            self.capacity = dict(self.settings.capacity)

    def jobs_dir(self, run_id: str) -> Path:
        """Return the console's own directory for a job (admitted spec, launch plan)."""
        return self.settings.state_dir / "jobs" / run_id

    def write_jobspec(self, run_id: str, text: str) -> None:
        """Persist the admitted, owner-stamped JobSpec of a job (atomic)."""
        directory = self.jobs_dir(run_id)
        directory.mkdir(parents=True, exist_ok=True)
        tmp = directory / "jobspec.json.tmp"
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, directory / "jobspec.json")

    def read_jobspec(self, run_id: str) -> str | None:
        """Return the stored admitted JobSpec text, if any."""
        path = self.jobs_dir(run_id) / "jobspec.json"
        return path.read_text(encoding="utf-8") if path.is_file() else None

    def job_paths(self, run_dir: Path) -> Any:
        """Return where the folders of the run at `run_dir` appear to its job (`executors.JobPaths`)."""
        from .executors import Isolation

        isolation = self.isolation or Isolation.none(self.settings.state_dir)
        return isolation.job_paths(run_dir)

    def wake(self) -> None:
        """Ask the background loops to run a cycle now (a job was admitted, stopped or ended)."""
        self.wakeup.set()
