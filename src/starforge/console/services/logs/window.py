"""A bounded, non-following read of a run's log: what the log stream would deliver now, in one answer.

Tier: use case (one read transaction for the job, then the log file). For callers that poll instead of following
(the MCP tools on this console): the same job lookup (404 for what the caller may not see), the same start as the
stream (`log_stream.start_offset`), the same text (`log_stream.log_text`) and the same event ids (byte offsets),
so a window and the stream resume from each other's ids.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..accounts.credentials import UserView
from ..context import Runtime
from ..jobs.queries import find_job
from ..jobs.rows import TERMINAL
from . import store as logs
from .stream import log_text, start_offset

__all__ = ["LogSlice", "read_window"]

_CHUNK = 256 * 1024  # what the stream reads at a time (`logs.read_from`)
_SPAN = 4  # a tail is decoded from this many windows before its end: enough for any line-end and \r\n shrinkage


@dataclass(frozen=True)
class LogSlice:
    """What a window read: the text, the event id after it (None when nothing was read yet), whether the job is
    final with nothing left after it, what a tail read cut before the text, and whether the size limit stopped
    the read before the end of what exists now."""

    status: str
    ended: bool
    text: str
    last_event_id: str | None
    cut_bytes: int = 0
    cut_lines: int = 0
    more: bool = False


def _size(path: Path) -> int:
    return path.stat().st_size if path.is_file() else 0


def _read(path: Path, start: int, end: int) -> bytes:
    if end <= start:
        return b""
    with path.open("rb") as handle:
        handle.seek(start)
        return handle.read(end - start)


def _measure(path: Path, start: int, end: int) -> tuple[int, int, bool]:
    """Return the size in bytes and the number of line ends of the text the stream delivers for the log bytes from
    `start` to `end` (a line start), and whether that text ends with a line end."""
    size = newlines = 0
    last = "\n"
    offset = start
    while offset < end:
        data, offset = logs.read_from(path, offset, min(_CHUNK, end - offset))
        if not data:
            break
        text = log_text(data)
        size, newlines, last = size + len(text.encode("utf-8")), newlines + text.count("\n"), text[-1:] or last
    return size, newlines, last == "\n"


def _line_start(path: Path, start: int, at: int) -> int:
    """Return the first line start at or after `at` (past `start`), else the first character start there."""
    if at <= start:
        return start
    data = _read(path, at - 1, min(_size(path), at - 1 + _CHUNK))
    newline = data.find(b"\n")
    if newline >= 0:
        return at - 1 + newline + 1
    skip = 1
    while data[skip:skip + 1] and data[skip] & 0xC0 == 0x80:  # a UTF-8 continuation byte: inside a character
        skip += 1
    return at - 1 + skip


def _tail(path: Path, start: int, limit: int) -> tuple[str, int, int, int]:
    """Return the stream's text of the log from `start` to its end (the offset, returned last) cut to its last
    `limit` bytes after a line end when there is one, with the bytes and lines cut before it; only the last few
    windows' worth of the log is decoded."""
    size = _size(path)
    head = _line_start(path, start, size - _SPAN * limit)
    text = log_text(_read(path, head, size)).encode("utf-8")  # `size` bytes at most: what existed at the start
    kept = text[len(text) - limit:] if len(text) > limit else text
    if len(kept) < len(text):
        newline = kept.find(b"\n")
        if 0 <= newline < len(kept) - 1:
            kept = kept[newline + 1:]
        kept = kept.decode("utf-8", errors="ignore").encode("utf-8")
    cut = text[:len(text) - len(kept)]
    before, newlines, whole = _measure(path, start, head) if head > start else (0, 0, True)
    if not before and not cut:
        return kept.decode("utf-8"), 0, 0, size
    last_whole = cut.endswith(b"\n") if cut else whole
    lines = newlines + cut.count(b"\n") + (0 if last_whole else 1)
    return kept.decode("utf-8"), before + len(cut), lines, size


def _after(path: Path, start: int, limit: int) -> tuple[bytes, int]:
    """Return up to `limit` bytes from `start` ending at a line end, and the offset after them; a partial last line
    comes too when everything left fits, as the stream sends it once nothing else is left."""
    data, end = logs.read_from(path, start, limit)
    if end < _size(path) <= start + limit:
        rest, end = logs.read_from(path, end, start + limit - end)
        data += rest
    return data, end


def read_window(rt: Runtime, *, user: UserView, ref: str, tail: int, resume: str | None, limit: int) -> LogSlice:
    """Return the log of a job the caller may see (404 otherwise) as it is now, never following: at most `limit`
    bytes after event id `resume` (422 when it is not one), else the last `tail` lines (0: all) cut to their last
    `limit` bytes at a line start. Blocking (database, files): call it in a worker thread."""
    with rt.db.read() as db:
        job = find_job(db, user, ref)
        status, final, run_dir = job.status, job.status in TERMINAL, job.run_dir
    path = logs.log_path(run_dir) if run_dir else rt.settings.state_dir / "missing.log"
    start = start_offset(path, tail, resume)
    limit = max(1, limit)
    if resume:
        data, end = _after(path, start, limit)
        ended = final and end >= _size(path)
        after = str(end) if data or ended else resume
        return LogSlice(status, ended, log_text(data), after, more=end < _size(path))
    text, cut_bytes, cut_lines, end = _tail(path, start, limit)
    last = str(end) if text or final else None
    return LogSlice(status, final, text, last, cut_bytes, cut_lines)
