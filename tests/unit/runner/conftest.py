"""Runner fixtures: a real ingest server on loopback and a real job working directory for `forge-launch`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from starforge.contract import dumps, parse_or_raise
from starforge.wire import PLAN_VERSION
from tests.specs import minimal_spec

TOKEN = "tok-secret"
RUN_ID = "r-0123456789"


@dataclass(frozen=True)
class Recorded:
    """One request the ingest server received."""

    path: str  # e.g. "lifecycle"
    headers: dict[str, str]  # lower-cased names
    body: Any
    status: int  # what the server answered


class IngestServer:
    """A ThreadingHTTPServer on 127.0.0.1 that records every POST and answers scripted statuses."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self._script: dict[str, list[int]] = {}
        self._always: dict[str, int] = {}
        self._replies: dict[str, Callable[[], dict[str, Any]]] = {}
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server naming)
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw
                name = self.path.removeprefix("/api/ingest/")
                status = server._status_for(name)
                with server._lock:
                    server.requests.append(
                        Recorded(name, {k.lower(): v for k, v in self.headers.items()}, body, status)
                    )
                payload = (
                    server._reply_for(name) if status < 400 else json.dumps({"detail": f"scripted {status}"}).encode()
                )
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def endpoint(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/api/ingest"

    def start(self) -> IngestServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def answer_next(self, path: str, *statuses: int) -> None:
        """Answer the next requests to `path` with `statuses`, in order, then 200 again."""
        with self._lock:
            self._script.setdefault(path, []).extend(statuses)

    def answer_always(self, path: str, status: int) -> None:
        """Answer every request to `path` with `status`."""
        with self._lock:
            self._always[path] = status

    def reply(self, path: str, answer: Callable[[], dict[str, Any]]) -> None:
        """Answer each successful request to `path` with the JSON object `answer()` returns at that moment."""
        with self._lock:
            self._replies[path] = answer

    def _reply_for(self, path: str) -> bytes:
        with self._lock:
            answer = self._replies.get(path)
        return json.dumps(answer()).encode() if answer is not None else b'{"ok": true}'

    def _status_for(self, path: str) -> int:
        with self._lock:
            queue = self._script.get(path)
            if queue:
                return queue.pop(0)
            return self._always.get(path, 200)

    def of(self, path: str) -> list[Recorded]:
        """Return the requests received on `path`, in arrival order."""
        with self._lock:
            return [r for r in self.requests if r.path == path]

    def events(self) -> list[str]:
        """Return the lifecycle events that were accepted (2xx), in order."""
        return [r.body["event"] for r in self.of("lifecycle") if r.status < 300]

    def points(self) -> list[dict[str, Any]]:
        """Return every metric point accepted, in arrival order."""
        return [p for r in self.of("metrics") if r.status < 300 for p in r.body["points"]]

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.02)
        return predicate()


@pytest.fixture(autouse=True)
def _no_proxy_for_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    # urllib honours HTTP_PROXY; loopback test traffic must never go through a proxy.
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.setenv(name, "127.0.0.1,localhost")


@pytest.fixture
def ingest() -> Iterator[IngestServer]:
    server = IngestServer().start()
    try:
        yield server
    finally:
        server.stop()


# -- a job working directory ---------------------------------------------------------------------------------

SPEC = parse_or_raise(minimal_spec())

IDENTITY = {
    "FORGE_RECIPE": SPEC.spec.recipe.name,
    "FORGE_RECIPE_VERSION": SPEC.spec.recipe.version,
    "FORGE_RECIPE_DIGEST": SPEC.spec.recipe.digest,
    "FORGE_FRAMEWORK": SPEC.spec.framework.kind,
    "FORGE_FRAMEWORK_VERSION": SPEC.spec.framework.version,
    "FORGE_RUNTIME_ID": SPEC.spec.framework.runtime_id,
}

# The job: records that it ran, what it saw, writes a checkpoint and a log, reports one metric, exits as told.
JOB = r"""
import json, os, sys, time
from pathlib import Path
Path("ran").write_text("yes")
out = Path(os.environ["FORGE_OUT_DIR"])
Path("seen.json").write_text(json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(),
                                         "plan_var": os.environ.get("PLAN_VAR"),
                                         "pgid_is_pid": os.getpgid(0) == os.getpid()}))
print("hello from the job")
print("a warning from the job", file=sys.stderr)
mode = os.environ.get("JOB_MODE", "normal")
if mode == "flood":
    line = b"x" * 1023 + b"\n"
    for _ in range(5 * 1024):
        sys.stdout.buffer.write(line)
        sys.stderr.buffer.write(b"\xff\xfe not utf-8 " + line)
    sys.stdout.flush()
if mode in ("hang", "stubborn"):
    import signal, subprocess
    if mode == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    Path("grandchild.pid").write_text(str(grandchild.pid))
    Path("ready").write_text("yes")
    time.sleep(60)
ckpt = out / "checkpoints" / "step_5"
ckpt.mkdir(parents=True, exist_ok=True)
(ckpt / "weights.npz").write_bytes(b"0" * 100)
(out / "logs").mkdir(exist_ok=True)
(out / "logs" / "train.log").write_text("done\n")
if os.environ.get("JOB_REPORT") == "1":
    from starforge.runner import report
    report.log({"train/loss": 0.5}, step=5)
    report.finish()
sys.exit(int(os.environ.get("JOB_EXIT", "0")))
"""


def launch_plan(**changes: Any) -> dict[str, Any]:
    """Return a valid launch plan for SPEC that runs job.py, with top-level keys replaced by `changes`."""
    plan: dict[str, Any] = {
        "apiVersion": PLAN_VERSION,
        "run_id": RUN_ID,
        "recipe": {
            "name": SPEC.spec.recipe.name,
            "version": SPEC.spec.recipe.version,
            "digest": SPEC.spec.recipe.digest,
        },
        "framework": {
            "kind": SPEC.spec.framework.kind,
            "version": SPEC.spec.framework.version,
            "runtime_id": SPEC.spec.framework.runtime_id,
        },
        "entrypoint": {"kind": "file", "value": "job.py"},
        "argv": ["{python}", "job.py", "--config", "experiments/my-grpo/config.yaml"],
        "config": {
            "mode": "dot-overrides",
            "path": "experiments/my-grpo/config.yaml",
            "overrides": [
                {"path": "grpo.max_num_steps", "value": 40},
                {"path": "grpo.val_at_start", "value": True},
                {"path": "policy.lr", "value": 1e-06},
                {"path": "policy.name", "value": "tiny model"},
            ],
        },
        "env": {"PLAN_VAR": "from-plan"},
        "artifacts": {
            "checkpoints": ["checkpoints/step_*"],
            "logs": ["logs"],
            "exports": ["hf_export"],
            "evaluations": ["eval/report.json"],
            "formats": {
                "checkpoint": "npz",
                "log": "text",
                "hf_export": "huggingface",
                "eval_report": "json",
            },
        },
    }
    plan.update(changes)
    return plan


@dataclass
class Job:
    """A job working directory plus the environment the executor would give `forge-launch`."""

    workdir: Path
    out_dir: Path
    env: dict[str, str]

    def ran(self) -> bool:
        return (self.workdir / "ran").exists()

    def seen(self) -> dict[str, Any]:
        return json.loads((self.workdir / "seen.json").read_text())

    def command(self) -> list[str]:
        return [sys.executable, "-m", "starforge.runner.launch", "--workdir", str(self.workdir)]

    def launch(self, timeout: float = 30) -> subprocess.CompletedProcess[bytes]:
        """Run forge-launch to completion and return its exit status and raw output."""
        return subprocess.run(self.command(), env=self.env, capture_output=True, timeout=timeout, check=False)


@pytest.fixture
def job(tmp_path: Path, ingest: IngestServer) -> Job:
    workdir = tmp_path / "work"
    (workdir / ".starforge").mkdir(parents=True)
    (workdir / ".starforge" / "jobspec.json").write_text(dumps(SPEC), encoding="utf-8")
    (workdir / ".starforge" / "launch.json").write_text(json.dumps(launch_plan()), encoding="utf-8")
    (workdir / "job.py").write_text(JOB, encoding="utf-8")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STARFORGE_", "FORGE_"))}
    env.update(IDENTITY)
    env.update(
        {
            "STARFORGE_ENABLED": "1",
            "STARFORGE_ENDPOINT": ingest.endpoint,
            "STARFORGE_RUN_ID": RUN_ID,
            "STARFORGE_TOKEN": TOKEN,
            "FORGE_OUT_DIR": str(out_dir),
            "PYTHONDONTWRITEBYTECODE": "1",
        }
    )
    return Job(workdir, out_dir, env)
