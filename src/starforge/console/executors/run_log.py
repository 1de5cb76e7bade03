"""Where every engine's job writes its output and exit record in the run folder, and reading that output back."""

from __future__ import annotations

from pathlib import Path

__all__ = ["EXIT_FILE", "OUTPUT", "read_log"]

OUTPUT = "output.log"  # `<run>/logs/output.log`: the job's stdout and stderr
EXIT_FILE = "exit.json"  # `<run>/logs/exit.json`: the exit record forge-launch writes
_CHUNK = 4 * 1024 * 1024


def read_log(run_dir: Path, offset: int) -> tuple[bytes, int]:
    """Return the output written to the run's log since `offset` (at most 4 MiB) and the offset to continue from."""
    try:
        with (run_dir / "logs" / OUTPUT).open("rb") as handle:
            handle.seek(offset)
            data = handle.read(_CHUNK)
    except FileNotFoundError:
        return b"", offset
    return data, offset + len(data)
