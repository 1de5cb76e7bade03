"""The console's end of the job channel: its ingest on a Unix socket that sandboxed jobs see at `wire.CHANNEL_DIR`.

Jobs in their own network namespace cannot reach the console's port; the local executor mounts `<state>/channel`
(this socket's folder) into each job instead. A connection on this socket reaches `POST /api/ingest/*` and nothing
else: `JobChannelGuard` answers every other request with a 404 before the application sees it. The folder is
mounted, not the socket itself, so a restarted console's new socket reaches the jobs that outlived the old one.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

from starlette.types import ASGIApp, Receive, Scope, Send

from ..engines.jobnet import bind_unix
from ..wire import CHANNEL_SOCKET, INGEST_ROOT

__all__ = ["CHANNEL_FOLDER", "JobChannelGuard", "bind_channel", "channel_folder"]

CHANNEL_FOLDER = "channel"
_REFUSAL = json.dumps({"detail": "only the console's ingest endpoints are reachable from a job"}).encode()


def channel_folder(state_dir: Path) -> Path:
    """Return the folder holding the channel socket (mounted into every network-isolated job)."""
    return state_dir / CHANNEL_FOLDER


def bind_channel(state_dir: Path) -> socket.socket:
    """Return a listening Unix socket at `<state>/channel/ingest.sock` that every job uid may connect to."""
    folder = channel_folder(state_dir)
    folder.mkdir(mode=0o755, exist_ok=True)
    folder.chmod(0o755)  # jobs of per-job uids traverse it inside their sandbox (the state folder stays 0700)
    return bind_unix(str(folder / CHANNEL_SOCKET))


class JobChannelGuard:
    """ASGI middleware: on a Unix-socket connection, pass only `POST /api/ingest/…`; answer anything else 404."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and _on_unix_socket(scope) and not _ingest(scope):
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            await send({"type": "http.response.start", "status": 404,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(_REFUSAL)).encode())]})
            await send({"type": "http.response.body", "body": _REFUSAL})
            return
        await self.app(scope, receive, send)


def _on_unix_socket(scope: Scope) -> bool:
    server = scope.get("server")
    return server is None or server[1] is None  # uvicorn names a Unix socket's server (path, None)


def _ingest(scope: Scope) -> bool:
    path = str(scope.get("path", ""))
    return scope.get("method") == "POST" and path.startswith(f"{INGEST_ROOT}/") and ".." not in path
