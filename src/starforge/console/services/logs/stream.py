"""A run's log as Server-Sent Events (wire-protocol §8.2): where to start, how events are framed, and the loop
that follows the log until the job ends.

Tier: use case (`open_stream` and each status poll of the loop own one read transaction). Event ids are byte
offsets in the log file (`logs.read_from`), so they increase strictly and `from=<id>` resumes exactly. The end event
carries the final status as its data, because a client drops an event without data and would reconnect forever.
A raw stream (the web console's terminal view) keeps the log's carriage returns: each event is `raw` with the text as
one JSON string (SSE itself would split on a carriage return), cut only between whole UTF-8 characters, after a
`start` event giving the byte offset the replay starts from (0: the whole log).
Blocking reads (files, database) run in worker threads, never on the event loop.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import anyio.to_thread

from ....contract import Problem
from ..accounts.credentials import UserView
from ..context import Runtime
from ..errors import Rejected
from ..jobs import reads as job_reads
from . import store as logs

__all__ = ["KEEPALIVE_SECONDS", "MAX_TAIL", "PAGE_LINES", "LogStream", "format_event", "format_raw_event", "log_text",
           "open_stream", "start_offset", "whole_characters"]

KEEPALIVE_SECONDS = 15.0
PAGE_LINES = 20_000  # what the web console's log keeps (static/log.js), so what its stream replays by default
MAX_TAIL = 1_000_000  # lines replayed on connect; 0 replays the whole log
_MAX_EVENT_ID_DIGITS = 19  # an event id is a byte offset in the log
IDLE_SLEEP = 0.05
STATUS_EVERY = 0.25


def log_text(data: bytes) -> str:
    """Return log bytes as the text a client reads from the stream (UTF-8, bad bytes replaced, line ends `\n`)."""
    return data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")


def format_event(data: bytes, event_id: int, event: str = "log") -> str:
    """Frame one SSE event whose `data` reproduces `data` exactly when the client joins the lines with newlines."""
    lines = "".join(f"data: {line}\n" for line in log_text(data).split("\n"))
    return f"id: {event_id}\nevent: {event}\n{lines}\n"


def format_raw_event(data: bytes, event_id: int) -> str:
    """Frame one `raw` SSE event: the log bytes as UTF-8 text (bad bytes replaced), carriage returns kept, as one
    JSON string."""
    text = json.dumps(data.decode("utf-8", errors="replace"), ensure_ascii=False)
    return f"id: {event_id}\nevent: raw\ndata: {text}\n\n"


def whole_characters(data: bytes) -> bytes:
    """Return `data` without a UTF-8 character cut short at its end (the rest of it is still to be written)."""
    for back in range(1, min(4, len(data)) + 1):
        lead = data[-back]
        if lead & 0xC0 == 0x80:  # a continuation byte: look further back for the character's first byte
            continue
        need = 2 if lead & 0xE0 == 0xC0 else 3 if lead & 0xF0 == 0xE0 else 4 if lead & 0xF8 == 0xF0 else 1
        return data[:-back] if need > back else data
    return data


def start_offset(path: Path, tail: int, resume: str | None) -> int:
    """Return where a read of the log at `path` starts: after event id `resume` (422 when it is not one), else
    at the last `tail` lines (0: the whole log)."""
    if resume is not None and resume != "":
        if not (resume.isascii() and resume.isdigit() and len(resume) <= _MAX_EVENT_ID_DIGITS):
            raise Rejected("Invalid request", [Problem("from", "invalid_request", "from must be an event id",
                                                       "send the id of the last event received (a byte offset)")],
                           status=422)
        size = path.stat().st_size if path.is_file() else 0
        return min(int(resume), size)
    return logs.tail_offset(path, tail)


@dataclass
class LogStream:
    """An opened stream: the job it follows for its caller, the log file and the offset to send from."""

    rt: Runtime
    user: UserView
    ref: str
    path: Path
    offset: int
    follow: bool = True
    raw: bool = False

    async def frames(self, *, is_disconnected: Callable[[], Awaitable[bool]]) -> AsyncIterator[str]:
        """Yield SSE frames: the log from the start offset, then what is appended, a keepalive comment every 15 s
        of silence, and `end` (data: the final status) once the job is final and the log is drained."""
        path, offset = self.path, self.offset
        yield ": stream open\n\n"
        if self.raw:
            yield f"event: start\ndata: {offset}\n\n"
        last_sent = time.monotonic()
        last_status = 0.0
        while True:
            data, new_offset = await anyio.to_thread.run_sync(logs.read_from, path, offset)
            if self.raw and data and not data.endswith(b"\n"):
                data = whole_characters(data)
                new_offset = offset + len(data)
            if data:
                yield self._event(data, new_offset)
                offset, last_sent = new_offset, time.monotonic()
                continue
            now = time.monotonic()
            if now - last_status >= STATUS_EVERY or not self.follow:
                last_status = now
                status, terminal, run_dir = await anyio.to_thread.run_sync(self._state)
                if not terminal and not self.follow:  # what the log holds now was sent: end, saying where the job is
                    yield f"id: {offset}\nevent: end\ndata: {json.dumps({'status': status, 'final': False})}\n\n"
                    return
                if run_dir and path != logs.log_path(run_dir):
                    path = logs.log_path(run_dir)
                if terminal:
                    rest, end = await anyio.to_thread.run_sync(logs.read_from, path, offset, 1 << 30)
                    if rest:
                        yield self._event(rest, end)
                    yield f"id: {end}\nevent: end\ndata: {status}\n\n"
                    return
            if await is_disconnected():
                return
            if now - last_sent >= KEEPALIVE_SECONDS:
                yield ": keepalive\n\n"
                last_sent = now
            await asyncio.sleep(IDLE_SLEEP)

    def _event(self, data: bytes, event_id: int) -> str:
        return format_raw_event(data, event_id) if self.raw else format_event(data, event_id)

    def _state(self) -> tuple[str, bool, str]:
        return job_reads.log_state(self.rt, user=self.user, ref=self.ref)


def open_stream(rt: Runtime, *, user: UserView, ref: str, tail: int, resume: str | None,
                follow: bool = True, raw: bool = False) -> LogStream:
    """Open the log stream of a job the caller may see (404 otherwise): replay the last `tail` lines (0 = all), or
    everything after event id `resume` (422 when it is not one); without `follow` the stream ends once it has sent
    what the log holds now; `raw` keeps carriage returns (`format_raw_event`). Blocking: call it in the threadpool."""
    _status, _terminal, run_dir = job_reads.log_state(rt, user=user, ref=ref)
    path = logs.log_path(run_dir) if run_dir else rt.settings.state_dir / "missing.log"
    return LogStream(rt, user, ref, path, start_offset(path, tail, resume), follow, raw)
