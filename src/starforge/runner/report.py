"""The metrics SDK for job code: metrics, hyperparameters and artifacts reach the console and never fail the job."""

from __future__ import annotations

import atexit
import contextlib
import json
import math
import operator
import os
import sys
import threading
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import IO, Any, SupportsFloat, SupportsIndex

from starforge.wire import ARTIFACT_KINDS, PATH_ARTIFACT, PATH_HPARAMS, PATH_METRICS

from ._artifacts import size_of
from ._ingest import (
    INGEST_ENABLED,
    IngestClient,
    IngestError,
    IngestRefused,
    client_from_environ,
    utc_timestamp,
)

__all__ = ["Run", "artifact", "current", "finish", "hparams", "init", "log"]

_PREFIX = "[starforge.report]"
_FLUSH_INTERVAL = 1.0
_BATCH_SIZE = 500
_MAX_BUFFERED = 100_000
_METRICS_FILE = "metrics.jsonl"


class Run:
    """One job's reporter: buffers metric points for a background sender and appends them to `metrics.jsonl`.

    `client` is None when ingest is disabled. `out_dir` (usually `FORGE_OUT_DIR`) receives `metrics.jsonl`.
    Points are sent by a daemon thread every `flush_interval` seconds, as soon as `batch_size` points wait, and by
    `flush()` / `finish()`; requests carry at most `batch_size` points.
    """

    def __init__(
        self,
        client: IngestClient | None,
        *,
        out_dir: str | os.PathLike[str] | None = None,
        flush_interval: float = _FLUSH_INTERVAL,
        batch_size: int = _BATCH_SIZE,
    ) -> None:
        self.client = client
        self.metrics_path = Path(out_dir) / _METRICS_FILE if out_dir else None
        self._interval = flush_interval
        self._batch_size = max(1, batch_size)
        self._lock = threading.Lock()  # guards the buffers, the step counter and the metrics file
        self._send_lock = threading.Lock()  # one drain at a time, so batches leave in order
        self._wake = threading.Event()
        self._points: deque[dict[str, Any]] = deque()
        self._ops: deque[tuple[str, dict[str, Any]]] = deque()
        self._thread: threading.Thread | None = None
        self._sender_pid = 0
        self._file: IO[str] | None = None
        self._next_step = 0
        self._closed = False
        self._muted = False  # the console refused our token: stop sending
        self._failing = False  # inside a streak of failed sends (warned once per streak)
        self._warned: set[str] = set()
        atexit.register(self.finish)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> Run:
        """Return a run configured from `STARFORGE_ENABLED/ENDPOINT/RUN_ID/TOKEN` and `FORGE_OUT_DIR`."""
        env = os.environ if environ is None else environ
        client, missing = client_from_environ(env)
        run = cls(client, out_dir=env.get("FORGE_OUT_DIR") or None)
        if missing:
            run._warn_once(
                "config", f"{INGEST_ENABLED}=1 but {', '.join(missing)} unset; nothing will be sent"
            )
        return run

    @property
    def enabled(self) -> bool:
        """Return True when this run sends to the console."""
        return self.client is not None

    # -- the calls job code makes ----------------------------------------------------------------------------

    def log(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        """Record one value per key at `step` (default: the previous step plus one, starting at 0)."""
        if self._refuse_after_close("log"):
            return
        ts = utc_timestamp()
        with self._lock:
            if step is None:
                at = self._next_step
            else:
                checked = self._step(step)
                if checked is None:
                    return
                at = checked
            self._next_step = at + 1
            points = [p for key, raw in metrics.items() if (p := self._point(key, raw, at, ts)) is not None]
            self._append_to_file(points)
            if self.client is None or self._muted or not points:
                return
            self._points.extend(points)
            overflow = len(self._points) - _MAX_BUFFERED
            if overflow > 0:
                for _ in range(overflow):
                    self._points.popleft()
                self._warn_once("overflow", f"more than {_MAX_BUFFERED} points waiting; dropping the oldest")
            full = len(self._points) >= self._batch_size
        self._start_sender()
        if full:
            self._wake.set()

    def hparams(self, params: Mapping[str, object]) -> None:
        """Send the run's hyperparameters (values that are not JSON become text)."""
        if self._refuse_after_close("hparams"):
            return
        self._queue(PATH_HPARAMS, {"params": {str(k): _jsonable(v) for k, v in params.items()}})

    def artifact(
        self,
        kind: str,
        path: str | os.PathLike[str],
        *,
        step: int | None = None,
        format: str = "",
        size_bytes: int | None = None,
        metrics: Mapping[str, float] | None = None,
    ) -> None:
        """Register an artifact; a local `path` is made absolute and, when `size_bytes` is None, measured."""
        if self._refuse_after_close("artifact"):
            return
        if kind not in ARTIFACT_KINDS:
            self._warn_once(
                f"kind:{kind}", f"unknown artifact kind {kind!r} ignored; use one of {sorted(ARTIFACT_KINDS)}"
            )
            return
        location = os.fspath(path)
        if "://" not in location:
            location = os.path.abspath(location)
            if size_bytes is None:
                size_bytes = size_of(location)
        body: dict[str, Any] = {"kind": kind, "path": location, "format": format}
        if step is not None:
            body["step"] = step
        if size_bytes is not None:
            body["size_bytes"] = size_bytes
        if metrics:
            body["metrics"] = {str(k): v for k, raw in metrics.items() if (v := _finite(raw)) is not None}
        self._queue(PATH_ARTIFACT, body)

    def flush(self) -> None:
        """Send everything buffered now, in the caller's thread."""
        self._drain()

    def finish(self) -> None:
        """Flush, stop the background sender and close `metrics.jsonl`; later calls on this run are ignored."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        atexit.unregister(self.finish)
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self._drain()
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def __enter__(self) -> Run:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.finish()

    # -- buffering -------------------------------------------------------------------------------------------

    def _point(self, key: object, raw: object, step: int, ts: str) -> dict[str, Any] | None:
        if not isinstance(key, str) or not key:
            self._warn_once("key", f"metric key {key!r} ignored: keys are non-empty strings")
            return None
        value = _number(raw)
        if value is None:
            self._warn_once("type", f"{key}={raw!r} at step {step} dropped: not a number; later ones too")
            return None
        if not math.isfinite(value):
            self._warn_once("finite", f"{key}={value} at step {step} dropped: not finite; later ones too")
            return None
        return {"key": key, "step": step, "value": value, "ts": ts}

    def _step(self, step: object) -> int | None:
        if isinstance(step, float) and step.is_integer():
            return int(step)
        if isinstance(step, SupportsIndex):  # int, numpy integers
            return operator.index(step)
        self._warn_once("step", f"step {step!r} is not an integer; that log call was ignored")
        return None

    def _append_to_file(self, points: list[dict[str, Any]]) -> None:
        if self.metrics_path is None or not points:
            return
        try:
            if self._file is None:
                self.metrics_path.parent.mkdir(parents=True, exist_ok=True)
                self._file = self.metrics_path.open("a", encoding="utf-8")
            self._file.write("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in points))
            self._file.flush()
        except OSError as exc:
            self._warn_once(
                "file", f"cannot write {self.metrics_path}: {exc}; metrics are no longer written there"
            )
            self.metrics_path = None

    def _queue(self, path: str, body: dict[str, Any]) -> None:
        if self.client is None or self._muted:
            return
        with self._lock:
            self._ops.append((path, body))
        self._start_sender()
        self._wake.set()

    def _refuse_after_close(self, call: str) -> bool:
        if self._closed:
            self._warn_once("closed", f"report.{call}() after finish() is ignored")
        return self._closed

    # -- sending ---------------------------------------------------------------------------------------------

    def _start_sender(self) -> None:
        with self._lock:
            if self._closed or (self._thread is not None and self._sender_pid == os.getpid()):
                return
            # First use, or we are a forked copy of the job (threads do not survive fork): start our own sender.
            self._sender_pid = os.getpid()
            self._thread = threading.Thread(target=self._loop, name="starforge-report", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while not self._closed:
            self._wake.wait(self._interval)
            self._wake.clear()
            self._drain()

    def _drain(self) -> None:
        if self.client is None:
            return
        with self._send_lock:
            with self._lock:
                ops = list(self._ops)
                self._ops.clear()
                points = list(self._points)
                self._points.clear()
            sends = list(ops)
            for start in range(0, len(points), self._batch_size):
                sends.append((PATH_METRICS, {"points": points[start : start + self._batch_size]}))
            for path, body in sends:
                if self._muted or not self._send(path, body):
                    return  # the console is unreachable or refused the token: drop the rest of this round

    def _send(self, path: str, body: dict[str, Any]) -> bool:
        """Post one request; return False when the rest of the round should be dropped."""
        assert self.client is not None
        try:
            self.client.post(path, body)
        except IngestRefused as exc:
            if exc.status in (401, 403):
                self._muted = True
                self._warn(f"ingest refused the run token ({exc}); nothing more will be sent")
                return False
            self._failed(f"ingest refused a {path} post ({exc}); it was dropped")
            return True
        except IngestError as exc:
            self._failed(f"ingest unavailable ({exc}); buffered data was dropped, training goes on")
            return False
        except Exception as exc:  # a bug must not kill the training job either
            self._failed(f"cannot send {path}: {type(exc).__name__}: {exc}")
            return True
        if self._failing:
            self._failing = False
            self._warn("ingest reachable again")
        return True

    def _failed(self, message: str) -> None:
        if not self._failing:
            self._failing = True
            self._warn(message)

    # -- warnings --------------------------------------------------------------------------------------------

    def _warn_once(self, topic: str, message: str) -> None:
        if topic not in self._warned:
            self._warned.add(topic)
            self._warn(message)

    @staticmethod
    def _warn(message: str) -> None:
        with contextlib.suppress(OSError, ValueError):  # stderr may be closed at interpreter exit
            print(f"{_PREFIX} warning: {message}", file=sys.stderr, flush=True)


def _number(raw: object) -> float | None:
    if not isinstance(raw, SupportsFloat):  # floats, ints, numpy scalars, 0-d tensors; never text
        return None
    try:
        return float(raw)
    except (TypeError, ValueError, OverflowError):
        return None


def _finite(raw: object) -> float | None:
    value = _number(raw)
    return value if value is not None and math.isfinite(value) else None


def _jsonable(value: object) -> Any:
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return str(value)


# -- the default run used by the module-level functions ------------------------------------------------------

_default: Run | None = None
_default_lock = threading.Lock()


def init(*, environ: Mapping[str, str] | None = None) -> Run:
    """Return a new default run configured from `environ` (default: the process environment); finish the old one."""
    global _default
    run = Run.from_environ(environ)
    with _default_lock:
        previous, _default = _default, run
    if previous is not None:
        previous.finish()
    return run


def current() -> Run:
    """Return the default run, creating it from the process environment on first use."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Run.from_environ()
        return _default


def log(metrics: Mapping[str, float], step: int | None = None) -> None:
    """Record metrics on the default run (see `Run.log`)."""
    current().log(metrics, step)


def hparams(params: Mapping[str, object]) -> None:
    """Send hyperparameters on the default run (see `Run.hparams`)."""
    current().hparams(params)


def artifact(
    kind: str,
    path: str | os.PathLike[str],
    *,
    step: int | None = None,
    format: str = "",
    size_bytes: int | None = None,
    metrics: Mapping[str, float] | None = None,
) -> None:
    """Register an artifact on the default run (see `Run.artifact`)."""
    current().artifact(kind, path, step=step, format=format, size_bytes=size_bytes, metrics=metrics)


def finish() -> None:
    """Flush and close the default run; a later call starts a new one from the environment."""
    global _default
    with _default_lock:
        run, _default = _default, None
    if run is not None:
        run.finish()
