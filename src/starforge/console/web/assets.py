"""The web console's own static files (stylesheet, script): served by the console, never from elsewhere.

Tier: shared (reads package files once). Only the names listed in `ASSETS` are served, so a request can never
name another file; each URL carries a digest of the file, so a browser may cache it for good.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ASSETS", "Asset", "asset", "asset_url"]

STATIC = Path(__file__).resolve().parent / "static"
ASSETS = {"app.css": "text/css; charset=utf-8", "app.js": "text/javascript; charset=utf-8",
          "jobs.js": "text/javascript; charset=utf-8", "log.js": "text/javascript; charset=utf-8",
          # charts: our script and the vendored uPlot it draws with (static/vendor/uplot/README.md)
          "charts.js": "text/javascript; charset=utf-8",
          "vendor/uplot/uPlot.iife.min.js": "text/javascript; charset=utf-8",
          "vendor/uplot/uPlot.min.css": "text/css; charset=utf-8"}


@dataclass(frozen=True)
class Asset:
    """One static file: its bytes, media type and content digest (the URL's version)."""

    body: bytes
    media_type: str
    digest: str


@functools.cache
def asset(name: str) -> Asset | None:
    """Return the static file `name` if it is one of `ASSETS`, else None."""
    media_type = ASSETS.get(name)
    if media_type is None:
        return None
    body = (STATIC / name).read_bytes()
    return Asset(body, media_type, hashlib.sha256(body).hexdigest()[:16])


def asset_url(name: str) -> str:
    """Return the versioned URL of the static file `name` (`/ui/static/<name>?v=<digest>`)."""
    found = asset(name)
    if found is None:
        raise KeyError(f"no static file {name!r}")
    return f"/ui/static/{name}?v={found.digest}"
