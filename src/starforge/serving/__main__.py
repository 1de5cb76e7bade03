"""`python -m starforge.serving`: run the service of this job until it is stopped (SIGTERM) or its server exits.

Order: pick a free loopback port, start the server (`plan`), bridge `<out>/.service/openai.sock` to it (`bridge`),
wait until its health path answers, write `ready.json` (`{server, model_id, pid, started_at}`), then wait. On
SIGTERM the server is stopped, the socket and `ready.json` removed, and the job exits 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from . import READY_FILE, SERVICE_DIR, SOCKET_FILE
from .bridge import bind_unix, serve_bridge
from .plan import ServerPlan, plan_from_env

_GRACE = 10.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answers(plan: ServerPlan) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{plan.port}{plan.health_path}", timeout=2) as response:
            return bool(200 <= response.status < 300)
    except OSError:
        return False


def _say(text: str) -> None:
    print(f"[starforge.serving] {text}", flush=True)


async def _run(plan: ServerPlan, folder: Path) -> int:
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    ready = folder / READY_FILE
    folder.mkdir(parents=True, exist_ok=True)
    ready.unlink(missing_ok=True)  # an attempt killed before it could clean up left one: this one is not ready yet
    _say(f"starting {plan.server}: {' '.join(plan.argv)}")
    proc = subprocess.Popen(list(plan.argv), env={**os.environ, **plan.env})
    bridge = await serve_bridge(bind_unix(folder / SOCKET_FILE), plan.port)
    try:
        while not stopping.is_set() and proc.poll() is None:
            if await asyncio.to_thread(_answers, plan):
                tmp = ready.with_suffix(".tmp")
                tmp.write_text(json.dumps({"server": plan.server, "model_id": plan.model_id, "pid": proc.pid,
                                           "started_at": time.time()}), encoding="utf-8")
                tmp.replace(ready)
                _say(f"ready: {plan.model_id} answers on {folder / SOCKET_FILE}")
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), 0.5)
        while not stopping.is_set() and proc.poll() is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), 1.0)
    finally:
        with contextlib.suppress(FileNotFoundError):
            ready.unlink()
        bridge.close()
        with contextlib.suppress(FileNotFoundError):
            (folder / SOCKET_FILE).unlink()
        if proc.poll() is None:
            proc.terminate()
            try:
                await asyncio.to_thread(proc.wait, _GRACE)
            except subprocess.TimeoutExpired:
                proc.kill()
                await asyncio.to_thread(proc.wait)
    if stopping.is_set():
        _say("stopped")
        return 0
    _say(f"the server exited with code {proc.returncode}")
    return proc.returncode or 1


def main() -> int:
    """Run the service described by the job's environment; return the exit code."""
    out = os.environ.get("FORGE_OUT_DIR", "")
    if not out:
        _say("FORGE_OUT_DIR is not set")
        return 2
    try:
        plan = plan_from_env(os.environ, port=_free_port(), bin_dir=str(Path(sys.executable).parent))
    except ValueError as exc:
        _say(str(exc))
        return 2
    return asyncio.run(_run(plan, Path(out) / SERVICE_DIR))


if __name__ == "__main__":
    sys.exit(main())
