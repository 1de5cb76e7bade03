"""The child process: started in its own process group, output copied line by line, stopped on SIGTERM/SIGINT."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import FrameType, TracebackType
from typing import IO, Any, BinaryIO

__all__ = ["Child", "ChildExit", "StopSignals", "binary_stream"]

_READ_LIMIT = 64 * 1024  # longest piece copied at once when a line has no newline yet
_PUMP_DRAIN = 2.0  # seconds to wait for the output after the child exited


@dataclass(frozen=True, slots=True)
class ChildExit:
    """How the child ended: its return code (negative: killed by that signal) and the stop signal we received."""

    returncode: int
    stop_signal: int | None = None

    @property
    def exit_code(self) -> int | None:
        """Return the child's exit code, or None when a signal killed it."""
        return self.returncode if self.returncode >= 0 else None

    @property
    def killed_by(self) -> int | None:
        """Return the signal number that killed the child, or None when it exited."""
        return -self.returncode if self.returncode < 0 else None

    @property
    def ok(self) -> bool:
        """Return True when the child exited 0 on its own (no stop was requested)."""
        return self.returncode == 0 and self.stop_signal is None

    @property
    def status(self) -> int:
        """Return the shell-style status: the exit code, or 128 + signal when killed or stopped."""
        if self.returncode < 0:
            return 128 - self.returncode
        if self.returncode == 0 and self.stop_signal is not None:
            return 128 + self.stop_signal
        return self.returncode


class StopSignals:
    """While active, SIGTERM and SIGINT record a stop request and forward SIGTERM to the attached child's group.

    Handlers are only installed from the main thread (Python's rule); elsewhere the object stays inert.
    """

    def __init__(self, grace: float, signals: Sequence[int] = (signal.SIGTERM, signal.SIGINT)) -> None:
        self.grace = grace
        self.received: int | None = None
        self.deadline: float | None = None
        self._signals = tuple(signals)
        self._previous: dict[int, Any] = {}
        self._child: Child | None = None

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for sig in self._signals:
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous if previous is not None else signal.SIG_DFL)
        self._previous.clear()

    def attach(self, child: Child) -> None:
        """Forward stops to `child` from now on (at once when a stop already arrived)."""
        self._child = child
        if self.received is not None:
            child.signal_group(signal.SIGTERM)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        # Runs in the main thread between bytecodes: record and forward only, no output (a reentrant write on the
        # same buffered stream would raise).
        if self.received is None:
            self.received = signum
            self.deadline = time.monotonic() + self.grace
        if self._child is not None:
            self._child.signal_group(signal.SIGTERM)


class Child:
    """A running child in a new session (so its process group id is its pid), with its output being copied."""

    def __init__(self, proc: subprocess.Popen[bytes], pumps: list[threading.Thread]) -> None:
        self._proc = proc
        self._pumps = pumps

    @classmethod
    def start(
        cls,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str | os.PathLike[str],
        stdout: BinaryIO,
        stderr: BinaryIO,
    ) -> Child:
        """Start `argv` and copy its stdout/stderr line by line to `stdout`/`stderr`; raise OSError or ValueError."""
        proc = subprocess.Popen(
            list(argv),
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        assert proc.stdout is not None and proc.stderr is not None
        pumps = [
            threading.Thread(
                target=_pump, args=(proc.stdout, stdout), name="forge-launch-stdout", daemon=True
            ),
            threading.Thread(
                target=_pump, args=(proc.stderr, stderr), name="forge-launch-stderr", daemon=True
            ),
        ]
        for pump in pumps:
            pump.start()
        return cls(proc, pumps)

    @property
    def pid(self) -> int:
        """Return the child's pid, which is also its process group id."""
        return self._proc.pid

    def signal_group(self, sig: int) -> None:
        """Send `sig` to the child's whole process group; a group that is already gone is not an error."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, sig)

    def wait(self, stop: StopSignals, *, on_stop: Callable[[str], None] | None = None) -> ChildExit:
        """Wait for the child; after a stop request and `stop.grace` seconds, SIGKILL its group. Drain the output.

        When the child exited but something it left behind in its group still holds the output pipes, that group
        is killed after a short drain period so the launcher never hangs.
        """
        notice = on_stop or (lambda message: None)
        noticed = killed = False
        while True:
            try:
                returncode = self._proc.wait(timeout=0.05)
            except subprocess.TimeoutExpired:
                returncode = None
            if stop.received is not None and not noticed:
                noticed = True
                notice(
                    f"received {signal.Signals(stop.received).name}; sent SIGTERM to the job's process group"
                    + ("" if returncode is not None else f", SIGKILL in {stop.grace:g} s")
                )
            if returncode is not None:
                break
            if stop.deadline is not None and not killed and time.monotonic() >= stop.deadline:
                killed = True
                notice("grace period over; sending SIGKILL to the job's process group")
                self.signal_group(signal.SIGKILL)
        if not self._join_pumps(_PUMP_DRAIN):
            notice("processes left by the job still hold its output; killing its process group")
            self.signal_group(signal.SIGKILL)
            self._join_pumps(_PUMP_DRAIN)
        return ChildExit(returncode, stop.received)

    def _join_pumps(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        for pump in self._pumps:
            pump.join(max(0.0, deadline - time.monotonic()))
        return not any(pump.is_alive() for pump in self._pumps)


def _pump(source: IO[bytes], sink: BinaryIO) -> None:
    """Copy `source` to `sink` line by line, flushing each line; keep draining when the sink breaks."""
    writable = True
    with source:
        while True:
            chunk = source.readline(_READ_LIMIT)
            if not chunk:
                return
            if writable:
                try:
                    sink.write(chunk)
                    sink.flush()
                except (OSError, ValueError):
                    writable = False  # our own stdout is gone; never block the child on a full pipe


def binary_stream(stream: IO[str]) -> BinaryIO:
    """Return the binary layer of a text stream, or an adapter that decodes bytes into it (UTF-8, replacing)."""
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:
        return buffer  # type: ignore[no-any-return]
    return _TextSink(stream)  # type: ignore[return-value]


class _TextSink:
    """A minimal binary writer over a text stream (when sys.stdout was replaced by a text-only object)."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def write(self, data: bytes) -> int:
        with self._lock:
            self._stream.write(data.decode("utf-8", errors="replace"))
        return len(data)

    def flush(self) -> None:
        self._stream.flush()
