"""A real console process on loopback for integration tests (SQLite; PostgreSQL where the store is the point)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import yaml

from tests import forkserver
from tests.conftest import require_service
from tests.official import cache_dir

if TYPE_CHECKING:
    from starforge.console.store import Database

SF = str(Path(sys.executable).with_name("sf"))
RUNTIME_CACHE = os.environ.get("STARFORGE_TEST_RUNTIMES") or str(cache_dir() / "runtimes")  # outside every clone
BACKENDS = ("sqlite", "postgres")
SQLITE = ("sqlite",)
# Every httpx client otherwise builds its own TLS context from the CA bundle (about 20 ms of CPU each, thousands of
# times a run); consoles answer plain HTTP on loopback, so one shared default context serves them all.
TLS = ssl.create_default_context()


def free_port() -> int:
    """Return a free TCP port on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _postgres_database(admin_url: str) -> str:
    import psycopg

    name = "sf_" + uuid.uuid4().hex[:12]
    plain = admin_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(plain, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return admin_url.rsplit("/", 1)[0] + "/" + name


class ConsoleProcess:
    """A `sf console up` process: `.url`, `.admin_token`, `.state_dir`, `.token_for(user, role)`, stop/start."""

    def __init__(self, state_dir: Path, *, database_url: str = "", config: dict[str, Any] | None = None,
                 extra_args: tuple[str, ...] = (), prefix: tuple[str, ...] = (),
                 env: dict[str, str] | None = None, workers: int | None = None) -> None:
        self.state_dir = state_dir
        # worker processes (`--workers`): STARFORGE_TEST_WORKERS runs every suite's consoles with that many
        self.workers = workers or int(os.environ.get("STARFORGE_TEST_WORKERS") or 1)
        self.prefix = prefix  # e.g. a wrapper that runs the console as another user
        self.env = env or {}
        self.database_url = database_url
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.config_file = state_dir.parent / f"{state_dir.name}-config.yaml"
        config = dict(config or {})
        # the suites' h200 jobs wait as `pending` on CPU-only consoles; test_honest_queue.py covers the default, refuse
        config.setdefault("admission", {"unplaceable": "queue"})
        # the suites' stand-in image names (nvcr.io/team/trainer:1.0) exist nowhere: only the image suites pull
        config.setdefault("images", {"run": False})
        if shutil.which("bwrap") is None and "executors" not in config:
            # without bubblewrap the console refuses to start sandboxed; the sandbox suites skip loudly (CI fails)
            config["executors"] = {"local": {"sandbox": "off"}}
        self.sandboxed = config.get("executors", {}).get("local", {}).get("sandbox", "on") not in ("off", False)
        self.config_file.write_text(yaml.safe_dump(config), encoding="utf-8")
        self.extra_args = extra_args
        self.admin_token = ""
        self.proc: subprocess.Popen[str] | forkserver.ForkedProcess | None = None
        self.log_file = state_dir.parent / f"{state_dir.name}-console.log"
        self._db: Database | None = None

    def _db_args(self) -> list[str]:
        args = ["--state-dir", str(self.state_dir), "--config", str(self.config_file)]
        if self.database_url:
            args += ["--database-url", self.database_url]
        return args

    def start(self) -> None:
        """Start the process and wait until `/api/version` answers (the admin token is read on first start)."""
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **self.env}
        with self.log_file.open("a") as log:
            # its own process group: stop() reaches a wrapper's child too (a prefix such as bwrap does not forward
            # signals); the jobs run in process groups of their own, so a SIGKILL here spares them as before
            argv = ["console", "up", "--host", "127.0.0.1", "--port", str(self.port), *self._db_args(),
                    "--workers", str(self.workers), *self.extra_args]
            if not self.prefix and forkserver.enabled():  # the same process, its imports inherited (tests/forkserver.py)
                self.proc = forkserver.spawn(argv, env=env, stderr=log)
            else:
                self.proc = subprocess.Popen([*self.prefix, SF, *argv], stdout=subprocess.PIPE, stderr=log, text=True,
                                             env=env, start_new_session=True)
        try:
            self._wait_until_up()
        except BaseException:
            self.stop(kill=True)
            raise
        if not self.admin_token:
            self.admin_token = self.token_for("admin", "admin")

    def _wait_until_up(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        deadline = time.monotonic() + 60
        if not self.admin_token:
            line = self.proc.stdout.readline()
            if "admin token" in line:
                self.admin_token = line.rsplit(" ", 1)[-1].strip()
        with httpx.Client(base_url=self.url, timeout=1, verify=TLS) as http:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"console exited early:\n{self.log_file.read_text()[-4000:]}")
                with contextlib.suppress(httpx.HTTPError):
                    if http.get("/api/version").status_code == 200:
                        return
                time.sleep(0.05)
        raise RuntimeError(f"console did not start:\n{self.log_file.read_text()[-4000:]}")

    def stop(self, *, kill: bool = False) -> None:
        """Stop the process (SIGTERM, or SIGKILL with `kill=True`), and any wrapper around it."""
        if self._db is not None:
            self._db.dispose()
            self._db = None
        if self.proc is None:
            return
        proc, self.proc = self.proc, None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL if kill else signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()

    def database(self) -> Database:
        """The console's own database, opened in this process once (beside the running console: SQLite in WAL)."""
        if self._db is None:
            from starforge.console.settings import load_settings
            from starforge.console.store import Database

            settings = load_settings(self.config_file, state_dir=self.state_dir, database_url=self.database_url or None)
            self._db = Database(settings.db_url, changes=settings.accounts_changes)
        return self._db

    def token_for(self, user: str, role: str = "operator") -> str:
        """Return a new API token for `user` (created with `role` if missing).

        This is what `sf console token create` does (`operator.create_token`), called in this process on the
        console's database rather than in a new `sf` process per token. A console run as another user (`prefix`)
        owns its SQLite files, so its tokens are made by the command, as that user (`cli_token_for`).
        """
        if self.prefix:
            return self.cli_token_for(user, role)
        from starforge.console.operator import create_token

        return create_token(self.database(), user, role, create=True)

    def cli_token_for(self, user: str, role: str = "operator") -> str:
        """Return a new API token for `user` made by the real `sf console token create` command."""
        return self.sf("token", "create", "--user", user, "--role", role, "--create", check=True).stdout.strip()

    def add_data(self, kind: str, ref: str, path: Path, *, public: bool = False) -> None:
        """Register a corpus or dataset version at `path`: `sf console <kind> add`, in this process."""
        from starforge.console.operator import register_data

        register_data(self.database(), kind, ref, str(path), public=public)

    def sf(self, *args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
        """Run an operator command (`sf console …`) against this console's state."""
        argv = ["console", *args, *self._db_args()]
        env = {**os.environ, **self.env}
        if self.prefix or not forkserver.enabled():
            return subprocess.run([*self.prefix, SF, *argv], capture_output=True, text=True, check=check, env=env)
        done = forkserver.run(argv, env=env)
        if check:
            done.check_returncode()
        return done

    def client(self, token: str) -> httpx.Client:
        """Return an HTTP client for the API with a bearer token."""
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {token}"}, timeout=60, verify=TLS)


@pytest.fixture(scope="session")
def _pg_admin_url(request: pytest.FixtureRequest) -> str:
    return require_service("PostgreSQL", "STARFORGE_TEST_POSTGRES_URL", "run `scripts/services.sh up`")


def make_console(tmp_path_factory: pytest.TempPathFactory, backend: str, *, config: dict[str, Any] | None = None,
                 extra_args: tuple[str, ...] = (), workers: int | None = None) -> ConsoleProcess:
    """Create (not start) a console on a fresh state directory and database of `backend`."""
    state = tmp_path_factory.mktemp(f"console-{backend}") / "state"
    state.mkdir()
    config = dict(config or {})
    if "framework_dirs" not in config:  # a NeMo-RL checkout, so its recipes pass admission (none starts here)
        (state.parent / "nemo-rl").mkdir()
        config["framework_dirs"] = {"nemo-rl": str(state.parent / "nemo-rl")}
    # runtimes are built once and shared by every test console (and CI run); hub caches stay with the test
    config["runtimes"] = {"cache_dir": RUNTIME_CACHE, "hub_cache": str(state.parent / "hub"),
                          **config.get("runtimes", {})}
    database_url = ""
    if backend == "postgres":
        database_url = _postgres_database(
            require_service("PostgreSQL", "STARFORGE_TEST_POSTGRES_URL", "run `scripts/services.sh up`")
        )
    return ConsoleProcess(state, database_url=database_url, config=config, extra_args=extra_args, workers=workers)


DEFAULT_CONFIG: dict[str, Any] = {
    "capacity": {"cpu": 2},
    "image_allowlist": ["nvcr.io", "registry.internal:5000"],
    # a device login waits one second between polls, not five (0 would make our client fall back to 5 s, and makes
    # a client that honours it poll without pause until the code is approved)
    "device_poll_interval": 1,
}


@pytest.fixture(scope="module", params=SQLITE)
def console(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleProcess]:
    """A running console (module scope) on SQLite; tests use their own user names.

    Where the store is the point, a test asks for both backends:
    `@pytest.mark.parametrize("console", BACKENDS, indirect=True)` (its SQLite case shares this console).
    """
    proc = make_console(tmp_path_factory, request.param, config=DEFAULT_CONFIG)
    proc.start()
    yield proc
    proc.stop()
    shutil.rmtree(proc.state_dir / "runs", ignore_errors=True)


@pytest.fixture
def forge_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private FORGE_HOME for client commands, with FORGE_SERVER unset."""
    home = tmp_path / "forge-home"
    home.mkdir()
    monkeypatch.setenv("FORGE_HOME", str(home))
    monkeypatch.delenv("FORGE_SERVER", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    return home


def unique(prefix: str = "u") -> str:
    """Return a unique, valid user name."""
    return f"{prefix}{uuid.uuid4().hex[:8]}"
