"""The console's engines (`Engines`): one executor per engine name, chosen for a job by its series, for a ref by its
prefix (`base.ref_parts`). Which engine serves a series is the settings' rule (`Settings.engine_of`), applied here
through the `route` function the console passes in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from .base import ExecState, Executor, JobRefused, ref_parts

__all__ = ["Engines"]


class Engines:
    """The engines of one console; `route(series)` names the engine of a series."""

    def __init__(self, engines: Mapping[str, Executor], route: Callable[[str], str]) -> None:
        self.engines = dict(engines)
        self.route = route

    @classmethod
    def single(cls, executor: Executor) -> Engines:
        """Return the engines of a console with one executor, which runs every series."""
        return cls({executor.name: executor}, lambda _series: executor.name)

    def for_series(self, series: Iterable[str]) -> Executor:
        """Return the executor of a job of these series (one engine; admission refused every other job)."""
        names = {self.route(s) for s in series} or {self.route("")}
        if len(names) > 1:
            raise JobRefused(f"the job's series run on different engines ({', '.join(sorted(names))})")
        name = names.pop()
        if name not in self.engines:
            raise JobRefused(f"the job's series run on the {name} engine, which this console does not drive")
        return self.engines[name]

    def for_ref(self, ref: str) -> Executor | None:
        """Return the executor that started the job of `ref` (None: an engine this console no longer drives)."""
        return self.engines.get(ref_parts(ref)[0])

    def capacity(self) -> dict[str, int]:
        """Return the slots per series, each series counted on the engine that serves it."""
        out: dict[str, int] = {}
        for name, executor in self.engines.items():
            for series, slots in executor.capacity().items():
                if self.route(series) == name:
                    out[series] = slots
        return out

    def poll_many(self, refs: list[str]) -> dict[str, ExecState]:
        """Return the state of every started job, one query per engine."""
        return self._per_engine(refs, lambda executor, group: executor.poll_many(group))

    def stop(self, ref: str, grace: float) -> None:
        """Ask the engine of a started job to stop it."""
        executor = self.for_ref(ref)
        if executor is not None:
            executor.stop(ref, grace)

    def logs(self, ref: str, offset: int) -> tuple[bytes, int]:
        """Return the output of a started job since `offset`, from its engine."""
        executor = self.for_ref(ref)
        return executor.logs(ref, offset) if executor is not None else (b"", offset)

    def reconcile(self, refs: list[str]) -> dict[str, ExecState]:
        """Re-attach jobs after a restart, each through its own engine."""
        return self._per_engine(refs, lambda executor, group: executor.reconcile(group))

    def _per_engine(self, refs: list[str],
                    ask: Callable[[Executor, list[str]], dict[str, ExecState]]) -> dict[str, ExecState]:
        """Ask each engine about its own refs; a ref of an engine this console no longer drives is lost."""
        grouped: dict[str, list[str]] = {}
        for ref in refs:
            grouped.setdefault(ref_parts(ref)[0], []).append(ref)
        out: dict[str, ExecState] = {}
        for name, group in grouped.items():
            executor = self.engines.get(name)
            if executor is None:
                out.update({ref: ExecState("lost", detail=f"the {name} engine that ran the job is not configured")
                            for ref in group})
            else:
                out.update(ask(executor, group))
        return out
