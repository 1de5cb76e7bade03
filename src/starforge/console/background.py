"""The console's engine side at start: the job sandbox (`prepare_isolation`), the engines the settings name, built
from the engine registry (`build_engines`), and the background work (`start_background`): an election, and in the
process that leads the scheduler loop (reconciling first, every write it makes fenced by its epoch), the webhook
sender and the MLflow mirror."""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable
from typing import Protocol

from ..engines import registry
from ..engines.base import Executor
from ..engines.identities import UidPool
from ..engines.isolation import Isolation
from ..engines.routing import Engines
from .runtime import Console
from .settings import Settings

__all__ = ["Loop", "build_engines", "job_uids", "prepare_isolation", "start_background"]


class Loop(Protocol):
    """A started background loop."""

    def stop(self) -> None:
        """Stop it (after its current round of work)."""


def prepare_isolation(settings: Settings) -> Isolation:
    """Check and return how the local engine isolates jobs; raise SandboxUnavailable with the fix."""
    from ..engines.local import detect_gpus
    from .job_channel import channel_folder

    gpus = detect_gpus()
    slots = sum({**{s: len(ids) for s, ids in gpus.items()}, **settings.capacity}.values())
    masked = (settings.config_file,) if settings.config_file else ()
    return Isolation.prepare(settings.state_dir, settings.local, total_slots=slots, masked=masked,
                             channel=channel_folder(settings.state_dir))


def job_uids(settings: Settings, isolation: Isolation) -> UidPool | None:
    """Return the pool of job uids the engines share: the local sandbox's, else one of `executors.local.uid_range`
    (a root console only; accounts keep one uid across engines)."""
    if isolation.uids is not None:
        shared: UidPool = isolation.uids
        return shared
    return UidPool(*settings.local.uid_range) if os.getuid() == 0 else None


def build_engines(settings: Settings, isolation: Isolation) -> Engines:
    """Return the engines the settings name (`executor`, `executors.series`), built in registry order, each series
    routed to its own; raise `ExecutorError` when an engine cannot be reached."""
    context = registry.EngineContext(state_dir=settings.state_dir, capacity=dict(settings.capacity),
                                     stop_grace=settings.stop_grace_seconds, isolation=isolation,
                                     uids=job_uids(settings, isolation))
    wanted = settings.engines()
    built: dict[str, Executor] = {}
    for engine in registry.engines():
        if engine.name in wanted:
            built[engine.name] = engine.build(settings.engine_config(engine.name), context)
    return Engines(built, settings.engine_of)


def start_background(console: Console) -> list[Loop]:
    """Start this process's election: the process that leads the console's database (at once, when no other does)
    reconciles jobs left by a previous leader and runs the scheduler loop on the console's engines; return the
    started work (each with `stop()`)."""
    from .services.leadership import Elector, Member, leader_lock

    assert console.engines is not None, "a console without engines runs no background work"
    rt = console.runtime
    elector = Elector(rt.db, leader_lock(rt.db.url, rt.settings.state_dir), Member.this_process(rt.identity),
                      functools.partial(_lead, console))
    elector.start()
    return [elector]


def _lead(console: Console, epoch: int) -> Callable[[], None]:
    """Run the leader's work with fencing token `epoch`: reconcile, then the scheduler loop (its writes fenced), the
    webhook sender beside it and, when `mlflow:` names a tracking server, the metrics mirror; return their stop."""
    from .scheduler import BackgroundLoop, Scheduler
    from .scheduler.remote_wake import WakeWatcher, shared_wake
    from .services.leadership import check
    from .services.notify.sender import NotifySender

    assert console.engines is not None
    rt = console.runtime
    fenced = dataclasses.replace(rt, db=rt.db.fenced(functools.partial(check, epoch=epoch)))
    scheduler = Scheduler(fenced, console.engines, runtimes=console.runtimes, images=console.images, epoch=epoch)
    loop = BackgroundLoop(fenced, scheduler, rt.settings.scheduler_interval)
    loop.start()
    watcher = WakeWatcher(rt, shared_wake(rt.settings.state_dir))  # what other processes commit, launched soon
    watcher.start()
    sender = NotifySender(rt)  # the process that schedules is the one that sends (its deliveries are leased)
    sender.start()
    loops: list[Loop] = [watcher, loop, sender]
    if rt.settings.mlflow.on:
        from .services.mirror.loop import MirrorLoop

        mirror = MirrorLoop(rt)  # `mlflow:` names a tracking server: jobs' metrics are mirrored there
        mirror.start()
        loops.append(mirror)

    def stop() -> None:
        for started in loops:
            started.stop()

    return stop
