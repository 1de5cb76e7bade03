"""The official sf client (PyPI starforge-core) installed once into a cached venv and run as a black box.

`official_sf` is starforge-core 0.3.56 in `compat/0.3.56/` of the user's test cache (`tests/official.py::cache_dir`,
`~/.cache/starforge-tests/` by default: outside the clone, so a fresh clone reuses it; a Python 3.12 venv, the client
needs ≥ 3.12) and `old_sf` is 0.3.38 in `compat/0.3.38/`. Each is installed (uv, else pip) the first time and reused
afterwards (`.installed` marks a finished install; a file lock keeps parallel workers and runs from installing twice,
and a venv whose interpreter has gone is installed again). When PyPI or a
suitable interpreter is missing, the suite is skipped loudly as the service "official sf client", and fails under
`STARFORGE_REQUIRE_SERVICES=1` (CI).

`official_console` runs our console on SQLite serving the official 0.3.56 catalog (`tests/official.py`) with the
`manifest` digest scheme. `OfficialUser` is one account with its own FORGE_HOME, HOME and git identity; its `sf(...)`
runs the official client with `FORGE_SERVER` on loopback, `FORGE_DEVICE_FLOW=1`, `NO_COLOR=1` and a timeout.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests import forkserver
from tests.conftest import service_unavailable
from tests.integration.conftest import ConsoleProcess, make_console, unique
from tests.official import cache_dir

OFFICIAL_VERSION = "0.3.56"
OLD_VERSION = "0.3.38"
CACHE = cache_dir() / "compat"
SERVICE = "official sf client"
HOW = "needs PyPI (pip install starforge-core) and a Python 3.12 interpreter (pyenv 3.12.x or python3.12 on PATH)"
ALLOWLIST = ["nvcr.io", "registry.internal:5000"]
IMAGE = "nvcr.io/acme/trainer:1.0"
OBSERVABILITY = "https://wandb.example.com/acme/compat"
CALL_TIMEOUT = 120.0


def require_official(reason: str) -> None:
    """Skip loudly because the official client is unavailable, or fail under STARFORGE_REQUIRE_SERVICES=1 (CI)."""
    service_unavailable(SERVICE, f"{SERVICE} is not available ({reason}): {HOW}", HOW)


def _python_version(python: str) -> tuple[int, int] | None:
    with contextlib.suppress(OSError, subprocess.SubprocessError, ValueError):
        done = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True,
                              text=True, timeout=30, check=True)
        major, minor = done.stdout.split()
        return int(major), int(minor)
    return None


def find_python(minors: tuple[int, ...] = (12,)) -> str | None:
    """Return a CPython 3.x interpreter whose minor version is in `minors` (pyenv installs first, then PATH)."""
    candidates: list[str] = []
    for minor in minors:
        candidates += sorted(glob.glob(f"{Path.home()}/.pyenv/versions/3.{minor}*/bin/python"), reverse=True)
        candidates += [found for found in (shutil.which(f"python3.{minor}"),) if found]
    for python in candidates:
        version = _python_version(python)
        if version is not None and version[0] == 3 and version[1] in minors:
            return python
    return None


def _installed(target: Path) -> bool:
    # the venv's interpreter links to the one it was made from: a removed pyenv version breaks it
    return ((target / ".installed").is_file() and (target / "bin" / "sf").is_file()
            and (target / "bin" / "python").resolve().is_file())


def _install_commands(python: Path, target: Path, version: str) -> list[list[str]]:
    """Return how to make the client's venv: with uv when the suite's environment has it (a tenth of pip's time),
    else with the interpreter's venv and pip."""
    uv = Path(sys.executable).with_name("uv")
    if uv.is_file():
        return [[str(uv), "venv", "--quiet", "--python", str(python), str(target)],
                [str(uv), "pip", "install", "--quiet", "--python", str(target / "bin" / "python"),
                 f"starforge-core=={version}"]]
    return [[str(python), "-m", "venv", str(target)],
            [str(target / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
             f"starforge-core=={version}"]]


def install_official(version: str, minors: tuple[int, ...] = (12,)) -> Path:
    """Return the `sf` of starforge-core `version` in the cache's `compat/<version>/`, installing it on first use."""
    target = CACHE / version
    sf = target / "bin" / "sf"
    marker = target / ".installed"
    if _installed(target):
        return sf
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / f"{version}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _installed(target):
            return sf
        python = find_python(minors)
        if python is None:
            require_official(f"no Python 3.{'/3.'.join(map(str, minors))} interpreter")
        shutil.rmtree(target, ignore_errors=True)
        try:
            for command in _install_commands(python, target, version):
                subprocess.run(command, check=True, capture_output=True, text=True, timeout=900)
            shown = subprocess.run([str(sf), "--version"], capture_output=True, text=True, timeout=60, check=True)
        except (OSError, subprocess.SubprocessError) as exc:
            detail = str(getattr(exc, "stderr", "") or exc).strip().splitlines()
            shutil.rmtree(target, ignore_errors=True)
            require_official(f"pip install starforge-core=={version} failed: {detail[-1] if detail else exc}")
        if version not in shown.stdout:
            shutil.rmtree(target, ignore_errors=True)
            require_official(f"the installed client reports {shown.stdout.strip()!r}, not {version}")
        marker.write_text(f"{version}\n{python}\n", encoding="utf-8")
    return sf


@pytest.fixture(scope="session")
def official_sf() -> Path:
    """The `sf` executable of the official client starforge-core 0.3.56."""
    return install_official(OFFICIAL_VERSION, (12,))


@pytest.fixture(scope="session")
def old_sf() -> Path:
    """The `sf` executable of the older official client starforge-core 0.3.38 (Python 3.12 or 3.11)."""
    return install_official(OLD_VERSION, (12, 11))


@pytest.fixture(scope="session")
def official_tree() -> Path:
    """The official 0.3.56 recipe catalog tree (data only, unpacked by tests/official.py)."""
    from tests.official import OfficialUnavailable, official_catalog

    try:
        return official_catalog(OFFICIAL_VERSION)
    except OfficialUnavailable as exc:
        require_official(str(exc))
        raise


_ENTRY = re.compile(r"^from (\S+) import (\w+)$", re.MULTILINE)


def official_program(exe: Path) -> forkserver.Program:
    """Return the fork-server program of an official client's `sf`: its venv's interpreter and its entry point (the
    `from … import …` its console script runs)."""
    found = _ENTRY.search(exe.read_text(encoding="utf-8"))
    if found is None:
        raise RuntimeError(f"{exe} names no entry point")
    module, name = found.groups()
    return forkserver.Program(str(exe.with_name("python")), (module,), f"{module}:{name}()")


def console_config(tree: Path, **extra: Any) -> dict[str, Any]:
    """Return a console configuration serving the official 0.3.56 catalog (h200/h100 have no capacity here)."""
    config: dict[str, Any] = {
        "catalog": {"path": str(tree), "digest_scheme": "manifest", "core_version": OFFICIAL_VERSION,
                    "core_requirement": ">=0.3.56,<0.4"},
        "profiles": [{"name": "cpu", "series": "cpu", "num_nodes": 1, "gpus_per_node": 1, "label": "CPU slot"},
                     {"name": "h200", "series": "h200", "num_nodes": 1, "gpus_per_node": 8, "label": "H200 x8"},
                     {"name": "h100", "series": "h100", "num_nodes": 1, "gpus_per_node": 8, "label": "H100 x8"}],
        "capacity": {"cpu": 2},
        "image_allowlist": list(ALLOWLIST),
        "device_poll_interval": 1,
        "stop_grace_seconds": 3,
    }
    config.update(extra)
    return config


@pytest.fixture(scope="module")
def official_console(tmp_path_factory: pytest.TempPathFactory, official_sf: Path,
                     official_tree: Path) -> Iterator[ConsoleProcess]:
    """Our console on SQLite serving the official 0.3.56 catalog, the manifest scheme and `>=0.3.56,<0.4`."""
    proc = make_console(tmp_path_factory, "sqlite", config=console_config(official_tree))
    proc.start()
    yield proc
    proc.stop()
    shutil.rmtree(proc.state_dir / "runs", ignore_errors=True)


@dataclass
class OfficialUser:
    """One account driving an official client: its own FORGE_HOME, HOME and git identity; `sf(...)` runs it."""

    user: str
    token: str
    exe: Path
    console: ConsoleProcess
    base: Path
    env: dict[str, str]

    @property
    def forge_home(self) -> Path:
        """The client's state directory ($FORGE_HOME)."""
        return Path(self.env["FORGE_HOME"])

    def sf(self, *args: str, cwd: Path | None = None, timeout: float = CALL_TIMEOUT,
           **extra: str) -> subprocess.CompletedProcess[str]:
        """Run the official `sf args…` (stdin closed) in `cwd` (default: the user's base directory), forked from
        a server of that client that has made its start-up imports (tests/forkserver.py)."""
        return forkserver.run(list(args), env={**self.env, **extra}, cwd=cwd or self.base, timeout=timeout,
                              program=official_program(self.exe), exe=str(self.exe))

    def login(self, server: str = "") -> subprocess.CompletedProcess[str]:
        """`sf login --token T` with this user's API token (through `server` if given); the login must succeed."""
        done = self.sf("login", "--token", self.token, FORGE_SERVER=server or self.env["FORGE_SERVER"])
        assert done.returncode == 0, output(done)
        return done

    def api(self) -> httpx.Client:
        """Our REST API as this user."""
        return self.console.client(self.token)

    def credentials(self) -> dict[str, Any]:
        """The client's stored login for this console (credentials.json, keyed by the server URL)."""
        stored = json.loads((self.forge_home / "credentials.json").read_text(encoding="utf-8"))
        return dict(stored.get(self.console.url) or {})


def output(done: subprocess.CompletedProcess[str]) -> str:
    """Return stdout and stderr of a client run together (the client writes its panels to stderr)."""
    return f"{done.stdout}\n{done.stderr}"


def flat(text: str) -> str:
    """Collapse all whitespace runs to one space (terminal wrapping must not decide an assertion)."""
    return " ".join(text.split())


def client_env(base: Path, console_url: str) -> dict[str, str]:
    """Return the environment of an official client run: private FORGE_HOME/HOME, loopback server, no colour."""
    home = base / "home"
    home.mkdir(parents=True, exist_ok=True)
    gitconfig = base / "gitconfig"
    gitconfig.write_text("[user]\n\tname = Compat Tester\n\temail = compat@example.invalid\n"
                         "[init]\n\tdefaultBranch = main\n", encoding="utf-8")
    dropped = ("FORGE_", "SF_", "PYTHON", "VIRTUAL_ENV", "GIT_", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
               "https_proxy", "ALL_PROXY", "all_proxy")
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    env.update(
        FORGE_HOME=str(base / "forge-home"), FORGE_SERVER=console_url, FORGE_DEVICE_FLOW="1", HOME=str(home),
        NO_COLOR="1", COLUMNS="250", BROWSER="true", NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost",
        GIT_CONFIG_GLOBAL=str(gitconfig), GIT_CONFIG_NOSYSTEM="1", GIT_CEILING_DIRECTORIES=str(base),
    )
    return env


def make_user(console: ConsoleProcess, exe: Path, base: Path, prefix: str = "oc") -> OfficialUser:
    """Create an operator account (admin API, with its first API token) and its client directories (logged out)."""
    base.mkdir(parents=True, exist_ok=True)
    name = unique(prefix)
    with console.client(console.admin_token) as admin:
        created = admin.post("/api/admin/users", json={"username": name, "role": "operator"})
    assert created.status_code == 200, created.text
    return OfficialUser(name, str(created.json()["token"]), exe, console, base, client_env(base, console.url))


@pytest.fixture
def user(official_console: ConsoleProcess, official_sf: Path, tmp_path: Path) -> Iterator[OfficialUser]:
    """A fresh account logged in to `official_console` with `sf login --token` of the official 0.3.56 client.

    Whatever the test leaves running is stopped afterwards (our REST API), so no job outlives its test.
    """
    person = make_user(official_console, official_sf, tmp_path / "client")
    person.login()
    yield person
    with person.api() as api:
        api.post("/api/jobs/cancel-all")


HELLO_SH = """#!/usr/bin/env bash
set -euo pipefail
for i in 1 2 3 4 5; do
  echo "compat-line $i of 5 recipe=${FORGE_RECIPE} nodes=${FORGE_CLUSTER_NUM_NODES}x${FORGE_CLUSTER_GPUS_PER_NODE} exp=${FORGE_EXP_DIR#"$FORGE_WORK_DIR"/}"
  sleep 0.1
done
echo "compat-done"
"""

FAILING_SH = """#!/usr/bin/env bash
echo "compat-about-to-fail"
sleep 0.1
exit 3
"""

LONG_SH = """#!/usr/bin/env bash
for i in $(seq 1 1500); do
  echo "compat-tick $i"
  sleep 0.2
done
"""


@dataclass(frozen=True)
class Lab:
    """A lab made by the official client's `sf init` and `sf new`, committed with git."""

    path: Path
    init: subprocess.CompletedProcess[str]
    new: dict[str, subprocess.CompletedProcess[str]]

    def git(self, *args: str, env: dict[str, str]) -> str:
        """Run git in the lab and return its stdout."""
        return subprocess.run(["git", *args], cwd=self.path, env=env, capture_output=True, text=True,
                              check=True).stdout


@pytest.fixture(scope="module")
def lab(official_console: ConsoleProcess, official_sf: Path, tmp_path_factory: pytest.TempPathFactory) -> Lab:
    """One lab for the module: `sf init`, then `sf new` of nemo-rl/grpo and four custom/custom experiments.

    `template` keeps the official client's own scaffolding untouched; the other custom experiments get our own
    `train.sh` (hello: five lines and success; failing: exit 3; long: ticks for minutes). The whole lab is committed,
    so submissions need no `--allow-dirty`.
    """
    base = tmp_path_factory.mktemp("official-lab")
    maker = make_user(official_console, official_sf, base, prefix="lab")
    init = maker.sf("init", "lab", "--yes", "--name", "compat")
    assert init.returncode == 0, output(init)
    path = base / "lab"
    experiments = {"my-grpo": "nemo-rl/grpo", "hello": "custom/custom", "failing": "custom/custom",
                   "long": "custom/custom", "template": "custom/custom"}
    with ThreadPoolExecutor(max_workers=len(experiments)) as pool:  # independent directories: run side by side
        runs = {name: pool.submit(maker.sf, "new", name, "--method", method, cwd=path)
                for name, method in experiments.items()}
    new = {name: run.result() for name, run in runs.items()}
    for done in new.values():
        assert done.returncode == 0, output(done)
    for name, script in (("hello", HELLO_SH), ("failing", FAILING_SH), ("long", LONG_SH)):
        (path / "experiments" / name / "train.sh").write_text(script, encoding="utf-8")
    made = Lab(path, init, new)
    made.git("add", "-A", env=maker.env)
    made.git("commit", "-q", "-m", "compat experiments", env=maker.env)
    return made


TERMINAL = {"succeeded", "failed", "stopped", "cancelled", "terminated"}


def job_row(api: httpx.Client, job: str) -> dict[str, Any]:
    """Return the caller's `/api/jobs/mine` row whose job_ref is `job`."""
    rows = api.get("/api/jobs/mine", params={"limit": 200}).json()["jobs"]
    matches = [row for row in rows if row["job_ref"] == job]
    assert matches, f"{job} not listed: {rows}"
    return dict(matches[0])


def wait_status(api: httpx.Client, job: str, statuses: set[str], timeout: float = 60) -> dict[str, Any]:
    """Poll our REST API until the job's status is one of `statuses`; return its row."""
    deadline = time.monotonic() + timeout
    row: dict[str, Any] = {}
    while time.monotonic() < deadline:
        row = job_row(api, job)
        if row["status"] in statuses:
            return row
        time.sleep(0.2)
    raise AssertionError(f"{job} did not reach {statuses}: {row}")


class CuttingProxy:
    """A loopback TCP relay in front of a console whose open connections the test can cut (`cut()`).

    Cutting closes both sides cleanly, so a client sees its stream end without an `end` event while the console
    stays up. `requests` records the first line of every request that went through.
    """

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        self.requests: list[str] = []
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            with self._lock:
                self._open += [client, upstream]
            threading.Thread(target=self._pipe, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, False), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, record: bool) -> None:
        first = record
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                if first:
                    with self._lock:
                        self.requests.append(data.split(b"\r\n", 1)[0].decode("latin-1"))
                    first = False
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    def cut(self) -> None:
        """Close every open connection (both directions) now."""
        with self._lock:
            sockets, self._open = self._open, []
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def close(self) -> None:
        """Stop accepting and cut everything."""
        self._closed = True
        self.server.close()
        self.cut()
