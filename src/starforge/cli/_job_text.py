"""How `sf job` says a job in words: its ages, its status block (why it waits and its place, its attempts and what
the current one resumed from, each attempt when there were several, its benchmark scores), and what a pause, resume or retry did.

Pure text from the rows the console serves (`starforge.client.Job.raw`); a field a console does not send is left
out, never guessed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starforge.client import ControlResult, Job

__all__ = ["ATTEMPT_HEADERS", "Said", "age", "attempt_rows", "attempt_text", "control_said", "ordinal", "reason", "status_text"]

Table = Callable[[Sequence[str], Sequence[Sequence[Any]]], str]


def age(epoch: float | None, now: float | None = None) -> str:
    """Return how long ago `epoch` was (`42s ago`, `5m ago`, `3h ago`, `2d ago`), or `-`."""
    if epoch is None:
        return "-"
    seconds = max(0, int((time.time() if now is None else now) - epoch))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"


def ordinal(n: int) -> str:
    """Return `1st`, `2nd`, `3rd`, `4th`, … `11th`, `21st`."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def reason(job: Job) -> str:
    """Return why the job is where it is (the row's `message`: a failure's reason, a queue's wait), or ""."""
    message = job.raw.get("message")
    return " ".join(message.split()) if isinstance(message, str) else ""


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _checkpoint(path: Any, step: Any) -> str:
    """Return `checkpoint-20, step 20` for a checkpoint the job saw at `path` (its last part), or ""."""
    if not isinstance(path, str) or not path:
        return ""
    name = PurePosixPath(path.rstrip("/")).name or path
    at = _int(step)
    return name + (f", step {at}" if at is not None else "")


def attempt_text(row: Mapping[str, Any]) -> str:
    """Return `attempt 2 (resumed from checkpoint-20, step 20)` for a job row that says its attempts ("" for a
    job that has not started, or a console that does not count them)."""
    attempts = _int(row.get("attempts"))
    if not attempts:
        return ""
    resumed = _checkpoint(row.get("resumed_from"), row.get("resume_step"))
    if resumed:
        return f"attempt {attempts} (resumed from {resumed})"
    return f"attempt {attempts}" + (" (started over: no checkpoint to resume from)" if attempts > 1 else "")


def attempt_rows(row: Mapping[str, Any], now: float | None = None) -> list[list[str]]:
    """Return one table row per attempt (number, started, ended, outcome, resumed from, reason) when the job had
    more than one; [] otherwise."""
    history = row.get("attempt_history")
    if not isinstance(history, list) or len(history) < 2:
        return []
    rows = []
    for item in history:
        if not isinstance(item, Mapping):
            continue
        ended = item.get("ended_at")
        outcome = str(item.get("outcome") or "") or ("running" if ended is None else "?")
        rows.append([str(item.get("number", "?")), age(item.get("started_at"), now),
                     age(ended, now) if ended is not None else "-", outcome,
                     _checkpoint(item.get("resumed_from"), item.get("resume_step")) or "-",
                     " ".join(str(item.get("reason") or "").split())])
    return rows


ATTEMPT_HEADERS = ("#", "started", "ended", "outcome", "resumed from", "reason")


def _interrupt_text(row: Mapping[str, Any]) -> str:
    asked = row.get("interrupt")
    if not isinstance(asked, Mapping) or not asked.get("kind"):
        return ""
    by = f" by {asked['by']}" if asked.get("by") else ""
    doing = "preempted" if asked["kind"] == "preempt" else "pausing" if asked["kind"] == "pause" else asked["kind"]
    return f"{doing}{by}: saving a checkpoint, then stopping"


def status_text(job: Job, table: Table, now: float | None = None) -> str:
    """Return `sf job status`'s block: one `key value` line per fact, then the attempts table when it had several and
    the benchmark scores it reported."""
    row = job.raw
    lines = [
        ("job", job.ref), ("run", job.run_id or "-"), ("name", job.name or "-"), ("exp", job.exp or "-"),
        ("status", job.status or "?"), ("gpus", str(job.requested_gpus)), ("submitted", age(job.submitted_at, now)),
    ]
    if job.pipeline:
        lines.append(("pipeline", job.pipeline_progress))
    engine, engine_ref = row.get("executor"), row.get("engine_ref")
    if isinstance(engine, str) and isinstance(engine_ref, str):
        lines.append(("engine", f"{engine} {engine_ref}"))
    image, digest = row.get("image"), row.get("image_digest")
    if isinstance(image, str) and image:
        lines.append(("image", f"{image} ({digest})" if isinstance(digest, str) and digest else
                      f"{image} (not pulled yet)"))
    why = reason(job)
    if why:
        lines.append(("reason", why))
    position, length = row.get("queue_position"), row.get("queue_length")
    if isinstance(position, int) and isinstance(length, int):
        lines.append(("queue", f"{ordinal(position)} of {length} waiting for {row.get('profile') or 'its profile'}"))
    elif job.status == "paused":
        lines.append(("queue", f"held: it keeps its place and starts again after `sf job resume {job.ref}`"))
    interrupted = _interrupt_text(row)
    if interrupted:
        lines.append(("stopping", interrupted))
    attempts = attempt_text(row)
    if attempts:
        lines.append(("attempts", attempts))
    most, used = _int(row.get("max_restarts")), _int(row.get("restarts"))
    if most:
        lines.append(("restarts", f"{used or 0} of {most} used (after a failure it starts again by itself)"))
    text = "\n".join(f"{key:<10} {value}" for key, value in lines)
    history = attempt_rows(row, now)
    text += "\n\n" + table(ATTEMPT_HEADERS, history) if history else ""
    scores = row.get("benchmark_summary")
    if isinstance(scores, list) and scores:
        from starforge.cli._bench_text import SCORE_HEADERS, score_rows

        text += "\n\nbenchmarks\n" + table(SCORE_HEADERS, score_rows(scores))
    return text


@dataclass(frozen=True)
class Said:
    """What `sf job pause|resume|retry` tells: a success or an information line, and a next step ("" for none)."""

    text: str
    success: bool
    hint: str = ""


def control_said(result: ControlResult) -> Said:
    """Return what a pause, resume or retry did to the job, in words (the console's own `message` first)."""
    ref, status = result.ref, result.status or "unknown status"
    if result.message:
        return Said(result.message, success=result.done)
    if result.action == "pause":
        if not result.done:
            if status == "paused":
                return Said(f"Job {ref} is already paused", success=False, hint=f"sf job resume {ref}")
            return Said(f"Job {ref} was not paused: it is {status} (already finished, stopping or pausing)",
                        success=False, hint=f"sf job status {ref}")
        if status == "paused":
            return Said(f"Paused job {ref}: it keeps its place in the queue and is not started until resumed",
                        success=True, hint=f"sf job resume {ref}")
        return Said(f"Asked {ref} to checkpoint and stop; it is held paused then (sf job resume {ref})",
                    success=True, hint=f"sf job status {ref}")
    if result.action == "resume":
        if not result.done:
            return Said(f"Job {ref} is not paused ({status}): nothing to resume", success=False)
        if status in ("running", "submitted", "preparing"):
            return Said(f"Cancelled the pause of {ref}: it keeps running", success=True)
        return Said(f"Resumed job {ref}: it is back in the queue in its place and resumes from its latest checkpoint",
                    success=True, hint=f"sf job status {ref}")
    return Said(f"Retrying job {ref}: it is {status} again as the same job and resumes from its latest checkpoint",
                success=True, hint=f"sf job logs {ref}")
