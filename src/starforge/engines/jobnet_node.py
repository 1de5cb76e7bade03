"""The job network on a cluster node: `python -m starforge.engines.jobnet_node [options] -- bwrap …`.

A Slurm job's batch script runs this helper around bubblewrap on each node. It gives the job its own network
(`jobnet`: none, or egress with this node's addresses, link-local space and the console's host closed) and its
channel: a Unix socket in a node-local folder mounted at `wire.CHANNEL_DIR`, relaying `POST /api/ingest/*` (and
nothing else) to the console's URL. It waits for the sandbox and exits with its status. Standard library only.

    --network none|egress    what the job reaches (default egress)
    --console URL            the console's ingest endpoint as this node reaches it (STARFORGE_ENDPOINT's value)
    --image                  the sandbox's root is a job image: its resolver is bound over the image's /etc/resolv.conf
    --fabric DIR --rank R --ranks N [--fabric-host H]
                             one rank of a multi-node job: the job fabric (`fabric`) joins the ranks' namespaces;
                             DIR is the run's fabric folder (every node sees it, the job never does), H the address
                             other nodes reach this one at (default: the one it uses toward the console)
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import shutil
import socketserver
import subprocess
import sys
import tempfile
import threading
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler

from ..wire import CHANNEL_DIR, CHANNEL_SOCKET, INGEST_ROOT
from .fabric import Fabric, check_clear, default_host
from .jobnet import (
    EGRESS,
    NETWORK_MODES,
    JobNetwork,
    NetworkStart,
    NetworkUnavailable,
    bind_unix,
    host_addresses,
)

__all__ = ["FabricPlace", "IngestRelay", "main", "run"]

MAX_BODY = 16 * 1024 * 1024  # the console's own limit on one ingest call
_FORWARDED = ("Content-Type", "X-StarForge-Token")
_TIMEOUT = 30.0


class IngestRelay(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """A Unix-socket HTTP server that forwards `POST <ingest root>/…` to the console and refuses everything else."""

    daemon_threads = True

    def __init__(self, socket_path: str, console: str) -> None:
        parsed = urllib.parse.urlsplit(console)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"the console's endpoint {console!r} is not an http(s) URL")
        self.scheme, self.host, self.port = parsed.scheme, parsed.hostname, parsed.port
        self.base = parsed.path.rstrip("/").removesuffix(INGEST_ROOT)  # a console published under a prefix
        super().__init__(socket_path, _Handler, bind_and_activate=False)
        self.socket.close()
        self.socket = bind_unix(socket_path)

    def forward(self, path: str, headers: dict[str, str], body: bytes) -> tuple[int, str, bytes]:
        """Return the console's status, content type and body for one ingest call."""
        kind = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
        connection = kind(self.host, self.port, timeout=_TIMEOUT)
        try:
            connection.request("POST", self.base + path, body=body, headers=headers)
            response = connection.getresponse()
            return response.status, response.getheader("Content-Type", "application/json"), response.read()
        finally:
            connection.close()


class _Handler(BaseHTTPRequestHandler):
    server: IngestRelay

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        path = urllib.parse.urlsplit(self.path).path
        if not path.startswith(f"{INGEST_ROOT}/") or ".." in path:
            self._answer(404, {"detail": "only the console's ingest endpoints are reachable from a job"})
            return
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            self._answer(411, {"detail": "an ingest call needs a Content-Length"})
            return
        if not 0 <= length <= MAX_BODY:
            self._answer(413, {"detail": f"an ingest call holds at most {MAX_BODY} bytes"})
            return
        body = self.rfile.read(length)
        headers = {name: value for name in _FORWARDED if (value := self.headers.get(name)) is not None}
        try:
            status, kind, answer = self.server.forward(self.path, headers, body)
        except (OSError, http.client.HTTPException) as exc:
            self._answer(502, {"detail": f"the console cannot be reached from this node: {exc}"})
            return
        self._send(status, kind, answer)

    def do_GET(self) -> None:  # noqa: N802
        self._answer(404, {"detail": "only the console's ingest endpoints are reachable from a job"})

    do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = do_GET  # noqa: N815

    def _answer(self, status: int, body: dict[str, str]) -> None:
        self._send(status, "application/json", json.dumps(body).encode())

    def _send(self, status: int, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base class's name)
        pass  # the job's log is its own; the relay says nothing per call


def _with_options(argv: list[str], options: list[str]) -> list[str]:
    """Return bubblewrap's argv with `options` placed after its own (before the `--` that starts the command)."""
    cut = argv.index("--") if "--" in argv else len(argv)
    return [*argv[:cut], *options, *argv[cut:]]


def _inherited(argv: Sequence[str]) -> tuple[int, ...]:
    """Return the descriptors bubblewrap's `--args N` reads from (opened by the batch script)."""
    return tuple(int(argv[i + 1]) for i, word in enumerate(argv[:-1]) if word == "--args" and argv[i + 1].isdigit())


@dataclass(frozen=True)
class FabricPlace:
    """Where this rank sits in its job's fabric: the run's fabric folder, its rank, the ranks, its reachable host."""

    folder: str
    rank: int
    ranks: int
    host: str = ""


def run(network: str, console: str, bwrap: list[str], *, image: bool = False,
        fabric: FabricPlace | None = None) -> int:
    """Start `bwrap` with its network, channel and (`fabric`) its job fabric, relay its ingest; return its status."""
    folder = tempfile.mkdtemp(prefix="starforge-channel-")
    os.chmod(folder, 0o755)  # a job of a per-job uid enters it inside its sandbox
    relay: IngestRelay | None = None
    link: Fabric | None = None
    try:
        if console:  # without an ingest endpoint the job reports nothing: its channel stays empty
            relay = IngestRelay(os.path.join(folder, CHANNEL_SOCKET), console)
            threading.Thread(target=relay.serve_forever, name="ingest-relay", daemon=True).start()
        host = urllib.parse.urlsplit(console).hostname or ""
        policy = JobNetwork.find(network, denied=host_addresses(host))
        if fabric is not None:  # before the job's sandbox exists: a rank waits here for rank 0's hub
            check_clear(policy.routes())
            link = Fabric.start(fabric.folder, fabric.rank, fabric.ranks, fabric.host or default_host(host))
        start = policy.prepare(job_holds_exit=False)
        argv = _with_options(bwrap, [*start.options(image=image), "--ro-bind", folder, CHANNEL_DIR])
        try:
            # the batch script's process group: Slurm's signals (scancel, the time limit) reach the job as before
            child = subprocess.Popen(argv, pass_fds=(*_inherited(bwrap), *start.child_fds))
        except OSError:
            start.close()
            raise
        stack = None
        try:
            stack = _attach(start, child, link)
            code = child.wait()
        finally:
            start.release_stack()
            start.close()
            if stack is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    stack.wait(timeout=10)
        return code if code >= 0 else 128 - code
    except (NetworkUnavailable, OSError, ValueError) as exc:
        fix = getattr(exc, "fix", "")
        print(f"starforge: the job's network cannot be set up on this node: {exc}" + (f" ({fix})" if fix else ""),
              file=sys.stderr, flush=True)
        return 1
    finally:
        if link is not None:
            link.close()
        if relay is not None:
            relay.shutdown()
            relay.server_close()
        shutil.rmtree(folder, ignore_errors=True)


def _attach(start: NetworkStart, child: subprocess.Popen[bytes],
            link: Fabric | None) -> subprocess.Popen[bytes] | None:
    start.started()
    try:
        return start.attach(link.attach if link is not None else None)
    except BaseException:
        child.wait()  # its waiting child was killed: bubblewrap ends with it
        raise


def main(argv: Sequence[str] | None = None) -> int:
    """Parse `[options] -- bwrap …` and run it."""
    words = list(sys.argv[1:] if argv is None else argv)
    if "--" not in words:
        print(__doc__, file=sys.stderr)
        return 2
    cut = words.index("--")
    parser = argparse.ArgumentParser(prog="jobnet_node")
    parser.add_argument("--network", choices=NETWORK_MODES, default=EGRESS)
    parser.add_argument("--console", default="")
    parser.add_argument("--image", action="store_true")
    parser.add_argument("--fabric", default="")
    parser.add_argument("--rank", type=int, default=0)
    parser.add_argument("--ranks", type=int, default=1)
    parser.add_argument("--fabric-host", default="")
    options = parser.parse_args(words[:cut])
    place = FabricPlace(options.fabric, options.rank, options.ranks, options.fabric_host) if options.fabric else None
    return run(options.network, options.console, words[cut + 1:], image=options.image, fabric=place)


if __name__ == "__main__":
    sys.exit(main())
