"""The one error of launching: a job that cannot be launched as admitted (recorded as its reason; it fails)."""

from __future__ import annotations

__all__ = ["LaunchFailure"]


class LaunchFailure(RuntimeError):
    """A job that cannot be launched as admitted (a permanent failure, recorded as the job's reason)."""
