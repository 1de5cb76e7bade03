"""The parent of a console's worker processes: fork N workers that inherit the listening sockets, wait until each
has built its console (or report the first one's start-up error), then supervise them — a worker that dies is
forked again, SIGTERM or SIGINT stops every worker cleanly (each finishes its lifespan: the leader stops its
scheduler and lets the lead go).

Each worker asks the kernel to send it SIGTERM if the parent dies (Linux's parent-death signal), so no worker keeps
the port after its parent is gone.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import pickle
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from types import FrameType

__all__ = ["Supervisor", "WorkerFailed"]

log = logging.getLogger("starforge.console")

STOP_GRACE = 30.0  # seconds a worker has to finish its lifespan after SIGTERM
RESTART_PAUSE = 1.0  # a worker that dies within this long of its start waits this long before it is forked again
_PR_SET_PDEATHSIG = 1


class WorkerFailed(RuntimeError):
    """Raised by `Supervisor.start` when a worker could not build its console (its error's words)."""


class Supervisor:
    """Fork `count` processes running `target` (which calls `ready()` once it can serve, then serves until it is
    stopped) and keep that many running."""

    def __init__(self, target: Callable[[], None], count: int) -> None:
        self.target = target
        self.count = count
        self.children: dict[int, float] = {}  # pid -> when it was forked
        self._ready_fd: int | None = None  # in a worker: where it says it is ready
        self._stopping = threading.Event()

    def ready(self) -> None:
        """Tell the parent this worker has built its console (a no-op outside a worker's start)."""
        fd, self._ready_fd = self._ready_fd, None
        if fd is not None:
            with contextlib.suppress(OSError):  # a restarted worker's parent does not listen
                os.write(fd, b"+")
            os.close(fd)

    def start(self) -> None:
        """Fork every worker and return once each is ready; raise ExecutorError or WorkerFailed (every worker
        stopped) when one could not start."""
        pipes = [self._fork() for _ in range(self.count)]
        failures = [said for said in map(_read_all, pipes) if not said.startswith(b"+")]
        if not failures:
            return
        self._stop_children()
        raise _heard(failures[0])

    def supervise(self) -> None:
        """Keep `count` workers running until SIGTERM or SIGINT, then stop them all and return."""
        def stop(_signum: int, _frame: FrameType | None) -> None:
            self._stopping.set()

        previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            while not self._stopping.is_set():
                self._reap_and_restart()
                self._stopping.wait(0.2)
        finally:
            self._stop_children()
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _reap_and_restart(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                pid = 0
            if pid == 0:
                break
            forked = self.children.pop(pid, None)
            if forked is None:
                continue
            log.warning("worker %d exited (%s); starting another", pid, _how(status))
            print(f"worker {pid} exited ({_how(status)}); starting another", file=sys.stderr, flush=True)
            if time.monotonic() - forked < RESTART_PAUSE:
                self._stopping.wait(RESTART_PAUSE)
            if not self._stopping.is_set():
                with contextlib.suppress(OSError):
                    os.close(self._fork())  # a restarted worker's readiness is not waited for

    def _fork(self) -> int:
        """Fork one worker; return the read end of its readiness pipe."""
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the worker
            os.close(read)
            self.children.clear()
            self._ready_fd = write
            code = 0
            try:
                _die_with_parent()
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                self.target()
            except BaseException as exc:  # the worker exits with status 1; a start-up error is the parent's to report
                code = 1
                said = _said(exc) if self._ready_fd is not None else b""
                if not said.startswith((b"P", b"M")):  # what the parent cannot re-raise is explained here
                    traceback.print_exc()
                if self._ready_fd is not None:
                    with contextlib.suppress(OSError):
                        os.write(self._ready_fd, said)
            finally:
                sys.stderr.flush()
                os._exit(code)
        os.close(write)
        self.children[pid] = time.monotonic()
        return read

    def _stop_children(self) -> None:
        for pid in list(self.children):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE
        while self.children and time.monotonic() < deadline:
            for pid in list(self.children):
                with contextlib.suppress(ChildProcessError):
                    done, _status = os.waitpid(pid, os.WNOHANG)
                    if done == 0:
                        continue
                self.children.pop(pid, None)
            time.sleep(0.05)
        for pid in list(self.children):
            with contextlib.suppress(ProcessLookupError, ChildProcessError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            self.children.pop(pid, None)


def _said(exc: BaseException) -> bytes:
    """Return a worker's start-up error as its parent re-raises it: the exception itself (an engine that cannot be
    reached, an extra that is not installed: what `sf console up` explains), else its words."""
    with contextlib.suppress(Exception):
        raw = pickle.dumps(exc)
        pickle.loads(raw)  # noqa: S301 - our own exception, made by this process, read back by its parent
        return b"P" + raw
    if isinstance(exc, ModuleNotFoundError) and exc.name:  # `sf` names the extra that holds the module
        return b"M" + exc.name.encode()
    return b"T" + f"{type(exc).__name__}: {exc}".encode()


def _heard(said: bytes) -> BaseException:
    if said.startswith(b"P"):
        with contextlib.suppress(Exception):
            exc = pickle.loads(said[1:])  # noqa: S301 - written by a worker this process forked
            if isinstance(exc, BaseException):
                return exc
    if said.startswith(b"M"):
        module = said[1:].decode("utf-8", "replace")
        return ModuleNotFoundError(f"No module named {module!r}", name=module)
    words = said[1:].decode("utf-8", "replace") if said else "it exited before it was ready"
    return WorkerFailed(f"a worker process could not start: {words}")


def _read_all(fd: int) -> bytes:
    chunks = []
    with contextlib.suppress(OSError):
        while chunk := os.read(fd, 4096):
            chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


def _how(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit code {os.waitstatus_to_exitcode(status)}"


def _die_with_parent() -> None:
    """Ask Linux to SIGTERM this process when its parent dies (nothing elsewhere)."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
