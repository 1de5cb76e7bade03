"""Start a real console on loopback for benchmarks (the same process the integration tests use)."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.integration.conftest import ConsoleProcess  # noqa: E402

SF = Path(sys.executable).with_name("sf")


@functools.cache
def console_workers() -> tuple[int, ...]:
    """Return the worker counts a benchmark measures: 1, and 2 when `sf console up` offers `--workers`."""
    done = subprocess.run([str(SF), "console", "up", "--help"], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "200"}, stdin=subprocess.DEVNULL, check=False)
    return (1, 2) if "--workers" in done.stdout else (1,)


def start_console(config: dict[str, Any], *, database_url: str = "", workers: int = 1) -> tuple[
        ConsoleProcess, tempfile.TemporaryDirectory[str]]:
    """Start a console with `config` in a temporary state directory (SQLite there, or `database_url`), serving from
    `workers` processes; the caller stops it and cleans up."""
    tmp = tempfile.TemporaryDirectory(prefix="sf-bench-")
    state = Path(tmp.name) / "state"
    state.mkdir()
    console = ConsoleProcess(state, config=config, database_url=database_url, workers=workers)
    console.start()
    return console, tmp
