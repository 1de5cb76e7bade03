"""A service's socket opened beneath its run folder without following links, as a descriptor the proxy connects through.

The job owns its output folder: it could swap `.service` or `openai.sock` for a link to another socket of the
machine (another account's service, a database's socket), which the console, connecting as itself, would follow.
So every component from the run folder down is opened relative to the one before with `O_NOFOLLOW`, the socket
itself as an `O_PATH` descriptor checked to be a socket, and the proxy connects to `/proc/self/fd/<n>`: the inode
it checked, never a path resolved a second time.

Tier: query (files only; never touches the database).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ....serving import SERVICE_DIR, SOCKET_FILE
from ..errors import NotFound, Unavailable
from ..jobs.artifact_archive import open_beneath

__all__ = ["connect_path", "open_socket"]

_SOCKET = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC


def open_socket(run_dir: str) -> int:
    """Return an `O_PATH` descriptor of the service socket of `run_dir` (the caller closes it); raise Unavailable
    when it is not there yet, is not a socket, or a link stands anywhere on the way to it."""
    why = "the service has no socket yet (or a link stands in its place)"
    if not run_dir:
        raise Unavailable(why)
    try:
        folder = open_beneath(Path(run_dir), f"out/{SERVICE_DIR}")
    except NotFound as exc:
        raise Unavailable(why) from exc
    try:
        fd = os.open(SOCKET_FILE, _SOCKET, dir_fd=folder)
    except OSError as exc:
        raise Unavailable(why) from exc
    finally:
        os.close(folder)
    if not stat.S_ISSOCK(os.fstat(fd).st_mode):
        os.close(fd)
        raise Unavailable(why)
    return fd


def connect_path(fd: int) -> str:
    """Return the path that connects to the socket open at `fd` in this process (short, whatever the run folder)."""
    return f"/proc/self/fd/{fd}"
