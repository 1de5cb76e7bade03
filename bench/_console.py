"""Start a real console on loopback for benchmarks (the same process the integration tests use)."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.integration.conftest import ConsoleProcess  # noqa: E402


def start_console(config: dict[str, Any]) -> tuple[ConsoleProcess, tempfile.TemporaryDirectory[str]]:
    """Start a console with `config` in a temporary state directory; the caller stops it and cleans up."""
    tmp = tempfile.TemporaryDirectory(prefix="sf-bench-")
    state = Path(tmp.name) / "state"
    state.mkdir()
    console = ConsoleProcess(state, config=config)
    console.start()
    return console, tmp
