"""Fixtures of the trainer-callback tests: the runner tests' recording ingest server on loopback (shared, not copied),
and SIGUSR1 put back as it was after each test (`install()` handles it for the whole process)."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from starforge.runner import preempt

from ..runner.conftest import RUN_ID, TOKEN, IngestServer, _no_proxy_for_loopback, ingest  # noqa: F401

__all__ = ["RUN_ID", "TOKEN", "IngestServer"]


@pytest.fixture(autouse=True)
def _sigusr1_restored() -> Iterator[None]:
    before = signal.getsignal(signal.SIGUSR1)
    yield
    preempt.default().uninstall()
    preempt.default().signalled = False
    signal.signal(signal.SIGUSR1, before)
