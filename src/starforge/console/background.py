"""Background work of the console (scheduler, executor polling); filled in by the scheduler package."""

from __future__ import annotations

from .runtime import Runtime

__all__ = ["start_background"]


def start_background(rt: Runtime) -> None:
    """Start the loops that advance jobs (none yet: admitted jobs wait in their admission status)."""
    return None
