"""Map Slurm job states onto StarForge's (`map_state`), and read `squeue` and `sacct` output into them.

Statuses: pending (with Slurm's reason as the job's waiting reason), running, succeeded, failed (with a reason text)
and stopped. Parsers take the text of `squeue -h -o '%i|%T|%r'` and `sacct -n -P -o JobID,State,ExitCode,Reason`;
components of a heterogeneous job (`123+0`, `123+1`) are combined into job `123`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

__all__ = ["SQUEUE_FORMAT", "SACCT_FIELDS", "Mapped", "SlurmJobState", "exit_status", "map_state", "parse_sacct", "parse_squeue",
           "waiting_text"]

SQUEUE_FORMAT = "%i|%T|%r"
SACCT_FIELDS = "JobID,State,ExitCode,Reason"

_RUNNING = {"CONFIGURING", "RUNNING", "COMPLETING", "STAGE_OUT", "SIGNALING", "RESIZING"}
_PENDING = {"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD"}
_FAILED = {
    "FAILED": "the job failed on the cluster",
    "NODE_FAIL": "a node of the job failed",
    "OUT_OF_MEMORY": "the job ran out of memory",
    "TIMEOUT": "the job reached its time limit",
    "BOOT_FAIL": "a node of the job failed to boot",
    "DEADLINE": "the job reached its deadline",
    "PREEMPTED": "the job was preempted by Slurm",
    "REVOKED": "the job was revoked by Slurm",
    "SPECIAL_EXIT": "the job ended in Slurm's special exit state",
}
# what the common pending reasons mean, for the job's waiting reason (Slurm's own word stays first)
_WAITING = {
    "Resources": "the nodes or GPUs it needs are busy",
    "Priority": "jobs of higher priority go first",
    "ReqNodeNotAvail": "a node it needs is down, drained or reserved",
    "PartitionNodeLimit": "it asks more nodes than its partition allows",
    "PartitionTimeLimit": "its time limit exceeds its partition's",
    "Dependency": "it waits for another job",
    "BeginTime": "its start time has not come",
    "JobHeldUser": "held by its owner",
    "JobHeldAdmin": "held by an administrator",
    "Reservation": "it waits for its reservation",
}
_ORDER = ("failed", "stopped", "running", "pending", "succeeded")  # a hetjob's status: its first in this order


class Mapped(NamedTuple):
    """A Slurm state in StarForge's terms: status, and the waiting or failure reason."""

    status: str  # pending | running | succeeded | failed | stopped
    reason: str


@dataclass(frozen=True)
class SlurmJobState:
    """One Slurm job as read from squeue or sacct (exit code and signal from its batch step, when sacct has it)."""

    job_id: str
    status: str
    reason: str = ""
    exit_code: int | None = None
    signal: int | None = None


def _reason(reason: str) -> str:
    reason = reason.strip()
    return "" if reason in ("None", "(null)") else reason


def map_state(state: str, reason: str) -> Mapped:
    """Return the StarForge status of Slurm state `state` (as squeue `%T` or sacct print it) with its reason."""
    words = state.strip().split()
    name = words[0].rstrip("+").upper() if words else ""
    why = _reason(reason)
    if name in _PENDING:
        return Mapped("pending", why or ("requeued by Slurm" if name.startswith("REQUEUE") else ""))
    if name in _RUNNING:
        return Mapped("running", "")
    if name == "COMPLETED":
        return Mapped("succeeded", "")
    if name in _FAILED:
        return Mapped("failed", _FAILED[name] + (f" ({why})" if why else ""))
    if name == "CANCELLED":
        by = " ".join(words[1:])  # `CANCELLED by 1000`: the uid that cancelled it
        return Mapped("stopped", "cancelled" + (f" {by.replace('by ', 'by uid ', 1)}" if by else ""))
    if name in ("SUSPENDED", "STOPPED"):
        return Mapped("running", f"suspended by Slurm ({name})")
    return Mapped("running", f"unknown Slurm state {state.strip()!r}")


def waiting_text(reason: str) -> str:
    """Return the waiting reason of a pending job: Slurm's reason, explained when it is a common one."""
    reason = _reason(reason)
    if not reason:
        return "waiting in Slurm's queue"
    word = reason.split(",", 1)[0].strip()
    meaning = _WAITING.get(word) or next((text for key, text in (("QOS", "a QOS limit holds it"),
                                                                   ("AssocGrp", "an account limit holds it"),
                                                                   ("AssocMax", "an account limit holds it"))
                                          if word.startswith(key)), "")
    return f"Slurm: {reason}" + (f" ({meaning})" if meaning else "")


def _base(job_id: str) -> str:
    return job_id.split(".", 1)[0].split("+", 1)[0]


def _combine(parts: list[SlurmJobState]) -> SlurmJobState:
    worst = min(parts, key=lambda p: _ORDER.index(p.status))
    return SlurmJobState(_base(worst.job_id), worst.status, worst.reason, worst.exit_code, worst.signal)


def _group(states: list[SlurmJobState]) -> dict[str, SlurmJobState]:
    grouped: dict[str, list[SlurmJobState]] = {}
    for item in states:
        grouped.setdefault(_base(item.job_id), []).append(item)
    return {job_id: _combine(parts) for job_id, parts in grouped.items()}


def parse_squeue(text: str) -> dict[str, SlurmJobState]:
    """Return the jobs of `squeue -h -o '%i|%T|%r'` output by job id (hetjob components combined)."""
    states = []
    for line in text.splitlines():
        fields = line.strip().split("|")
        if len(fields) < 3 or not fields[0]:
            continue
        mapped = map_state(fields[1], "|".join(fields[2:]))
        states.append(SlurmJobState(fields[0], mapped.status, mapped.reason))
    return _group(states)


def exit_status(text: str) -> tuple[int | None, int | None]:
    code, _, signal = text.strip().partition(":")
    return (int(code) if code.isdigit() else None), (int(signal) if signal.isdigit() and int(signal) else None)


def parse_sacct(text: str) -> dict[str, SlurmJobState]:
    """Return the jobs of `sacct -n -P -o JobID,State,ExitCode,Reason` output by job id.

    The top-level line of a job gives its state; steps (`.batch`, `.extern`, `.0`) are ignored for it, except that
    the exit code and signal come from the batch step, where the script itself ended.
    """
    tops: list[SlurmJobState] = []
    batch: dict[str, tuple[int | None, int | None]] = {}
    for line in text.splitlines():
        fields = line.strip().split("|")
        if len(fields) < 3 or not fields[0]:
            continue
        job_id, step = fields[0], ""
        if "." in job_id:
            job_id, step = job_id.split(".", 1)
        exit_code, signal = exit_status(fields[2])
        if step == "batch":
            batch[_base(job_id)] = (exit_code, signal)  # a hetjob's script runs in its first component
        elif not step:
            mapped = map_state(fields[1], "|".join(fields[3:]))
            tops.append(SlurmJobState(job_id, mapped.status, mapped.reason, exit_code, signal))
    return {job_id: SlurmJobState(job_id, state.status, state.reason,
                                  *batch.get(job_id, (state.exit_code, state.signal)))
            for job_id, state in _group(tops).items()}
