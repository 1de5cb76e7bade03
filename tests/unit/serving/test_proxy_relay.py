"""The console's relay to a service socket, for real over a Unix socket: each chunk of a streamed answer is passed
on as the server writes it (the first arrives while the server still holds the rest); credentials, cookies and the
CSRF header never reach the service."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from starlette.requests import Request

from starforge.console.api.service_proxy import forward


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


async def _scenario(sock: Path) -> tuple[list[bytes], bytes, int]:
    release = asyncio.Event()
    head: list[bytes] = []

    async def service(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head.append(await reader.readuntil(b"\r\n\r\n"))
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        writer.write(_chunk(b"data: first\n\n"))
        await writer.drain()
        await release.wait()
        writer.write(_chunk(b"data: last\n\n") + b"0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_unix_server(service, path=str(sock))
    sent = [b'{"stream": true}']

    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": sent.pop() if sent else b"", "more_body": False}

    request = Request({"type": "http", "method": "POST", "path": "/api/services/r-x/v1/chat/completions",
                       "query_string": b"a=1", "headers": [(b"authorization", b"Bearer sfp_secret"),
                                                          (b"cookie", b"sf_session=s"), (b"x-csrf-token", b"t"),
                                                          (b"content-type", b"application/json")]}, receive)
    fd = os.open(sock, os.O_PATH | os.O_CLOEXEC)
    response = await asyncio.wait_for(forward(request, fd, "chat/completions"), 10)  # a buffering relay waits
    chunks = response.body_iterator.__aiter__()
    first = await asyncio.wait_for(chunks.__anext__(), 10)  # the server has not sent the rest yet
    release.set()
    rest = [chunk async for chunk in chunks]
    assert response.background is not None
    await response.background()
    server.close()
    return [bytes(c) for c in (first, *rest) if isinstance(c, bytes)], head[0], response.status_code


def test_the_relay_streams_each_chunk_and_drops_the_caller_s_credentials(tmp_path: Path) -> None:
    chunks, head, status = asyncio.run(_scenario(tmp_path / "s.sock"))
    assert status == 200 and b"".join(chunks) == b"data: first\n\ndata: last\n\n"
    assert chunks[0] == b"data: first\n\n"
    lowered = head.lower()
    assert lowered.startswith(b"post /v1/chat/completions?a=1 http/1.1")
    assert b"authorization" not in lowered and b"cookie" not in lowered and b"x-csrf-token" not in lowered
    assert b"sfp_secret" not in head
