"""One rank of a gang job on its Ray node: the Ray actor the gang launcher pins to one bundle of its placement group.

`Rank.start` runs the rank's command on the actor's node in a session of its own, its output appended to the run's
log file, the run token read there from the run's 0600 token file (never sent through Ray); a sandboxed rank opens
bubblewrap's options as descriptor 9 and ignores SIGTERM up to the job (`env --default-signal` gives it back), as
the single-node entrypoint does. `signal` reaches every process of the rank, as Ray's own stop reaches every
descendant of an entrypoint; `wait` returns its exit status. The
command dies with the actor's process (PR_SET_PDEATHSIG), so a rank Ray kills leaves nothing behind. Standard
library only (and ray, in the actor): the launcher sends this module's code by value, so a node needs no StarForge.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import threading
from collections.abc import Mapping, Sequence

__all__ = ["Rank"]

_PR_SET_PDEATHSIG = 1
_SANDBOXED = 'trap "" TERM; exec "$@" 9<"$0"'  # $0: bubblewrap's options file; "$@": the node command


def _die_with_parent() -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class Rank:
    """The process of one rank on its node (created by the gang launcher with its bundle's resources)."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._started = threading.Event()
        self._ended = threading.Event()
        self._code: int | None = None
        self._error = ""

    def where(self) -> dict[str, str]:
        """Return this rank's node: its Ray node id, its address and its host name."""
        import ray  # the actor's own ray

        return {"node_id": ray.get_runtime_context().get_node_id(), "ip": ray.util.get_node_ip_address(),  # type: ignore[no-untyped-call]
                "host": socket.gethostname()}

    def free_port(self) -> int:
        """Return a TCP port free on this node now (the rendezvous port of an unsandboxed rank 0)."""
        with socket.socket() as probe:
            probe.bind(("", 0))
            return int(probe.getsockname()[1])

    def start(self, argv: Sequence[str], env: Mapping[str, str], *, cwd: str, log_file: str, token_file: str,
              token_variable: str, args_file: str) -> int:
        """Start the rank's command; return its pid, or raise RuntimeError saying why it could not start."""
        thread = threading.Thread(target=self._run, name="starforge-rank", daemon=True,
                                  args=(list(argv), dict(env), cwd, log_file, token_file, token_variable, args_file))
        thread.start()  # the process's parent thread lives as long as the process: its death signal stays armed
        self._started.wait()
        if self._process is None:
            raise RuntimeError(self._error or "the rank did not start")
        return self._process.pid

    def _run(self, argv: list[str], env: dict[str, str], cwd: str, log_file: str, token_file: str,
             token_variable: str, args_file: str) -> None:
        try:
            if token_file:
                with open(token_file, encoding="utf-8") as handle:
                    env[token_variable] = handle.read().strip()
            if args_file:
                argv = ["/bin/sh", "-c", _SANDBOXED, args_file, *argv]
            # appended to as Ray's user: never through a link the job planted where its log was
            fd = os.open(log_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
            with os.fdopen(fd, "ab") as log:
                self._process = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=log,
                                                 stderr=subprocess.STDOUT, start_new_session=True,
                                                 preexec_fn=_die_with_parent)  # noqa: PLW1509 - only a prctl
        except OSError as exc:
            self._error = f"cannot start the rank's command: {exc}"
            self._code = 1
            self._ended.set()
            return
        finally:
            self._started.set()
        code = self._process.wait()
        self._code = code if code >= 0 else 128 - code
        self._ended.set()

    def wait(self) -> int:
        """Return the rank's exit status once its command has ended (128 + N for signal N)."""
        self._ended.wait()
        return self._code if self._code is not None else 1

    def signal(self, signum: int) -> None:
        """Send `signum` to every process of the rank: its command and all its descendants (bubblewrap starts the
        job in a session of its own, where the command's process group does not reach)."""
        if self._process is None or self._process.poll() is not None:
            return
        for pid in (self._process.pid, *_descendants(self._process.pid)):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signum)


def _descendants(root: int) -> list[int]:
    """Return every descendant of process `root` (read from /proc), parents before their children."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as handle:
                stat = handle.read()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])  # the field after the state, past the command's name
        children.setdefault(parent, []).append(int(entry))
    out: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out
