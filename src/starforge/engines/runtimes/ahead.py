"""Runtimes built ahead of time by an operator (`sf console runtime build|ls`), into the cache the console uses.

No console needs to run: the build takes the same file lock a console's build takes, so both wait for one build.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .installers import Log
from .plan import catalog_requirements, job_kind
from .record import RuntimeRecord
from .service import Runtimes
from .spec import KINDS

__all__ = ["UnknownRuntime", "build_ahead", "default_kind"]


class UnknownRuntime(ValueError):
    """Raised when no recipe of the served catalog names the runtime id (the message lists the known ones)."""


def default_kind(series: Iterable[str], runtimes: Runtimes) -> str:
    """Return the kind a console with these series builds for: `gpu` when any has GPUs, else `cpu`."""
    return job_kind(series, runtimes.settings)


def build_ahead(runtimes: Runtimes, catalog: Any, runtime_id: str, kind: str, log: Log, *,
                force: bool = False) -> RuntimeRecord:
    """Build runtime `runtime_id` for series of `kind` (or find it built); raise UnknownRuntime or BuildFailed."""
    if kind not in KINDS:
        raise UnknownRuntime(f"unknown kind {kind!r} (use {' or '.join(KINDS)})")
    sets, frameworks = catalog_requirements(catalog, runtime_id, runtimes.settings)
    if not frameworks:
        known = sorted({v.runtime_id for r in catalog.recipes for v in r.runtime.versions.values() if v.runtime_id})
        raise UnknownRuntime(f"no recipe of the served catalog uses runtime {runtime_id!r} "
                             f"(known: {', '.join(known) or 'none'})")
    if not sets:
        raise UnknownRuntime(f"runtime {runtime_id} declares no requirements: its jobs run on the console's "
                             f"interpreter (add some under runtimes.requires.{runtime_id})")
    record: RuntimeRecord | None = None
    for requirements in sets:  # one venv per distinct set: exactly the one a job of each variant looks up
        if runtimes.settings.console_env and not runtimes.missing(requirements, kind):
            log(f"note: the console's environment satisfies {', '.join(requirements)}, so its jobs run on the "
                "console's interpreter; building the runtime anyway")
        record = runtimes.build(runtimes.spec_for(runtime_id, requirements, kind), log, force=force)
    assert record is not None
    return record
