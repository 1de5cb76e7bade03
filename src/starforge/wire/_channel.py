"""The job channel: where a network-isolated job finds its console, and how its ingest endpoint names that socket.

A job in its own network namespace cannot reach the console over TCP. The engine mounts a folder at `CHANNEL_DIR`
holding a Unix socket (`CHANNEL_SOCKET`) that answers the console's ingest endpoints and nothing else, and gives the
job `STARFORGE_ENDPOINT=http+unix://<socket, percent-encoded><ingest root>`; `forge-launch` turns it into a plain
`http://127.0.0.1:<port>/…` relay inside the job's namespace, so every HTTP client of the job keeps working.
"""

from __future__ import annotations

import urllib.parse

from ._ingest import INGEST_ROOT

__all__ = ["CHANNEL_DIR", "CHANNEL_SCHEME", "CHANNEL_SOCKET", "channel_endpoint", "unix_endpoint"]

CHANNEL_DIR = "/forge/console"
CHANNEL_SOCKET = "ingest.sock"
CHANNEL_SCHEME = "http+unix"


def channel_endpoint(socket_path: str = f"{CHANNEL_DIR}/{CHANNEL_SOCKET}") -> str:
    """Return the ingest endpoint of a job that reaches its console through the Unix socket `socket_path`."""
    return f"{CHANNEL_SCHEME}://{urllib.parse.quote(socket_path, safe='')}{INGEST_ROOT}"


def unix_endpoint(endpoint: str) -> tuple[str, str] | None:
    """Return (socket path, URL path) of an `http+unix://` endpoint, or None for any other endpoint."""
    scheme, _, rest = endpoint.partition("://")
    if scheme != CHANNEL_SCHEME or not rest:
        return None
    host, slash, path = rest.partition("/")
    socket_path = urllib.parse.unquote(host)
    if not socket_path.startswith("/"):
        return None
    return socket_path, slash + path
