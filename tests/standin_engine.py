"""A stand-in engine, added the way any engine is: its settings and reader, a tiny executor and its factory, and one
registry entry (`ENGINE`), registered for a test with `engines.registry.registered(ENGINE)`.

Its executor runs jobs as local process trees (it delegates to the local executor) behind refs of its own,
`standin:<local ref>`, so the console routes them to it by name like any other engine's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starforge.engines import ExecState, Executor, JobPaths, LaunchRequest, LocalExecutor
from starforge.engines.registry import Engine, EngineContext

NAME = "standin"
PREFIX = f"{NAME}:"


@dataclass(frozen=True)
class StandInSettings:
    """`executors.standin`: how many CPU slots the stand-in offers."""

    slots: int = 2


def standin_settings_from(raw: Any) -> StandInSettings:
    """Read `executors.standin: {slots}`; raise ValueError naming the key."""
    if not isinstance(raw, dict) or set(raw) - {"slots"}:
        raise ValueError("executors.standin: must be a mapping {slots}")
    slots = raw.get("slots", 2)
    if isinstance(slots, bool) or not isinstance(slots, int) or not 0 < slots <= 64:
        raise ValueError("executors.standin.slots: must be a number of slots from 1 to 64")
    return StandInSettings(slots)


def _inner(ref: str) -> str:
    return ref.removeprefix(PREFIX)


class StandIn:
    """A tiny executor: the local one's processes, behind `standin:` refs."""

    name = NAME

    def __init__(self, settings: StandInSettings, context: EngineContext) -> None:
        self._local = LocalExecutor({"cpu": settings.slots}, gpus={}, isolation=context.isolation,
                                    stop_grace=context.stop_grace)

    def capacity(self) -> dict[str, int]:
        return self._local.capacity()

    def job_paths(self, run_dir: Path) -> JobPaths:
        return self._local.job_paths(run_dir)

    def submit(self, request: LaunchRequest) -> str:
        return PREFIX + self._local.submit(request)

    def poll(self, ref: str) -> ExecState:
        return self._local.poll(_inner(ref))

    def poll_many(self, refs: list[str]) -> dict[str, ExecState]:
        states = self._local.poll_many([_inner(ref) for ref in refs])
        return {ref: states[_inner(ref)] for ref in refs}

    def logs(self, ref: str, offset: int) -> tuple[bytes, int]:
        return self._local.logs(_inner(ref), offset)

    def stop(self, ref: str, grace: float) -> None:
        self._local.stop(_inner(ref), grace)

    def reconcile(self, refs: list[str]) -> dict[str, ExecState]:
        states = self._local.reconcile([_inner(ref) for ref in refs])
        return {ref: states[_inner(ref)] for ref in refs}


def build(settings: StandInSettings, context: EngineContext) -> Executor:
    """The stand-in's factory."""
    return StandIn(settings, context)


ENGINE = Engine(NAME, StandInSettings, standin_settings_from, build)  # its one registry entry
