"""The scheduler: place waiting jobs on capacity, launch placed jobs, and watch running ones until they end.

One cycle (`cycle.Scheduler`), in three phases, each its own module and each logging its duration:
1. place (`place`): under the capacity lock, every waiting job, in fair order (`quota.fairshare`; off: queue
   order), is checked against the daily budget again and placed on one snapshot with `capacity.place` (the
   submission writer's placement step) — or, preemption on, may ask running jobs to checkpoint and stop
   (`quota.preemption`); the new statuses are committed at once;
2. launch (`launch`): placed jobs are claimed with a lease (`claim`), each loaded once into a frozen `ClaimedJob`
   that runtime planning, preparation (`prepare`, `plan`) and the engine's start all read; a job whose runtime is
   not built yet is `preparing` while a worker thread builds it;
3. watch (`watch`): running jobs are polled, stops delivered, final statuses recorded, capacity released and the
   follow-ups of a successful run created; `reconcile` re-attaches jobs after a restart.
Every phase reads the time from an injected `clock.Clock`; `loop.BackgroundLoop` runs the cycles on a thread.
"""

from .claim import ClaimedJob, Lease
from .clock import Clock, ManualClock, SystemClock
from .cycle import Scheduler
from .errors import LaunchFailure
from .launch import REASON_CHARS, build_failure
from .loop import BackgroundLoop
from .plan import compile_plan
from .prepare import Inputs, job_inputs, prepare_run, run_dir_of

__all__ = [
    "REASON_CHARS",
    "BackgroundLoop",
    "ClaimedJob",
    "Clock",
    "Inputs",
    "LaunchFailure",
    "Lease",
    "ManualClock",
    "Scheduler",
    "SystemClock",
    "build_failure",
    "compile_plan",
    "job_inputs",
    "prepare_run",
    "run_dir_of",
]
