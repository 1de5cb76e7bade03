"""Follow a job's log stream (wire-protocol §8.2): parse SSE, resume from the last id, back off and reconnect."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator

from ._errors import Unavailable, error_from_response
from ._http import Http, query
from ._sse import LogEvent, SSEParser

__all__ = ["EVENTS", "Backoff", "follow_logs"]

EVENTS = frozenset({"log", "error", "end"})
_PATH = "/api/job/logs/stream"


class Backoff:
    """Reconnect delays: `base + U(0, base/4)`, the base doubling from 1 s to 30 s, reset after a good connect."""

    def __init__(self, first: float = 1.0, cap: float = 30.0, rng: random.Random | None = None) -> None:
        self.first = first
        self.cap = cap
        self.base = first
        self._rng = rng or random.Random()

    def reset(self) -> None:
        """Start again from the first delay."""
        self.base = self.first

    def next(self) -> float:
        """Return the next delay and double the base (up to the cap)."""
        delay = self.base + self._rng.uniform(0, self.base / 4)
        self.base = min(self.base * 2, self.cap)
        return delay


def follow_logs(
    http: Http,
    ref: str,
    bearer: Callable[[], str | None],
    *,
    tail: int = 2000,
    follow: bool = True,
    sleep: Callable[[float], None] = time.sleep,
    backoff: Backoff | None = None,
    live: bool = True,
) -> Iterator[LogEvent]:
    """Yield the `log`, `error` and `end` events of job `ref`, ending after `end`.

    With `follow`, a cut stream, a network error, 429 or 5xx is retried forever from the last event id; without
    it the first connection is the only one. Any other 4xx raises its error (404 for unknown or foreign jobs).
    Without `live` the console sends what the log holds now and then `end` with the job's status as JSON
    (`{"status": "running", "final": false}` for a job still going).
    """
    now_only = {} if live else {"follow": "false"}
    backoff = backoff or Backoff()
    last_id: str | None = None
    while True:
        if last_id:
            path, headers = _PATH + query(id=ref, **{"from": last_id}, **now_only), {"Last-Event-ID": last_id}
        else:
            path, headers = _PATH + query(id=ref, tail=tail, **now_only), {}
        try:
            with http.stream(path, token=bearer(), headers=headers) as response:
                status = response.status_code
                if status == 200:
                    backoff.reset()
                    parser = SSEParser()
                    for chunk in response.iter_bytes():
                        for event in parser.feed(chunk):
                            if event.event in EVENTS:
                                yield event
                            if event.event == "end":
                                return
                        if parser.last_event_id:
                            last_id = parser.last_event_id
                elif status == 429 or status >= 500:
                    response.read()
                    if not follow:
                        raise error_from_response(status, response.content)
                else:
                    response.read()
                    raise error_from_response(status, response.content)
        except Unavailable:
            if not follow:
                raise
        if not follow:
            return
        sleep(backoff.next())
