"""Start a real console on loopback for benchmarks (the same process the integration tests use)."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.integration.conftest import ConsoleProcess  # noqa: E402


def start_console(config: dict[str, Any], *, database_url: str = "") -> tuple[
        ConsoleProcess, tempfile.TemporaryDirectory[str]]:
    """Start a console with `config` in a temporary state directory (SQLite there, or `database_url`); the caller
    stops it and cleans up."""
    tmp = tempfile.TemporaryDirectory(prefix="sf-bench-")
    state = Path(tmp.name) / "state"
    state.mkdir()
    console = ConsoleProcess(state, config=config, database_url=database_url)
    console.start()
    return console, tmp
