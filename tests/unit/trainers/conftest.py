"""Fixtures of the trainer-callback tests: the runner tests' recording ingest server on loopback (shared, not copied)."""

from __future__ import annotations

from ..runner.conftest import RUN_ID, TOKEN, IngestServer, _no_proxy_for_loopback, ingest  # noqa: F401

__all__ = ["RUN_ID", "TOKEN", "IngestServer"]
