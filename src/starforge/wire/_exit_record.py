"""The exit record: `{exit_code, signal, finished_at}`, written atomically by `forge-launch` to `$FORGE_EXIT_FILE`.

It is how an executor learns the final status of a job it re-attached after a console restart (when it cannot wait
for the process itself). The job can write that file too, so reading it trusts nothing: a regular file, small, JSON.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import stat
from dataclasses import dataclass
from typing import Any, Final

from starforge.contract import Problem, type_name

__all__ = ["EXIT_FILE_VARIABLE", "ExitRecord", "read_exit_record", "write_exit_record"]

EXIT_FILE_VARIABLE: Final = "FORGE_EXIT_FILE"
_ROOT = "exit"
_MAX_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class ExitRecord:
    """How `forge-launch` ended: its exit status, the signal behind it and when (seconds since the epoch)."""

    exit_code: int | None
    signal: int | None = None
    finished_at: float | None = None

    @classmethod
    def of_status(cls, status: int, finished_at: float) -> ExitRecord:
        """Return the record of exit `status`; a status above 128 means the job died of signal `status - 128`."""
        return cls(status, status - 128 if status > 128 else None, finished_at)

    def to_dict(self) -> dict[str, Any]:
        """Return the record document, keys in wire order."""
        return {"exit_code": self.exit_code, "signal": self.signal, "finished_at": self.finished_at}


def write_exit_record(path: str | os.PathLike[str], record: ExitRecord) -> None:
    """Write `record` to `path` atomically (temporary file, fsync, rename); raise OSError, leaving nothing behind."""
    target = os.fspath(path)
    tmp = f"{target}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(record.to_dict(), handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def read_exit_record(path: str | os.PathLike[str]) -> tuple[ExitRecord | None, list[Problem]]:
    """Return the record at `path`, or None and why: `missing_field` (absent), `invalid_json`, `not_an_object`.

    Never raises and never blocks: a link, a FIFO or a device is refused unread. Fields of the wrong type read as None.
    """
    try:
        raw = _read_regular(path)
    except FileNotFoundError:
        return None, [Problem(_ROOT, "missing_field", f"no exit record at {os.fspath(path)}")]
    except (OSError, ValueError) as exc:
        return None, [Problem(_ROOT, "invalid_json", f"cannot read the exit record {os.fspath(path)}: {exc}")]
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        return None, [Problem(_ROOT, "invalid_json", f"the exit record is not valid JSON: {exc}")]
    if not isinstance(doc, dict):
        return None, [Problem(_ROOT, "not_an_object", f"the exit record must be a JSON object, got {type_name(doc)}")]
    code, sig, finished = doc.get("exit_code"), doc.get("signal"), doc.get("finished_at")
    return (
        ExitRecord(
            code if isinstance(code, int) else None,
            sig if isinstance(sig, int) else None,
            _seconds(finished),
        ),
        [],
    )


def _seconds(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        seconds = float(value)
    except OverflowError:
        return None
    return seconds if math.isfinite(seconds) else None


def _read_regular(path: str | os.PathLike[str]) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("not a regular file")
        raw = os.read(fd, _MAX_BYTES + 1)
    finally:
        os.close(fd)
    if len(raw) > _MAX_BYTES:
        raise ValueError(f"larger than {_MAX_BYTES} bytes")
    return raw
