"""Start the console's background work: the local executor and the scheduler loop (reconciling first)."""

from __future__ import annotations

from .runtime import Runtime

__all__ = ["start_background"]


def start_background(rt: Runtime) -> None:
    """Create the executor, publish its capacity, reconcile jobs left by a previous process and start the loop."""
    from .executors import LocalExecutor
    from .scheduler import BackgroundLoop, Scheduler

    executor = LocalExecutor(rt.settings.capacity)
    rt.capacity = executor.capacity()
    loop = BackgroundLoop(rt, Scheduler(rt, executor), rt.settings.scheduler_interval)
    rt.background.append(loop)
    loop.start()
