"""Start the console's background work: its engines (local, Slurm, Ray) and the scheduler loop (reconciling first)."""

from __future__ import annotations

import logging
import os

from ..engines.base import Executor
from ..engines.identities import UidPool
from ..engines.routing import Engines
from .runtime import Runtime

__all__ = ["build_engines", "start_background"]


def build_engines(rt: Runtime) -> Engines:
    """Return the engines the settings name (`executor`, `executors.series`), each series routed to its own."""
    settings = rt.settings
    engines: dict[str, Executor] = {}
    if "local" in settings.engines():
        from ..engines import LocalExecutor
        from .app import prepare_isolation

        if rt.isolation is None:  # an app built without `serve` (tests, embedding): check and warn here
            rt.isolation = prepare_isolation(rt)
            if not rt.isolation.sandboxed:
                logging.getLogger("starforge.console").warning("%s", rt.isolation.warning())
        engines["local"] = LocalExecutor(settings.capacity, isolation=rt.isolation,
                                         stop_grace=settings.stop_grace_seconds)
    if "slurm" in settings.engines():
        from ..engines.slurm.executor import SlurmExecutor

        engines["slurm"] = SlurmExecutor(settings.slurm, stop_grace=settings.stop_grace_seconds,
                                         storage_root=settings.state_dir, uids=_job_uids(rt))
    if "ray" in settings.engines():
        from ..engines.ray.executor import RayExecutor

        try:
            engines["ray"] = RayExecutor(settings.ray, settings.ray.address, stop_grace=settings.stop_grace_seconds,
                                         storage_root=settings.state_dir)
        except ModuleNotFoundError as exc:  # the `ray` extra is optional: name it and its install command
            from ..extras import missing_extra

            missing = missing_extra(exc, "the Ray engine (`--executor ray`, `executors.ray`)")
            if missing is None:
                raise
            raise missing from exc
    return Engines(engines, settings.engine_of)


def _job_uids(rt: Runtime) -> UidPool | None:
    """Return the pool of job uids the engines share: the local sandbox's, else one of `executors.local.uid_range`
    (a root console only; accounts keep one uid across engines)."""
    if rt.isolation is not None and rt.isolation.uids is not None:
        shared: UidPool = rt.isolation.uids
        return shared
    return UidPool(*rt.settings.local.uid_range) if os.getuid() == 0 else None


def start_background(rt: Runtime) -> None:
    """Create the engines, publish their capacity, reconcile jobs left by a previous process and start the loop."""
    from .scheduler import BackgroundLoop, Scheduler

    if rt.engines is None:  # `serve` builds them before it listens (an engine may be down)
        rt.engines = build_engines(rt)
    engines: Engines = rt.engines
    rt.capacity = engines.capacity()
    loop = BackgroundLoop(rt, Scheduler(rt, engines), rt.settings.scheduler_interval)
    rt.background.append(loop)
    loop.start()
