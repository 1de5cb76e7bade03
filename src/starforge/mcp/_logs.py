"""`get_job_logs`: a job's log as it is now, never following: the text (bounded), where to resume, whether it ended."""

from __future__ import annotations

from ._backend import Backend
from ._results import Outcome
from ._shapes import LogWindow

__all__ = ["MAX_LOG_BYTES", "read_logs"]

MAX_LOG_BYTES = 256 * 1024  # also the largest event of the console's log stream, so any event fits in one call


def _notes(window: LogWindow, max_bytes: int) -> list[str]:
    more = (f"call again with from_event_id={window.last_event_id} for what follows" if window.last_event_id
            else "call again with a larger max_bytes")
    notes = []
    if window.cut_bytes:
        kept = len(window.text.encode("utf-8"))
        notes.append(f"log truncated: kept the last {kept:,} bytes, cut the first {window.cut_bytes:,} bytes "
                     f"({window.cut_lines:,} lines); the most recent lines are kept; ask for fewer tail lines or a "
                     "larger max_bytes")
    if window.stopped == "size":
        notes.append(f"stopped reading at the size limit ({max_bytes:,} bytes); {more}")
    elif window.stopped == "time":
        notes.append(f"stopped reading at the time budget; {more}")
    elif window.stopped == "event_too_large":
        notes.append(f"the next part of the log is larger than max_bytes={max_bytes:,}: call again with the same "
                     f"from_event_id and max_bytes={MAX_LOG_BYTES}")
    return notes


def read_logs(backend: Backend, *, job: str, tail: int, from_event_id: str | None, max_bytes: int) -> Outcome:
    """Return the job's log as it is now (the last `tail` lines, or everything after `from_event_id`), bounded."""
    found = backend.job(job)
    window = backend.read_log(found.ref, tail=tail, from_event_id=from_event_id or None, max_bytes=max_bytes)
    notes = _notes(window, max_bytes)
    status = window.status or found.status
    size = len(window.text.encode("utf-8"))
    data = {
        "job": found.ref,
        "status": status,
        "ended": window.ended,
        "text": window.text,
        "bytes": size,
        "last_event_id": window.last_event_id,
        "errors": list(window.errors),
        "truncated": bool(window.cut_bytes or window.stopped),
        "note": "; ".join(notes),
    }
    lines = window.text.count("\n")
    head = f"{found.ref} {status or 'unknown'}: {lines} line(s), {size:,} bytes"
    tail_note = ("the job has ended" if window.ended else
                 f"the job has not ended; poll again with from_event_id={window.last_event_id}"
                 if window.last_event_id else "the job has not ended; no output yet")
    summary = "\n".join([f"{head}; {tail_note}", *notes, *(f"stream error: {e}" for e in window.errors)])
    if window.text:
        summary += "\n---\n" + window.text
    return Outcome(summary, data, echo_data=False)
