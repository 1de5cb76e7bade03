"""The job side of interruption and resume: how a running job learns it must checkpoint and stop, and what tells
its next attempt where to resume from.

The console never signals a job directly. `forge-launch` asks the console, through the job's ingest channel,
`POST <ingest>/control` every CONTROL_POLL_SECONDS, or as often as the last answer's `poll_seconds` says; an answer with `action: checkpoint` means "save a checkpoint at
the next step boundary, then exit" (a preemption, or `sf job pause`). `forge-launch` then creates the file named by
PREEMPT_FILE_VARIABLE and sends PREEMPT_SIGNAL to every process of the job that handles it (a process that does not
handle it is not signalled: SIGUSR1's default action would kill it). After the grace period the executor stops the
job as any stop (SIGTERM, then SIGKILL).

The next attempt of the same job gets RESUME_FROM_VARIABLE (the job's path of its latest registered checkpoint,
unset when it has none), RESUME_STEP_VARIABLE (that checkpoint's step) and ATTEMPT_VARIABLE (1, 2, ...).
"""

from __future__ import annotations

import signal
from typing import Final

__all__ = [
    "ACTION_CHECKPOINT",
    "ATTEMPT_VARIABLE",
    "CONTROL_POLL_SECONDS",
    "PATH_CONTROL",
    "PREEMPT_FILE_VARIABLE",
    "PREEMPT_SIGNAL",
    "RESUME_FROM_VARIABLE",
    "RESUME_STEP_VARIABLE",
]

from ._ingest import (
    PATH_CONTROL,  # POST {} -> {"action": "" | "checkpoint", "reason": str, "deadline": float | null, "poll_seconds": float}
)

ACTION_CHECKPOINT: Final = "checkpoint"
CONTROL_POLL_SECONDS: Final = 2.0
PREEMPT_SIGNAL: Final = signal.SIGUSR1
PREEMPT_FILE_VARIABLE: Final = "FORGE_PREEMPT_FILE"
RESUME_FROM_VARIABLE: Final = "FORGE_RESUME_FROM"
RESUME_STEP_VARIABLE: Final = "FORGE_RESUME_STEP"
ATTEMPT_VARIABLE: Final = "FORGE_ATTEMPT"
