"""Run the console with uvicorn on loopback by default, with header limits large enough for X-Forge-Meta."""

from __future__ import annotations

import sys

from .app import bootstrap_admin, build_runtime, create_app
from .settings import Settings

__all__ = ["serve"]

MAX_HEADER_BYTES = 1024 * 1024  # X-Forge-Meta is 1–3 KB usually; the protocol asks for at least 64 KB


def serve(settings: Settings) -> None:
    """Start the console in the foreground; print the one-time admin token on a fresh state directory."""
    import uvicorn

    rt = build_runtime(settings)
    token = bootstrap_admin(rt)
    if token:
        print(f"admin token (shown once): {token}", flush=True)
        print(f"  log in with: sf login --server {settings.base_url} --token {token}", file=sys.stderr, flush=True)
    if settings.image_allowlist is None:
        print("warning: no image_allowlist is configured, so any --image is admitted (development only); "
              "set image_allowlist in the --config file", file=sys.stderr, flush=True)
    app = create_app(settings, rt)
    print(f"StarForge console listening on http://{settings.host}:{settings.port} "
          f"(state {settings.state_dir}, {'SQLite' if rt.db.is_sqlite else 'PostgreSQL'})", file=sys.stderr, flush=True)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level="warning",
        access_log=False,
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
        timeout_keep_alive=5,
        lifespan="on",
    )
    uvicorn.Server(config).run()
