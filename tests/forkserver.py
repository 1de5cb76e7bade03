"""A fork server for the tests' `sf` processes: each one a test worker starts forks from one pre-imported process.

A console process spends ~1.5 s of CPU importing FastAPI, SQLAlchemy, Alembic, uvicorn and StarForge before it
serves, and an `sf` command ~0.4 s importing Typer, Rich and httpx; the suite starts well over a hundred consoles
and hundreds of commands on a 2-core machine. The server imports those once per test worker, and each process is
then `os.fork()` of it running the very same `starforge.cli.main.main(argv)` in a new session, with the caller's
environment, working folder and standard streams (passed over a Unix socket). It is still a real, separate process
(a console serving over loopback HTTP, a command with its exit code); only its imports are inherited. Tests of
`sf`'s own start-up (what it imports, how fast) run the real executable instead. The server has no threads (a fork
copies only the forking thread), reaps its children and reports each exit code on the request's connection, and
exits when its test worker does (its stdin closes). `STARFORGE_TEST_FORKSERVER=0` turns it off.

A `Program` names what a server runs: the interpreter, the modules it imports first, and the entry it calls. Ours
is `SF`; the official client's suites (tests/compat) run the official `sf` the same way, from its own venv's
interpreter and entry point, still a black box: only its start-up imports are shared.
"""

from __future__ import annotations

import array
import atexit
import contextlib
import importlib
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO, Any, NamedTuple

__all__ = ["SF", "ForkedProcess", "Program", "enabled", "run", "spawn"]

# what `sf console up` imports before it serves (PYTHONPROFILEIMPORTTIME on a console start); a name that does not
# import here is skipped, and anything missed is imported by the child as usual
WARM = (
    "starforge.cli.main", "starforge.cli.cmd_console", "starforge.console.server", "starforge.console.app",
    "starforge.console.background", "starforge.console.scheduler", "starforge.engines.routing",
    "starforge.engines.local", "starforge.engines.slurm.executor",
    "starforge.engines.ray.submission", "uvicorn.server", "uvicorn.protocols.http.httptools_impl",
    "uvicorn.lifespan.on", "uvicorn.loops.asyncio", "alembic.command", "alembic.runtime.migration",
    "alembic.runtime.environment", "alembic.ddl.sqlite", "alembic.ddl.postgresql", "sqlalchemy.dialects.sqlite",
    "sqlalchemy.dialects.postgresql.psycopg", "psycopg", "multipart", "httpx", "rich.console", "rich.table",
    "starforge.client", "starforge.lab", "starforge.cli.cmd_job", "starforge.cli.cmd_submit", "starforge.cli.cmd_login",
)


class Program(NamedTuple):
    """What a fork server runs: its interpreter, the modules it imports first, and its entry: `module:callable`,
    called with the argument list (`…:main(argv)`), or with none once `sys.argv` is set (`…:app()`)."""

    python: str
    warm: tuple[str, ...]
    entry: str


SF = Program(sys.executable, WARM, "starforge.cli.main:main(argv)")


def enabled() -> bool:
    """Whether test consoles start from the fork server (on unless `STARFORGE_TEST_FORKSERVER=0`)."""
    return os.environ.get("STARFORGE_TEST_FORKSERVER", "1") != "0"


class ForkedProcess:
    """The handle of a forked process, shaped like the parts of `subprocess.Popen` the tests use."""

    def __init__(self, pid: int, args: list[str], stdout: IO[str] | None, conn: socket.socket) -> None:
        self.pid = pid
        self.args = args
        self.stdout = stdout
        self.returncode: int | None = None
        self._conn = conn  # the server writes the exit code here once it has reaped the process
        self._answer = b""

    def _read(self, timeout: float | None) -> None:
        self._conn.settimeout(timeout)
        try:
            while b"\n" not in self._answer:
                more = self._conn.recv(256)
                if not more:  # the server is gone: the process is gone with its session or soon will be
                    self.returncode = -1
                    break
                self._answer += more
        except (TimeoutError, BlockingIOError):
            return
        if self.returncode is None:
            self.returncode = int(json.loads(self._answer.split(b"\n", 1)[0])["exit"])
        self._conn.close()

    def poll(self) -> int | None:
        """None while the process runs, else its exit code (negative: the signal that ended it)."""
        if self.returncode is None:
            self._read(0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the exit code (`subprocess.TimeoutExpired` after `timeout` seconds)."""
        if self.returncode is None:
            self._read(timeout)
        if self.returncode is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return self.returncode


class _Server:
    """This worker's fork server of one program: started on first use, stopped when the worker exits."""

    def __init__(self, program: Program, env: dict[str, str] | None = None) -> None:
        self.folder = tempfile.mkdtemp(prefix="sf-fork-")
        self.address = os.path.join(self.folder, "server.sock")
        python, warm, entry = program
        self.proc = subprocess.Popen([python, "-u", __file__, self.address, entry, *warm], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, cwd="/",
                                     env={**(env if env is not None else os.environ), "PYTHONUNBUFFERED": "1"})
        assert self.proc.stdout is not None
        ready = self.proc.stdout.readline()
        if ready.strip() != b"ready":
            raise RuntimeError(f"the test fork server did not start: {ready!r}")
        atexit.register(self.close)

    def close(self) -> None:
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        with contextlib.suppress(OSError):
            os.unlink(self.address)
            os.rmdir(self.folder)

    def fork(self, argv: list[str], env: dict[str, str], cwd: str, fds: tuple[int, int, int]) -> tuple[int, socket.socket]:
        payload = json.dumps({"argv": argv, "env": env, "cwd": cwd}).encode()
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(self.address)
        conn.sendmsg([len(payload).to_bytes(4, "big") + payload],
                     [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
        answer = b""
        while not answer.endswith(b"\n"):
            more = conn.recv(1)
            if not more:
                conn.close()
                raise RuntimeError("the test fork server closed the connection")
            answer += more
        return int(json.loads(answer)["pid"]), conn


_servers: dict[Program, _Server] = {}


def _fork(argv: list[str], env: dict[str, str], cwd: str | None, fds: tuple[int, int, int],
          program: Program = SF) -> tuple[int, socket.socket]:
    server = _servers.get(program)
    if server is None or server.proc.poll() is not None:
        # the official client's server starts with that client's own environment (its imports may read it)
        server = _servers[program] = _Server(program, None if program is SF else env)
    return server.fork(argv, env, cwd or os.getcwd(), fds)


def spawn(argv: list[str], *, env: dict[str, str], stderr: IO[Any]) -> ForkedProcess:
    """Start `sf <argv>` (a console): stdin /dev/null, stdout a pipe (`.stdout`), stderr `stderr`."""
    read_end, write_end = os.pipe()
    try:
        with open(os.devnull, "rb") as devnull:
            pid, conn = _fork(argv, env, None, (devnull.fileno(), write_end, stderr.fileno()))
    finally:
        os.close(write_end)
    return ForkedProcess(pid, ["sf", *argv], os.fdopen(read_end, "r"), conn)


def run(argv: list[str], *, env: dict[str, str], cwd: str | os.PathLike[str] | None = None, input: str | None = None,
        timeout: float | None = None, program: Program = SF, exe: str = "") -> subprocess.CompletedProcess[str]:
    """Run `sf <argv>` (or `program`) to its end like `subprocess.run(..., capture_output=True, text=True)` (stdin
    `input`, else /dev/null); on `timeout` the process group is killed and `subprocess.TimeoutExpired` raised. With
    the server turned off, a plain process does the same (`exe`, the program's own executable, else ours)."""
    if not enabled():
        command = [exe] if exe else [sys.executable, "-c", "from starforge.cli.main import run; run()"]
        return subprocess.run([*command, *argv], env=env, cwd=cwd, input=input,
                              stdin=None if input is not None else subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=timeout)
    with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        if input is not None:
            stdin.write(input.encode())
            stdin.seek(0)
        pid, conn = _fork(argv, env, None if cwd is None else os.fspath(cwd), (stdin.fileno(), out.fileno(), err.fileno()),
                          program)
        proc = ForkedProcess(pid, ["sf", *argv], None, conn)
        try:
            code = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            proc.wait()
            raise
        texts = []
        for stream in (out, err):
            stream.seek(0)
            texts.append(stream.read().decode().replace("\r\n", "\n").replace("\r", "\n"))
    return subprocess.CompletedProcess(["sf", *argv], code, texts[0], texts[1])


# --- the server process -------------------------------------------------------------------------------------------

def _receive(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    fds = array.array("i")
    message, ancillary, _flags, _addr = conn.recvmsg(1 << 16, socket.CMSG_SPACE(3 * fds.itemsize))
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    size = int.from_bytes(message[:4], "big")
    body = message[4:]
    while len(body) < size:
        more = conn.recv(size - len(body))
        if not more:
            raise ConnectionError("the request was cut")
        body += more
    return json.loads(body), list(fds)


def _child(request: dict[str, Any], fds: list[int], closing: list[int], entry: str) -> None:
    """Become `sf <argv>` (`entry`'s program): never returns."""
    code = 1
    try:
        for fd in closing:
            os.close(fd)
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        tempfile.tempdir = None
        sys.argv = ["sf", *request["argv"]]
        module, _, call = entry.partition(":")
        name, _, arguments = call.partition("(")
        function = getattr(importlib.import_module(module), name)
        result = function(list(request["argv"])) if arguments.startswith("argv") else function()
        code = result if isinstance(result, int) else 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - the child reports anything on its own stderr, then exits
        import traceback

        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _serve(address: str, entry: str, warm: list[str]) -> None:
    for name in warm:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # wakes the loop (through the wakeup pipe) to reap
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    listener.listen(16)
    selector = selectors.EpollSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(sys.stdin, selectors.EVENT_READ)
    selector.register(wake_read, selectors.EVENT_READ)
    waiting: dict[int, socket.socket] = {}  # pid -> the connection that gets its exit code
    print("ready", flush=True)
    while True:
        for key, _ in selector.select():
            if key.fileobj is sys.stdin:
                if not os.read(sys.stdin.fileno(), 4096):
                    return  # the test worker is gone
            elif key.fileobj == wake_read:
                with contextlib.suppress(BlockingIOError):
                    os.read(wake_read, 4096)
                _reap(waiting)
            else:
                conn, _ = listener.accept()
                request, fds = _receive(conn)
                pid = os.fork()
                if pid == 0:
                    _child(request, fds, [listener.fileno(), conn.fileno(), sys.stdin.fileno(), selector.fileno(),
                                          wake_read, wake_write, *(c.fileno() for c in waiting.values())], entry)
                for fd in fds:
                    os.close(fd)
                conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
                waiting[pid] = conn
                _reap(waiting)


def _reap(waiting: dict[int, socket.socket]) -> None:
    while waiting:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = waiting.pop(pid, None)
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.sendall(json.dumps({"exit": os.waitstatus_to_exitcode(status)}).encode() + b"\n")
            conn.close()


if __name__ == "__main__":
    _serve(Path(sys.argv[1]).as_posix(), sys.argv[2], sys.argv[3:])
