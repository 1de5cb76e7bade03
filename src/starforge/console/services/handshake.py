"""What a client reads before it submits (wire-protocol §5.1, §6): the console's version, the declaration packs to
sync, and the served recipe catalog.

Tier: use case (reads the runtime's served catalog; no database).
"""

from __future__ import annotations

from typing import Any

from ... import __version__
from .context import Runtime

__all__ = ["API_GENERATION", "extensions", "recipes", "version"]

API_GENERATION = "forge/v2"


def version() -> dict[str, str]:
    """Return the console version and the API generation the client checks."""
    return {"server": __version__, "api": API_GENERATION}


def extensions() -> dict[str, Any]:
    """Return the declaration packs to sync: this console publishes none, and `{"extensions": []}` is complete."""
    return {"extensions": []}


def recipes(rt: Runtime) -> dict[str, Any]:
    """Return the served catalog payload with its `catalog_digest`."""
    payload: dict[str, Any] = rt.catalog.payload()
    return payload
