"""A bounded, non-following read of a job's log through the SDK's log stream (stdio only).

`Console.logs` follows a stream until the job ends. Here it runs on a dedicated client whose transport (the SDK's
documented seam) gives the stream a short idle timeout, so a quiet stream ends the read instead of blocking, and
sends `Last-Event-ID` to resume after an event id. The id a window returns is exactly where its text stops: whole
events, or part of one cut at a line end when the console's event ids are the log's byte offsets (they are on a
StarForge console; a window that cannot tell stops before the event instead).
"""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import httpx

from starforge.client import Console, LogEvent, Unavailable

from .._shapes import LogWindow, Stop
from .._truncate import clip_head, clip_tail

__all__ = ["BUDGET_SECONDS", "IDLE_SECONDS", "StreamWindow", "network_transport", "read_window"]

STREAM_PATH = "/api/job/logs/stream"
IDLE_SECONDS = 1.0
BUDGET_SECONDS = 8.0

Network = Callable[[httpx.URL], httpx.BaseTransport]


def network_transport(url: httpx.URL) -> httpx.BaseTransport:
    """Return the transport an httpx client would use for `url`: direct, or the environment's proxy for it."""
    proxy = urllib.request.getproxies().get(url.scheme)
    if proxy and url.host and not urllib.request.proxy_bypass(url.host):
        return httpx.HTTPTransport(proxy=proxy)
    return httpx.HTTPTransport()


class StreamWindow(httpx.BaseTransport):
    """Wrap a transport: log streams get an idle read timeout and, when resuming, the `Last-Event-ID` header.

    network: returns the wrapped transport for the first request's URL (a transport given to an httpx client
    replaces the one it would pick, proxies included, so the choice is made the same way here).
    """

    def __init__(self, network: Network = network_transport, *, idle: float = IDLE_SECONDS,
                 resume_from: str | None = None) -> None:
        self.network = network
        self.inner: httpx.BaseTransport | None = None
        self.idle = idle
        self.resume_from = resume_from

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Adjust log-stream requests, pass every request on."""
        if self.inner is None:
            self.inner = self.network(request.url)
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


@dataclass
class _Read:
    chunks: list[str] = field(default_factory=list)
    size: int = 0
    errors: list[str] = field(default_factory=list)
    last_id: str | None = None
    ended: bool = False
    final: str = ""
    stopped: Stop = ""


def _part(event: LogEvent, after: str | None, room: int, *, first: bool) -> tuple[str, str] | None:
    """Return the head of a log event that fits in `room` bytes, cut at a line end (mid-line only for the first
    event), and the event id where it stops; None when the ids are not byte offsets matching the text."""
    data = event.data.encode("utf-8")
    if not (after and after.isdigit() and event.id and event.id.isdigit()) or int(after) + len(data) != int(event.id):
        return None
    kept = clip_head(event.data, room).text
    if not kept or (not first and not kept.endswith("\n")):
        return None
    return kept, str(int(after) + len(kept.encode("utf-8")))


def _consume(events: Iterator[LogEvent], read: _Read, *, limit: int | None, budget: float) -> None:
    """Read events into `read` until the end event, the size limit or the time budget."""
    deadline = time.monotonic() + budget
    for event in events:
        if event.event == "log":
            size = len(event.data.encode("utf-8"))
            if limit is not None and read.size + size > limit:
                part = _part(event, read.last_id, limit - read.size, first=not read.chunks)
                if part is not None:
                    read.chunks.append(part[0])
                    read.last_id = part[1]
                read.stopped = "size" if read.chunks else "event_too_large"
                return  # the rest is left for the next call, which resumes at the last id kept
            read.chunks.append(event.data)
            read.size += size
        elif event.event == "error":
            read.errors.append(event.data)
        elif event.event == "end":
            read.ended, read.final = True, event.data.strip()
        if event.id:
            read.last_id = event.id
        if read.ended:
            return
        if time.monotonic() > deadline:
            read.stopped = "time"
            return


def read_window(connect: Callable[[httpx.BaseTransport], Console], network: Network, ref: str, *, tail: int,
                from_event_id: str | None, max_bytes: int, idle: float = IDLE_SECONDS,
                budget: float = BUDGET_SECONDS) -> LogWindow:
    """Return job `ref`'s log as it is now: the last `tail` lines cut to the last `max_bytes`, or at most
    `max_bytes` of whole events after `from_event_id`."""
    read = _Read(last_id=from_event_id)
    with connect(StreamWindow(network, idle=idle, resume_from=from_event_id)) as console:
        events = console.logs(ref, tail=tail, follow=False)
        try:
            _consume(events, read, limit=max_bytes if from_event_id is not None else None, budget=budget)
        except Unavailable as exc:
            if not isinstance(exc.__cause__, httpx.ReadTimeout):
                raise  # a real network failure; an idle stream only means "nothing more for now"
        finally:
            close = getattr(events, "close", None)
            if close is not None:
                close()  # leaving early closes the stream
    text = "".join(read.chunks)
    if from_event_id is not None:
        return LogWindow(text, read.final, read.ended, read.last_id, stopped=read.stopped, errors=tuple(read.errors))
    clipped = clip_tail(text, max_bytes)
    return LogWindow(clipped.text, read.final, read.ended, read.last_id, cut_bytes=clipped.cut_bytes,
                     cut_lines=clipped.cut_lines, stopped=read.stopped, errors=tuple(read.errors))
