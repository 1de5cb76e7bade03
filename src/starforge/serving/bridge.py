"""A byte relay from a Unix socket to a TCP port of the loopback: every connection to the socket gets its own
connection to the server, and bytes move each way as they arrive (a streamed answer is never held back).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from pathlib import Path

__all__ = ["bind_unix", "serve_bridge"]

_CHUNK = 64 * 1024


def bind_unix(path: Path) -> socket.socket:
    """Return a listening Unix socket at `path` (mode 0600; any older one there replaced), bound through its folder
    so a path longer than sun_path allows still works."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    here = os.getcwd()
    os.chdir(path.parent)
    try:
        old = os.umask(0o177)
        try:
            sock.bind(path.name)
        finally:
            os.umask(old)
    finally:
        os.chdir(here)
    sock.listen(64)
    sock.setblocking(False)
    return sock


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            chunk = await reader.read(_CHUNK)
            if not chunk:
                break
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        with contextlib.suppress(Exception):
            if writer.can_write_eof():
                writer.write_eof()


async def _relay(port: int, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
    try:
        server_reader, server_writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        client_writer.close()
        return
    try:
        await asyncio.gather(_pipe(client_reader, server_writer), _pipe(server_reader, client_writer))
    finally:
        for w in (server_writer, client_writer):
            with contextlib.suppress(Exception):
                w.close()


async def serve_bridge(sock: socket.socket, port: int) -> asyncio.Server:
    """Start relaying the listening Unix socket `sock` to 127.0.0.1:`port`; return the asyncio server."""
    return await asyncio.start_unix_server(lambda r, w: _relay(port, r, w), sock=sock)
