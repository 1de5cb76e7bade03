"""A bounded, non-following read of a job's log: what exists now, the last event id, and whether the job ended.

The SDK's `Console.logs` follows a stream until the job ends. Here it runs on a dedicated client whose transport
(the SDK's documented seam) gives the stream a short idle timeout, so a quiet stream ends the read instead of
blocking, and sends `Last-Event-ID` to resume after an event id.
"""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx

from starforge.client import LogEvent, Unavailable

from ._backend import Backend
from ._results import Outcome
from ._truncate import clip_head, clip_tail

__all__ = ["IDLE_SECONDS", "LogWindow", "MAX_LOG_BYTES", "read_logs"]

STREAM_PATH = "/api/job/logs/stream"
IDLE_SECONDS = 1.0
BUDGET_SECONDS = 8.0
MAX_LOG_BYTES = 256 * 1024


class LogWindow(httpx.BaseTransport):
    """Wrap a transport: log streams get an idle read timeout and, when resuming, the `Last-Event-ID` header."""

    def __init__(self, inner: httpx.BaseTransport | None = None, *, idle: float = IDLE_SECONDS,
                 resume_from: str | None = None) -> None:
        self.inner = inner
        self.idle = idle
        self.resume_from = resume_from

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Adjust log-stream requests, pass every request on."""
        if self.inner is None:
            self.inner = _network(request.url)
        if request.url.path.endswith(STREAM_PATH):
            timeout = dict(request.extensions.get("timeout") or {})
            timeout["read"] = self.idle
            request.extensions = {**request.extensions, "timeout": timeout}
            if self.resume_from:
                request.headers["Last-Event-ID"] = self.resume_from
        return self.inner.handle_request(request)

    def close(self) -> None:
        """Close the wrapped transport."""
        if self.inner is not None:
            self.inner.close()


def _network(url: httpx.URL) -> httpx.BaseTransport:
    """Return the transport an httpx client would use for `url`: direct, or the environment's proxy for it."""
    host = url.host
    proxy = urllib.request.getproxies().get(url.scheme)
    if proxy and host and not urllib.request.proxy_bypass(host):
        return httpx.HTTPTransport(proxy=proxy)
    return httpx.HTTPTransport()


@dataclass
class _Read:
    chunks: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    last_id: str | None = None
    ended: bool = False
    final: str = ""
    stopped_early: str = ""

    @property
    def text(self) -> str:
        return "".join(self.chunks)


def _consume(events: Iterator[LogEvent], read: _Read, *, limit: int | None, budget: float) -> None:
    size = 0
    deadline = time.monotonic() + budget
    for event in events:
        if event.event == "log":
            read.chunks.append(event.data)
            size += len(event.data.encode("utf-8"))
        elif event.event == "error":
            read.errors.append(event.data)
        elif event.event == "end":
            read.ended, read.final = True, event.data.strip()
        if event.id:
            read.last_id = event.id
        if read.ended:
            return
        if limit is not None and size >= limit:
            read.stopped_early = "the size limit"
            return
        if time.monotonic() > deadline:
            read.stopped_early = f"the {budget:g} s time budget"
            return


def _collect(backend: Backend, ref: str, *, tail: int, resume_from: str | None, max_bytes: int,
             idle: float, budget: float) -> _Read:
    read = _Read(last_id=resume_from)
    with backend.connect(LogWindow(idle=idle, resume_from=resume_from)) as console:
        events = console.logs(ref, tail=tail, follow=False)
        try:
            _consume(events, read, limit=max_bytes if resume_from is not None else None, budget=budget)
        except Unavailable as exc:
            if not isinstance(exc.__cause__, httpx.ReadTimeout):
                raise  # a real network failure; an idle stream only means "nothing more for now"
        finally:
            close = getattr(events, "close", None)
            if close is not None:
                close()  # leaving early closes the stream
    return read


def read_logs(backend: Backend, *, job: str, tail: int, from_event_id: str | None, max_bytes: int,
              idle: float = IDLE_SECONDS, budget: float = BUDGET_SECONDS) -> Outcome:
    """Return the job's log as it is now (the last `tail` lines, or everything after `from_event_id`), bounded."""
    found = backend.console.resolve_job(job)
    read = _collect(backend, found.ref, tail=tail, resume_from=from_event_id, max_bytes=max_bytes, idle=idle,
                    budget=budget)
    more = (f"call again with from_event_id={read.last_id} for what follows" if read.last_id
            else "call again with a larger max_bytes")
    if from_event_id is None:
        clipped = clip_tail(read.text, max_bytes, what="log",
                            more="the most recent lines are kept; ask for fewer tail lines or a larger max_bytes")
    else:
        clipped = clip_head(read.text, max_bytes, what="log", more=more)
    notes = [n for n in (clipped.note,) if n]
    if read.stopped_early:
        notes.append(f"stopped reading at {read.stopped_early}; {more}")
    status = read.final or found.status
    data = {
        "job": found.ref,
        "status": status,
        "ended": read.ended,
        "text": clipped.text,
        "bytes": len(clipped.text.encode("utf-8")),
        "last_event_id": read.last_id,
        "errors": list(read.errors),
        "truncated": clipped.truncated or bool(read.stopped_early),
        "note": "; ".join(notes),
    }
    lines = clipped.text.count("\n")
    head = f"{found.ref} {status or 'unknown'}: {lines} line(s), {data['bytes']:,} bytes"
    tail_note = ("the job has ended" if read.ended else
                 f"the job has not ended; poll again with from_event_id={read.last_id}" if read.last_id else
                 "the job has not ended; no output yet")
    summary = "\n".join([f"{head}; {tail_note}", *notes, *(f"stream error: {e}" for e in read.errors)])
    if clipped.text:
        summary += "\n---\n" + clipped.text
    return Outcome(summary, data, echo_data=False)
