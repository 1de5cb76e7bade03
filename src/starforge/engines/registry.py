"""The engines a console can drive: one table of entries (name, settings, reader, factory), in the order the
console reads and builds them. Settings parsing (`executor`, `executors.<name>`, `executors.series`) and engine
construction both loop over it.

Adding an engine is one folder under `starforge/engines/` (its settings, reader, executor and factory) and one
line in `_BUILTIN` below; a deployment or a test may add one at run time with `register` (docs/internals.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from . import local_engine
from .factory import Engine, EngineContext
from .isolation import IsolationConfig
from .ray import engine as ray_engine
from .ray.config import RaySettings, ray_settings_from
from .slurm import engine as slurm_engine
from .slurm.config import SlurmSettings, slurm_settings_from

__all__ = ["Engine", "EngineContext", "default_settings", "engines", "get", "names", "register", "registered"]

_BUILTIN = (
    Engine("local", IsolationConfig, local_engine.local_settings_from, local_engine.build),
    Engine("slurm", SlurmSettings, slurm_settings_from, slurm_engine.build),
    Engine("ray", RaySettings, ray_settings_from, ray_engine.build),
)
_TABLE: dict[str, Engine] = {engine.name: engine for engine in _BUILTIN}


def engines() -> tuple[Engine, ...]:
    """Return every registered engine, built-in ones first, in registration order."""
    return tuple(_TABLE.values())


def names() -> tuple[str, ...]:
    """Return the names of every registered engine (what `executor` and `executors.series` may name)."""
    return tuple(_TABLE)


def get(name: str) -> Engine:
    """Return the engine registered as `name`; raise KeyError for an unknown one."""
    return _TABLE[name]


def default_settings() -> dict[str, Any]:
    """Return each registered engine's settings when the configuration names none: name → settings."""
    return {engine.name: engine.defaults() for engine in _TABLE.values()}


def register(engine: Engine) -> None:
    """Add `engine` to the table; refuse a name already taken (an engine is never replaced behind the console)."""
    if engine.name in _TABLE or engine.name == "series" or ":" in engine.name or not engine.name:
        raise ValueError(f"an engine named {engine.name!r} cannot be registered (taken, reserved or malformed)")
    _TABLE[engine.name] = engine


@contextmanager
def registered(engine: Engine) -> Iterator[Engine]:
    """Register `engine` for the duration of a `with` block (tests, embedding), then remove it again."""
    register(engine)
    try:
        yield engine
    finally:
        _TABLE.pop(engine.name, None)
