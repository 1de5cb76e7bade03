"""Fixtures of the trainer-callback tests: the runner tests' recording ingest server, on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ..runner.conftest import RUN_ID, TOKEN, IngestServer

__all__ = ["RUN_ID", "TOKEN", "IngestServer"]


@pytest.fixture(autouse=True)
def _no_proxy_for_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.setenv(name, "127.0.0.1,localhost")


@pytest.fixture
def ingest() -> Iterator[IngestServer]:
    server = IngestServer().start()
    try:
        yield server
    finally:
        server.stop()
