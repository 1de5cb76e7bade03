"""`BuildLog`: the output of one piece of preparation (a runtime build, an image pull) copied into the log of every
job that waits for it, late joiners getting all of it."""

from __future__ import annotations

import threading
from pathlib import Path

__all__ = ["BuildLog"]


class BuildLog:
    """Lines prefixed with `prefix`, appended to every attached job log; `waiting` starts a log that has none yet."""

    def __init__(self, prefix: str = "[runtime] ", waiting: str = "this job waits for its runtime to be built") -> None:
        self.prefix = prefix
        self.waiting = waiting
        self._lines: list[str] = []
        self._sinks: list[Path] = []
        self._lock = threading.Lock()

    def attach(self, path: Path) -> None:
        """Send the output so far, then every further line, to the log file at `path`."""
        with self._lock:
            # the job's log exists at once, even before the tool says anything
            self._append(path, self._lines or [f"{self.prefix}{self.waiting}"])
            self._sinks.append(path)

    def __call__(self, line: str) -> None:
        with self._lock:
            text = self.prefix + line
            self._lines.append(text)
            for sink in self._sinks:
                self._append(sink, [text])

    @staticmethod
    def _append(path: Path, lines: list[str]) -> None:
        if lines:
            try:
                with path.open("a", encoding="utf-8") as handle:
                    handle.write("".join(f"{line}\n" for line in lines))
            except OSError:
                return  # the job's folder is gone (a stopped job was cleaned up): nothing to tell it
