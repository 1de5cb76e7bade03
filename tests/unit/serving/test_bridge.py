"""The job side's socket bridge, for real: bytes cross it each way as they come (a streamed answer's first chunk
arrives while the server still holds the rest), and a socket path longer than sun_path allows still binds."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from starforge.serving.bridge import bind_unix, serve_bridge


async def _scenario(folder: Path) -> tuple[bytes, bytes, bytes]:
    release = asyncio.Event()
    got_request = asyncio.Event()
    seen: list[bytes] = []

    async def server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await reader.readexactly(5))
        got_request.set()
        writer.write(b"data: first\n\n")
        await writer.drain()
        await release.wait()  # the rest comes only once the client has the first chunk
        writer.write(b"data: last\n\n")
        await writer.drain()
        writer.close()

    tcp = await asyncio.start_server(server, "127.0.0.1", 0)
    port = tcp.sockets[0].getsockname()[1]
    path = folder / ("x" * 90) / "openai.sock"  # well past the 108 bytes of sun_path
    bridge = await serve_bridge(bind_unix(path), port)
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    here = Path.cwd()
    os.chdir(path.parent)
    try:
        reader, writer = await asyncio.open_unix_connection(path.name)
    finally:
        os.chdir(here)
    writer.write(b"hello")
    await writer.drain()
    await asyncio.wait_for(got_request.wait(), 10)
    first = await asyncio.wait_for(reader.readuntil(b"\n\n"), 10)  # before the server may send the rest
    release.set()
    last = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    bridge.close()
    tcp.close()
    return seen[0], first, last


def test_the_bridge_relays_each_chunk_as_it_comes(tmp_path: Path) -> None:
    request, first, last = asyncio.run(_scenario(tmp_path))
    assert (request, first, last) == (b"hello", b"data: first\n\n", b"data: last\n\n")
    assert len(str(tmp_path / ("x" * 90) / "openai.sock").encode()) > 108  # longer than sun_path holds
