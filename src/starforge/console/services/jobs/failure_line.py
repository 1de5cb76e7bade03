"""Why a job failed, in one line: the last meaningful error line of its log, bounded, with no host path in it.

The scheduler builds a failed job's reason (`sf job status`, the API's `message`, the web page) as `exit code N:
<line>`. The line is, in the last 64 KiB of the run's log (opened without following links: the job writes its logs
folder): the exception line of the last Python traceback (`ValueError: …`), else the last line that names an error
(`error`, `failed`, `killed`, …), never `forge-launch`'s own closing line; of a later attempt, only the log after
the console's line that starts it (`wire.ATTEMPT_MARK`). Absolute paths are cut to their last
component (`…/config.json`), so the console's folders never reach the reason; the line is kept to 300 characters.

Tier: query (reads a file of the run; no database).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ....wire import ATTEMPT_MARK
from ....wire import open_run_log as open_log
from ..logs.store import log_path

__all__ = ["MAX_LINE", "failure_line", "failure_reason"]

MAX_LINE = 300
_TAIL = 64 * 1024
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_PATH = re.compile(r"(?<![\w:/.~-])(?:~|\.{1,2})?(?:/[^\s/'\"`:,;()\[\]{}<>]+)+/?")
_LAUNCHER = "[forge-launch]"
_LAUNCHER_END = re.compile(r"\[forge-launch\] job (failed|succeeded)\b")
_TRACEBACK = "Traceback (most recent call last):"
_CHAINED = ("During handling of the above exception", "The above exception was the direct cause")
_ERROR = re.compile(r"\b(\w*error|errors|\w*exception|fatal|failed|failure|killed|refusing|traceback|denied|"
                    r"out of memory|no such file|not found|cannot|can't)\b", re.IGNORECASE)


def _tail(path: Path) -> str:
    try:
        fd = open_log(path)
    except OSError:
        return ""
    try:
        size = os.fstat(fd).st_size
        os.lseek(fd, max(0, size - _TAIL), os.SEEK_SET)
        data = os.read(fd, _TAIL)
    except OSError:
        return ""
    finally:
        os.close(fd)
    return data.decode("utf-8", errors="replace")


def _clean(line: str) -> str:
    line = _ANSI.sub("", line).split("\r")[-1]  # a progress bar redraws itself after carriage returns
    return _CONTROL.sub("", line).rstrip()


def _exception_line(lines: list[str]) -> str:
    """Return the exception line that ends the last traceback in `lines`, or ""."""
    starts = [i for i, line in enumerate(lines) if line.startswith(_TRACEBACK)]
    if not starts:
        return ""
    for line in lines[starts[-1] + 1:]:
        if line and not line[0].isspace() and not line.startswith(_CHAINED) and not line.startswith(_LAUNCHER):
            return line
    return ""


def _error_line(lines: list[str]) -> str:
    """Return the last line that names an error, leaving out forge-launch's closing line, or ""."""
    for line in reversed(lines):
        if line.strip() and not _LAUNCHER_END.search(line) and _ERROR.search(line):
            return line.strip()
    return ""


def _bounded(line: str) -> str:
    line = line.removeprefix(_LAUNCHER).strip()
    line = _PATH.sub(lambda m: "…/" + m.group(0).rstrip("/").rsplit("/", 1)[-1], line).strip()
    return line if len(line) <= MAX_LINE else line[:MAX_LINE - 1].rstrip() + "…"


def failure_line(run_dir: str | Path) -> str:
    """Return the last meaningful error line of the run's log (no host paths, at most MAX_LINE characters), or ""."""
    text = _tail(log_path(run_dir))
    if not text:
        return ""
    lines = [_clean(line) for line in text.splitlines()]
    marks = [i for i, line in enumerate(lines) if line.startswith(ATTEMPT_MARK)]
    if marks:  # a later attempt: only its own part of the log says why it failed
        lines = lines[marks[-1] + 1:]
    found = _exception_line(lines) or _error_line(lines)
    return _bounded(found) if found else ""


def failure_reason(exit_code: int | None, run_dir: str | Path) -> str:
    """Return a failed job's reason: `exit code N`, followed by the log's last meaningful error line when it has one."""
    line = failure_line(run_dir) if run_dir else ""
    return f"exit code {exit_code}" + (f": {line}" if line else "")
