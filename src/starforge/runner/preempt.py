"""A job's side of "checkpoint, then stop": whether the console asked it (SIGUSR1 or the preempt file), and where a
later attempt resumes from.

    from starforge.runner import preempt

    preempt.install()                        # once, in the main thread, before training starts
    point = preempt.resume_point()           # None on a first attempt, or one without a registered checkpoint
    for step in range(start, max_steps + 1):
        train_one_step()
        if preempt.requested():              # at a step boundary
            save_and_register_checkpoint(step)
            sys.exit(0)

`forge-launch` sends SIGUSR1 only to the processes that handle it and creates the file named by
`$FORGE_PREEMPT_FILE` as well, so a process that installs its handler late (or never) still learns of the request
at its next check. Standard library only: a recipe's own code may use it on any runtime StarForge runs on.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import FrameType
from typing import Any

from starforge.wire import (
    ATTEMPT_VARIABLE,
    PREEMPT_FILE_VARIABLE,
    PREEMPT_SIGNAL,
    RESUME_FROM_VARIABLE,
    RESUME_STEP_VARIABLE,
)

__all__ = ["PreemptWatch", "ResumePoint", "default", "install", "requested", "resume_point"]


class PreemptWatch:
    """Whether this process was asked to checkpoint and stop: SIGUSR1 received (once installed) or the file exists.

    `environ` is read at each check (the process's own environment when None). The handler chains a Python handler
    that was installed before it, so installing never takes SIGUSR1 away from other code.
    """

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._environ = environ
        self.signalled = False
        self._installed = False
        self._previous: Any = None

    @property
    def installed(self) -> bool:
        """Return True while this watch's SIGUSR1 handler is installed."""
        return self._installed

    def install(self) -> bool:
        """Handle SIGUSR1 from now on; return False when already installed or not in the main thread (Python's rule)."""
        if self._installed or threading.current_thread() is not threading.main_thread():
            return False
        self._previous = signal.signal(PREEMPT_SIGNAL, self._handle)
        self._installed = True
        return True

    def uninstall(self) -> None:
        """Put back the handler that was there before `install` (nothing when not installed)."""
        if not self._installed:
            return
        previous = self._previous
        signal.signal(PREEMPT_SIGNAL, previous if previous is not None else signal.SIG_DFL)
        self._installed = False
        self._previous = None

    def file(self) -> str:
        """Return the path of the preempt file forge-launch creates, or "" outside forge-launch."""
        env = os.environ if self._environ is None else self._environ
        return env.get(PREEMPT_FILE_VARIABLE, "")

    def requested(self) -> bool:
        """Return True when the console asked the job to checkpoint and stop (the signal came or the file exists)."""
        if self.signalled:
            return True
        path = self.file()
        return bool(path) and os.path.lexists(path)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        # runs in the main thread between bytecodes: set the flag, chain, nothing else (no output)
        self.signalled = True
        previous = self._previous
        if callable(previous):
            chained: Callable[[int, FrameType | None], Any] = previous
            chained(signum, frame)


@dataclass(frozen=True)
class ResumePoint:
    """Where this attempt resumes: the checkpoint's path (as the job sees it), its step and the attempt number."""

    path: str
    step: int | None = None
    attempt: int | None = None


def resume_point(environ: Mapping[str, str] | None = None) -> ResumePoint | None:
    """Return the checkpoint this attempt resumes from (`$FORGE_RESUME_FROM`), or None when it starts afresh."""
    env = os.environ if environ is None else environ
    path = env.get(RESUME_FROM_VARIABLE, "").strip()
    if not path:
        return None
    return ResumePoint(path, _count(env.get(RESUME_STEP_VARIABLE, "")), _count(env.get(ATTEMPT_VARIABLE, "")))


def _count(raw: str) -> int | None:
    text = raw.strip()
    return int(text) if text.isdigit() else None


_DEFAULT = PreemptWatch()


def default() -> PreemptWatch:
    """Return the process's own watch (the one `install` and `requested` use)."""
    return _DEFAULT


def install() -> bool:
    """Handle SIGUSR1 in this process from now on (main thread only); return False when it already was."""
    return _DEFAULT.install()


def requested() -> bool:
    """Return True when the console asked this job to checkpoint and stop."""
    return _DEFAULT.requested()
