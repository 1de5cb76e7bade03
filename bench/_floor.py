"""The floor of the HTTP benchmarks: an empty FastAPI POST app served by uvicorn with the console's own settings.

`python bench/_floor.py PORT` serves `POST /` (reads the body, answers `{"ok": true}`) on 127.0.0.1:PORT with the
console's HTTP protocol (httptools, headers bounded as the console bounds them), the standard event loop, no access
log and the same keep-alive; `floor(...)` runs the same `hey` load against it as against the console, so each figure
can be read beside what this machine's FastAPI, uvicorn and hey reach with no work at all.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fastapi import FastAPI, Request

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._load import Load, hey  # noqa: E402


def app() -> FastAPI:
    """Return the floor application: one POST route that reads its body and answers a constant."""
    floor = FastAPI()

    @floor.post("/")
    async def empty(request: Request) -> dict[str, bool]:
        await request.body()
        return {"ok": True}

    return floor


@contextmanager
def floor_server(workers: int = 1) -> Iterator[str]:
    """Start the floor app (`workers` processes on one port) and yield its URL; stop it on exit."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([sys.executable, __file__, str(port), str(workers)])
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError("the floor app exited early") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/"
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def floor_loads(*, clients: tuple[int, ...], seconds: float, body: Path, headers: dict[str, str],
                workers: int = 1) -> dict[int, Load]:
    """Return what `hey` measures against the floor app (served by `workers` processes) at each of `clients`, with the
    body and headers a benchmark sends the console."""
    with floor_server(workers) as url:
        hey(url, clients=8, seconds=1, body=body, headers=headers)  # warm up, as the benchmarks do
        loads = {c: hey(url, clients=c, seconds=seconds, body=body, headers=headers) for c in clients}
    wrong = {c: load.statuses for c, load in loads.items() if load.ok != load.total}
    if wrong:  # a floor that refuses is no floor
        raise RuntimeError(f"the floor app answered other than 2xx: {wrong}")
    return loads


def main(port: int, workers: int) -> None:
    import uvicorn

    from starforge.console.http_protocol import http_protocol
    from starforge.console.server import MAX_HEADER_BYTES

    # several workers are started by uvicorn from the protocol's name: the console's bounded-headers protocol is a
    # class made at run time, which uvicorn cannot hand to a worker process
    protocol = http_protocol(MAX_HEADER_BYTES) if workers == 1 else "httptools"
    uvicorn.run("bench._floor:app", factory=True, host="127.0.0.1", port=port, workers=workers, log_level="warning",
                access_log=False, http=protocol, h11_max_incomplete_event_size=MAX_HEADER_BYTES, loop="asyncio",
                timeout_keep_alive=5)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 1)
