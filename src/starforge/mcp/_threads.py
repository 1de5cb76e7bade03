"""Blocking console calls run on MCP's own worker threads, so MCP traffic never starves the routes that serve it.

Over HTTP a tool call is served by the console and calls the console back over loopback; if both shared the default
thread pool, enough concurrent tool calls could hold every thread while their loopback requests wait for one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

import anyio
import anyio.to_thread

__all__ = ["MAX_THREADS", "in_worker"]

T = TypeVar("T")

MAX_THREADS = 16  # concurrent MCP calls per process; the rest wait their turn


@functools.cache
def _limiter() -> anyio.CapacityLimiter:
    return anyio.CapacityLimiter(MAX_THREADS)


async def in_worker(call: Callable[[], T]) -> T:
    """Run `call` on an MCP worker thread (context variables, such as the request's backend, carried over)."""
    return await anyio.to_thread.run_sync(call, limiter=_limiter())
