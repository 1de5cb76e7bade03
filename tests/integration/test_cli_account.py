"""`sf login` / `whoami` / `status` / `logout` through the real `sf` against a real console on loopback."""

from __future__ import annotations

import json
import os
import queue
import re
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from tests import forkserver
from tests.integration.conftest import ConsoleProcess, unique

SF = [sys.executable, "-c", "from starforge.cli.main import run; run()"]


def sf(*args: str, home: Path | None = None, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    """Run our `sf` with the test's FORGE_HOME (or `home`) and extra environment."""
    full_env = {**os.environ, **env}
    if home is not None:
        full_env["FORGE_HOME"] = str(home)
    return forkserver.run(list(args), env=full_env, timeout=timeout)


def stored(home: Path) -> dict[str, Any]:
    """Return the parsed credentials.json of `home`."""
    return json.loads((home / "credentials.json").read_text(encoding="utf-8"))


def token_login(console: ConsoleProcess, home: Path, user: str, role: str = "operator") -> str:
    """Log `home` in to the console as `user` with a fresh API token; return the token."""
    token = console.token_for(user, role)
    done = sf("login", "--server", console.url, "--token", token, home=home)
    assert done.returncode == 0, done.stderr
    return token


def device_login(console: ConsoleProcess, home: Path, approver_home: Path) -> subprocess.CompletedProcess[str]:
    """Run `sf login --device-flow` in `home`; a thread approves its code with `sf login approve` from `approver_home`."""
    env = {**os.environ, "FORGE_HOME": str(home)}
    proc = subprocess.Popen([*SF, "login", "--server", console.url, "--device-flow", "--no-browser"], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    seen: list[str] = []

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            seen.append(line)
            lines.put(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    code = ""
    deadline = time.monotonic() + 60
    while not code and time.monotonic() < deadline:
        try:
            line = lines.get(timeout=1)
        except queue.Empty:
            assert proc.poll() is None, f"sf login exited early: {''.join(seen)}"
            continue
        match = re.search(r"confirm the code: (\S+)", line)
        code = match.group(1) if match else ""
    assert code, f"no code printed: {''.join(seen)}"

    approval: dict[str, subprocess.CompletedProcess[str]] = {}
    approver = threading.Thread(target=lambda: approval.setdefault("done", sf("login", "approve", code,
                                                                                 home=approver_home)))
    approver.start()
    approver.join(60)
    assert approval["done"].returncode == 0, approval["done"].stderr
    assert proc.stdout is not None
    stdout = proc.stdout.read()  # stderr belongs to the reader thread; communicate() would race it for lines
    proc.wait(timeout=120)
    reader.join(30)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, "".join(seen))


def test_token_login_then_whoami_and_status(console: ConsoleProcess, forge_home: Path) -> None:
    user = unique("alice")
    done = sf("login", "--server", console.url + "/", "--token", console.token_for(user))
    assert done.returncode == 0, done.stderr
    assert f"Logged in to {console.url} as {user}" in done.stderr

    assert json.loads((forge_home / "config.json").read_text()) == {"server": console.url}
    entry = stored(forge_home)[console.url]
    assert entry["refresh_token"] is None and entry["expires_at"] is None
    assert entry["user"]["username"] == user
    assert stat.S_IMODE((forge_home / "credentials.json").stat().st_mode) == 0o600

    whoami = sf("whoami", "--json")
    assert whoami.returncode == 0, whoami.stderr
    assert json.loads(whoami.stdout)["user"]["username"] == user
    assert json.loads(whoami.stdout)["server"] == console.url
    human = sf("whoami")
    assert human.stdout.startswith(user) and "operator" in human.stdout

    status = sf("status", "--json")
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)
    assert report["user"]["username"] == user
    assert {"max_concurrent_gpus", "max_concurrent_jobs"} <= set(report["quota"])
    assert report["active_jobs"] == []
    assert report["profiles"] and all(p["name"] for p in report["profiles"])
    assert isinstance(report["cluster"]["total"], int)
    text = sf("status")
    assert text.returncode == 0, text.stderr
    for section in ("Quota and usage", "Active jobs", "Cluster capacity", "Profiles"):
        assert section in text.stdout


def test_bad_token_is_refused(console: ConsoleProcess, forge_home: Path) -> None:
    done = sf("login", "--server", console.url, "--token", "not-a-real-token")
    assert done.returncode == 1
    assert "invalid token" in done.stderr
    assert json.loads((forge_home / "config.json").read_text()) == {"server": console.url}  # saved before the attempt
    assert console.url not in (stored(forge_home) if (forge_home / "credentials.json").exists() else {})
    assert sf("whoami").returncode == 1


def test_forge_server_overrides_the_configured_console(console: ConsoleProcess, forge_home: Path) -> None:
    token_login(console, forge_home, unique("carl"))
    done = sf("whoami", FORGE_SERVER="http://127.0.0.1:9")
    assert done.returncode == 1 and "not logged in to http://127.0.0.1:9" in done.stderr


def test_device_flow_login_approved_from_another_session(
    console: ConsoleProcess, forge_home: Path, tmp_path: Path
) -> None:
    approver_home = tmp_path / "approver"
    approver = unique("bob")
    token_login(console, approver_home, approver)

    done = device_login(console, forge_home, approver_home)
    assert done.returncode == 0, done.stderr
    assert f"as {approver}" in done.stderr
    entry = stored(forge_home)[console.url]
    assert entry["refresh_token"] and entry["expires_at"] > time.time()
    assert entry["user"]["username"] == approver

    whoami = sf("whoami", "--json")
    assert whoami.returncode == 0, whoami.stderr
    assert json.loads(whoami.stdout)["user"]["username"] == approver


def test_approving_an_unknown_code_fails(console: ConsoleProcess, forge_home: Path) -> None:
    token_login(console, forge_home, unique("dora"))
    done = sf("login", "approve", "ZZZZ-ZZZZ")
    assert done.returncode == 1 and done.stderr.startswith("error:")


def test_expired_access_token_is_refreshed_with_rotation(
    console: ConsoleProcess, forge_home: Path, tmp_path: Path
) -> None:
    approver_home = tmp_path / "approver"
    user = unique("erin")
    token_login(console, approver_home, user)
    assert device_login(console, forge_home, approver_home).returncode == 0

    credentials = stored(forge_home)
    before = dict(credentials[console.url])
    credentials[console.url]["expires_at"] = time.time() - 120
    (forge_home / "credentials.json").write_text(json.dumps(credentials), encoding="utf-8")

    done = sf("whoami", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["user"]["username"] == user
    after = stored(forge_home)[console.url]
    assert after["access_token"] != before["access_token"]
    assert after["refresh_token"] and after["refresh_token"] != before["refresh_token"]
    assert after["expires_at"] > time.time() + 60
    assert stat.S_IMODE((forge_home / "credentials.json").stat().st_mode) == 0o600

    again = sf("whoami")  # the new access token is used as-is now
    assert again.returncode == 0, again.stderr
    assert stored(forge_home)[console.url]["access_token"] == after["access_token"]


def test_logout_revokes_and_forgets(console: ConsoleProcess, forge_home: Path, tmp_path: Path) -> None:
    approver_home = tmp_path / "approver"
    token_login(console, approver_home, unique("fay"))
    assert device_login(console, forge_home, approver_home).returncode == 0
    refresh_token = stored(forge_home)[console.url]["refresh_token"]

    done = sf("logout")
    assert done.returncode == 0, done.stderr
    assert f"Logged out of {console.url}" in done.stderr
    assert console.url not in stored(forge_home)

    whoami = sf("whoami")
    assert whoami.returncode == 1 and "sf login" in whoami.stderr
    revoked = httpx.post(f"{console.url}/api/auth/refresh", json={"refresh_token": refresh_token}, timeout=10)
    assert revoked.status_code >= 400

    assert sf("logout").returncode == 0  # logging out twice is fine


def test_shell_completion_completes_commands_subcommands_and_options(tmp_path: Path) -> None:
    from starforge.cli import _completion
    from starforge.cli.main import COMMANDS

    asked = sf("__complete", "job", "l")  # what the shell scripts run, as a process
    assert asked.returncode == 0 and {"logs", "ls"} <= set(asked.stdout.split()), asked.stderr
    assert _completion.candidates(["jo"], COMMANDS) == ["job"]
    assert "--no-follow" in _completion.candidates(["job", "logs", "--n"], COMMANDS)
    assert "--since" in _completion.candidates(["job", "ls", "--s"], COMMANDS)
    assert "complete -o default -F _sf_complete sf" in _completion.script("bash")
    home = tmp_path / "home"
    first = _completion.install("bash", home)
    assert _completion.install("bash", home)[-1].endswith("already sources it") and len(first) == 2
    assert (home / ".bashrc").read_text().count("# sf completion") == 1
    assert sf("--install-completion", "tcsh").returncode == 2
