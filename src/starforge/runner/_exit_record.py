"""The exit record: `forge-launch` writes `{exit_code, signal, finished_at}` to `$FORGE_EXIT_FILE` before exiting.

It is how an executor learns the final status of a job it re-attached after a console restart (when it cannot
wait for the process itself). The write is atomic, so a record is either complete or absent.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Mapping

__all__ = ["write_exit_record"]


def write_exit_record(environ: Mapping[str, str], code: int) -> None:
    """Write the record when `FORGE_EXIT_FILE` is set; a code above 128 means the job died of signal code-128."""
    target = environ.get("FORGE_EXIT_FILE", "")
    if not target:
        return
    record = {"exit_code": code, "signal": code - 128 if code > 128 else None, "finished_at": time.time()}
    tmp = f"{target}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(record, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
