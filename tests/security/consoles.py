"""Console lifecycle for the security suite: start on a backend, stop for good, read the console's own log."""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from tests.integration.conftest import ConsoleProcess, make_console, unique

__all__ = ["Launcher", "account", "server_errors", "wait_for"]

T = TypeVar("T")

# What uvicorn and the console's catch-all handler write when a request ended in a 500.
_SERVER_ERROR = re.compile(r"unexpected error|Exception in ASGI application")


class Launcher:
    """Start consoles for one test (or module) and stop every one of them afterwards, cleanly."""

    def __init__(self, factory: pytest.TempPathFactory, *, workers: int | None = None) -> None:
        self._factory = factory
        self._workers = workers  # worker processes of each console (None: the suite's, STARFORGE_TEST_WORKERS)
        self._started: list[ConsoleProcess] = []

    def __call__(self, backend: str = "sqlite", config: dict[str, Any] | None = None) -> ConsoleProcess:
        console = make_console(self._factory, backend, config=config, workers=self._workers)
        console.start()
        self._started.append(console)
        return console

    def close(self) -> None:
        """Stop every console this launcher started and drop their run directories."""
        for console in self._started:
            console.stop()
            shutil.rmtree(console.state_dir / "runs", ignore_errors=True)
        self._started.clear()


def server_errors(console: ConsoleProcess) -> list[str]:
    """Return the lines of the console log that record an unhandled exception (each one was a 5xx)."""
    if not console.log_file.is_file():
        return []
    return [line for line in console.log_file.read_text(errors="replace").splitlines() if _SERVER_ERROR.search(line)]


def wait_for(probe: Callable[[], T | None], *, what: str, timeout: float = 60.0, every: float = 0.1) -> T:
    """Return the first truthy value of `probe()`, polling until `timeout` (a bound, never an assertion on time)."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(every)


def account(console: ConsoleProcess, prefix: str = "u", role: str = "operator") -> tuple[str, str]:
    """Create an account through the admin API and return its name and first API token (faster than the CLI)."""
    name = unique(prefix)
    with console.client(console.admin_token) as admin:
        created = admin.post("/api/admin/users", json={"username": name, "role": role})
    assert created.status_code == 200, created.text
    return name, str(created.json()["token"])
