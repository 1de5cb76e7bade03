"""A webhook receiver for tests: a small HTTP server on 127.0.0.1 in the test process that records every POST per
path, and answers 500 a chosen number of times first."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Receiver"]


class Receiver:
    """A webhook receiver on 127.0.0.1: records every request per path; a path in `failing` answers 500 that many
    times first."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.failing: dict[str, int] = {}
        self.changed = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver.changed:
                    receiver.requests.append((self.path, dict(self.headers.items()), body))
                    left = receiver.failing.get(self.path, 0)
                    receiver.failing[self.path] = max(0, left - 1)
                    receiver.changed.notify_all()
                self.send_response(500 if left else 204)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def at(self, path: str) -> list[tuple[dict[str, str], bytes]]:
        with self.changed:
            return [(h, b) for p, h, b in self.requests if p == path]

    def wait_for(self, path: str, count: int, timeout: float = 60) -> list[tuple[dict[str, str], bytes]]:
        deadline = time.monotonic() + timeout
        with self.changed:
            while len([r for r in self.requests if r[0] == path]) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{path}: {len(self.at(path))} of {count} requests arrived")
                self.changed.wait(left)
        return self.at(path)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
