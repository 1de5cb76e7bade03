"""What an engine is to the console: an `Engine` entry (name, settings, reader, factory) and what the console gives
every factory (`EngineContext`). The table of entries is `registry`; each engine's folder holds its own factory.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .base import Executor
from .identities import UidPool
from .isolation import Isolation

__all__ = ["Engine", "EngineContext"]


@dataclass(frozen=True)
class EngineContext:
    """What the console gives every engine's factory besides the engine's own settings.

    `capacity` is the slots per series the operator declared (`capacity:`); `isolation` is how jobs on this machine
    are sandboxed (prepared and checked when the console starts; `Isolation.none` when no local engine runs);
    `uids` is the pool of job uids the engines share on a root console (None otherwise).
    """

    state_dir: Path
    capacity: Mapping[str, int]
    stop_grace: float
    isolation: Isolation
    uids: UidPool | None = None


@dataclass(frozen=True)
class Engine:
    """One engine a console can drive (`executor:`, `executors.series`), and how its settings and executor are made.

    `defaults()` is its settings when the configuration has no `executors.<name>`; `read(raw)` validates that block
    (raising ValueError whose text starts with the key's path, e.g. `executors.slurm.series: …`); `build(settings,
    context)` returns the running executor (raising `ExecutorError` when the engine cannot be reached).
    """

    name: str
    defaults: Callable[[], Any]
    read: Callable[[Any], Any]
    build: Callable[[Any, EngineContext], Executor]
