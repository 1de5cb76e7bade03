"""forge-launch's end of the job channel: a loopback relay inside the job's own network namespace to the console's
Unix socket (`wire.CHANNEL_DIR`), so the job and every HTTP client it runs reach their ingest by a plain URL.

`open_channel(environ)` returns the environment unchanged unless `STARFORGE_ENDPOINT` names a Unix socket
(`http+unix://…`); then it listens on 127.0.0.1 (an ephemeral port of the job's own loopback), relays each
connection byte for byte to the socket, and returns the environment with `STARFORGE_ENDPOINT=http://127.0.0.1:<port>/…`.
What the socket answers is the console's business: its ingest, and nothing else.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Mapping

from starforge.contract import INGEST_ENDPOINT_VARIABLE
from starforge.wire import unix_endpoint

__all__ = ["ChannelUnavailable", "open_channel"]

_CHUNK = 65536


class ChannelUnavailable(OSError):
    """Raised when the relay cannot listen on the job's loopback."""


def open_channel(environ: Mapping[str, str]) -> dict[str, str]:
    """Return `environ` with a Unix-socket ingest endpoint replaced by a loopback relay to it (started here)."""
    env = dict(environ)
    parsed = unix_endpoint(env.get(INGEST_ENDPOINT_VARIABLE, ""))
    if parsed is None:
        return env
    socket_path, path = parsed
    try:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
    except OSError as exc:
        raise ChannelUnavailable(f"cannot listen on the job's loopback for its console channel: {exc}") from exc
    port = listener.getsockname()[1]
    threading.Thread(target=_serve, args=(listener, socket_path), name="channel-relay", daemon=True).start()
    env[INGEST_ENDPOINT_VARIABLE] = f"http://127.0.0.1:{port}{path}"
    return env


def _serve(listener: socket.socket, socket_path: str) -> None:
    while True:
        try:
            client, _address = listener.accept()
        except OSError:
            return
        threading.Thread(target=_relay, args=(client, socket_path), name="channel-conn", daemon=True).start()


def _relay(client: socket.socket, socket_path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(socket_path)
    except OSError:
        upstream.close()
        client.close()  # the caller sees a refused request and retries as it would for a console restarting
        return
    back = threading.Thread(target=_pump, args=(upstream, client), name="channel-back", daemon=True)
    back.start()
    _pump(client, upstream)
    back.join()
    for end in (client, upstream):
        end.close()


def _pump(source: socket.socket, target: socket.socket) -> None:
    """Copy `source` to `target` until `source` ends, then end `target`'s writing side."""
    with contextlib.suppress(OSError):
        while True:
            data = source.recv(_CHUNK)
            if not data:
                break
            target.sendall(data)
    with contextlib.suppress(OSError):
        target.shutdown(socket.SHUT_WR)
