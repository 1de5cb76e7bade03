"""`ControlWatch`: while the job runs, ask the console what it wants of it (`POST <ingest>/control`) and act once.

The console answers `{"action": "" | "checkpoint", "reason", "deadline"}`; on the first `checkpoint` answer the
watch calls `on_checkpoint(reason)` and stops asking. Errors never stop the job: the first one is reported in one
warning line, later ones are silent, and a 404 (a console without the endpoint) ends the polling for good.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol

from starforge.wire import ACTION_CHECKPOINT, CONTROL_POLL_SECONDS

from ._ingest import IngestError, IngestRefused

__all__ = ["ControlSource", "ControlWatch"]


class ControlSource(Protocol):
    """What the watch asks: the ingest client's `control()` call."""

    def control(self) -> dict[str, object]: ...


class ControlWatch:
    """A daemon thread polling `source.control()` every `interval` seconds (or as often as the console's last answer
    said, `poll_seconds`) until `stop()` or a checkpoint request."""

    def __init__(
        self,
        source: ControlSource,
        on_checkpoint: Callable[[str], None],
        *,
        say: Callable[[str], None],
        interval: float = CONTROL_POLL_SECONDS,
    ) -> None:
        self._source = source
        self._on_checkpoint = on_checkpoint
        self._say = say
        self._interval = interval
        self._stopped = threading.Event()
        self._lock = threading.Lock()  # held while acting, so nothing acts once `stop()` returned
        self._warned = False
        self.reason: str | None = None  # the console's reason, once it asked for a checkpoint
        self._thread = threading.Thread(target=self._loop, name="forge-launch-control", daemon=True)

    @property
    def interval(self) -> float:
        """Return the seconds between two calls (the console's `poll_seconds` once it said)."""
        return self._interval

    @property
    def requested(self) -> bool:
        """Return True when the console asked for a checkpoint (and `on_checkpoint` ran)."""
        return self.reason is not None

    def start(self) -> ControlWatch:
        """Start polling (the first call at once)."""
        self._thread.start()
        return self

    @property
    def alive(self) -> bool:
        """Return True while the polling thread runs."""
        return self._thread.is_alive()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the polling thread to end (after a checkpoint request, a 404 or `stop()`)."""
        self._thread.join(timeout)

    def stop(self) -> None:
        """Stop polling; once this returns, `on_checkpoint` is never called (a call under way has finished)."""
        with self._lock:
            self._stopped.set()

    def _loop(self) -> None:
        while not self._stopped.is_set():
            if not self.poll():
                return
            self._stopped.wait(self._interval)

    def poll(self) -> bool:
        """Ask once and act on the answer; return False when polling should end."""
        try:
            answer = self._source.control()
        except IngestRefused as exc:
            if exc.status == 404:
                return False  # a console without the endpoint: nothing will ever be asked
            self._warn(exc)
            return True
        except IngestError as exc:
            self._warn(exc)
            return True
        self._follow(answer.get("poll_seconds"))
        if answer.get("action") != ACTION_CHECKPOINT:
            return True
        raw = answer.get("reason")
        reason = raw.strip() if isinstance(raw, str) and raw.strip() else "no reason given"
        with self._lock:
            if self._stopped.is_set():
                return False
            self.reason = reason
            self._on_checkpoint(reason)
        return False

    def _follow(self, asked: object) -> None:
        """Ask as often as the console said (`poll_seconds`), within 0.5–60 s; keep the interval otherwise."""
        if isinstance(asked, int | float) and not isinstance(asked, bool) and asked == asked:
            self._interval = min(60.0, max(0.5, float(asked)))

    def _warn(self, exc: IngestError) -> None:
        if not self._warned:
            self._warned = True
            self._say(f"warning: cannot ask the console for requests to the job ({exc}); asking again quietly")
