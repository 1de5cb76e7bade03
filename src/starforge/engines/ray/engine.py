"""The Ray engine's factory for the registry (its settings reader is `config.ray_settings_from`); only building it
imports ray, the optional extra, whose absence is said with its install command."""

from __future__ import annotations

from ...extras import missing_extra
from ..base import Executor
from ..factory import EngineContext
from .config import RaySettings

__all__ = ["build"]


def build(settings: RaySettings, context: EngineContext) -> Executor:
    """Return the Ray executor of `executors.ray` on the cluster at `address`; raise `MissingExtra` without ray."""
    try:
        from .executor import RayExecutor

        return RayExecutor(settings, settings.address, stop_grace=context.stop_grace, storage_root=context.state_dir)
    except ModuleNotFoundError as exc:  # the `ray` extra is optional: name it and its install command
        missing = missing_extra(exc, "the Ray engine (`--executor ray`, `executors.ray`)")
        if missing is None:
            raise
        raise missing from exc
