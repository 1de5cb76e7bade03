"""An incremental Server-Sent Events parser with the framing of wire-protocol §8.2 (bytes in, events out)."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["LogEvent", "SSEParser"]

_EOL = re.compile(rb"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class LogEvent:
    """One dispatched event: its type (`log`, `error`, `end`, …), its data, and the stream's last event id."""

    event: str
    data: str
    id: str | None = None


class SSEParser:
    """Feed raw chunks split anywhere (inside lines, CRLF pairs or UTF-8 sequences); get complete events back.

    A blank line dispatches; `data:` lines join with `\\n`; one space after the colon is dropped; `:` lines are
    comments; `event:` sets the type (default `message`); `id:` is sticky; an event without data is dropped.
    """

    def __init__(self) -> None:
        self._buffer = b""
        self._skip_lf = False
        self._first_line = True
        self._data: list[str] = []
        self._type = ""
        self._id_buffer: str | None = None
        self.last_event_id: str | None = None

    def feed(self, chunk: bytes) -> list[LogEvent]:
        """Consume `chunk` and return the events it completes, in order."""
        if not chunk:
            return []
        if self._skip_lf:
            self._skip_lf = False
            if chunk.startswith(b"\n"):
                chunk = chunk[1:]
        buffer = self._buffer + chunk
        events: list[LogEvent] = []
        start = 0
        for match in _EOL.finditer(buffer):
            line = buffer[start : match.start()]
            start = match.end()
            if match.group() == b"\r" and start == len(buffer):
                self._skip_lf = True  # a CRLF may be split across chunks: drop the LF if it comes next
            event = self._line(line.decode("utf-8", errors="replace"))
            if event is not None:
                events.append(event)
        self._buffer = buffer[start:]
        return events

    def _line(self, line: str) -> LogEvent | None:
        if self._first_line:
            self._first_line = False
            line = line.removeprefix("\ufeff")
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._type = value
        elif name == "id" and "\x00" not in value:
            self._id_buffer = value
        return None

    def _dispatch(self) -> LogEvent | None:
        self.last_event_id = self._id_buffer
        if not self._data:
            self._type = ""
            return None
        event = LogEvent(self._type or "message", "\n".join(self._data), self.last_event_id)
        self._data = []
        self._type = ""
        return event
