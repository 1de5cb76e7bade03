"""Start the console's background work: the local executor and the scheduler loop (reconciling first)."""

from __future__ import annotations

import logging

from .runtime import Runtime

__all__ = ["start_background"]


def start_background(rt: Runtime) -> None:
    """Create the executor, publish its capacity, reconcile jobs left by a previous process and start the loop."""
    from .app import prepare_isolation
    from .executors import LocalExecutor
    from .scheduler import BackgroundLoop, Scheduler

    if rt.isolation is None:  # an app built without `serve` (tests, embedding): check and warn here
        rt.isolation = prepare_isolation(rt)
        if not rt.isolation.sandboxed:
            logging.getLogger("starforge.console").warning("%s", rt.isolation.warning())
    executor = LocalExecutor(rt.settings.capacity, isolation=rt.isolation, stop_grace=rt.settings.stop_grace_seconds)
    rt.capacity = executor.capacity()
    loop = BackgroundLoop(rt, Scheduler(rt, executor), rt.settings.scheduler_interval)
    rt.background.append(loop)
    loop.start()
