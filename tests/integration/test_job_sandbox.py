"""Jobs cannot touch the console: a hostile job probes from inside its sandbox and finds nothing of the console's
or of another user's, with the console run as root (per-job uids) and as an ordinary user (user namespaces).

Also: resource limits end a job as `failed` with the reason, a bundle cannot shadow the runtime's pinned code,
and a job cannot register an artifact outside its own output folder.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import REPO, require_bubblewrap
from tests.integration import netprobe
from tests.integration.conftest import ConsoleProcess, unique
from tests.integration.helpers import admitted, bundle, spec_for, submit, wait_for_status

TERMINAL = {"succeeded", "failed", "stopped"}
PROBE = Path(__file__).with_name("isolation_probe.py").read_text()
NOBODY = 65534


def _inaccessible_ancestor(path: Path) -> Path | None:
    """Return the outermost folder above `path` that other users cannot enter (e.g. /root), if any."""
    for parent in reversed(path.parents):
        if parent != Path("/") and not parent.stat().st_mode & 0o001:
            return parent
    return None


def as_ordinary_user(home: Path) -> tuple[str, ...]:
    """Return a command prefix that runs as `nobody`, with the root-only folders this interpreter needs bound in.

    Only the paths the console needs to run (its interpreter, environment and source) are bound; nothing else of
    root's private folders becomes visible. This is test plumbing: the console itself runs unchanged.
    """
    needed = [Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), REPO.resolve()]
    args = ["bwrap", "--dev-bind", "/", "/"]
    hidden = {a for p in needed if (a := _inaccessible_ancestor(p)) is not None}
    for folder in sorted(hidden):
        args += ["--tmpfs", str(folder)]
    made: set[Path] = set(hidden)
    for path in needed:
        if any(path.is_relative_to(folder) for folder in hidden):
            for parent in reversed(path.parents):
                if any(parent.is_relative_to(folder) for folder in hidden) and parent not in made:
                    made.add(parent)
                    args += ["--perms", "0755", "--dir", str(parent)]
            args += ["--ro-bind", str(path), str(path)]
    return (*args, "--", "setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--")


@pytest.fixture(scope="module", params=["console-as-root", "console-as-ordinary-user"])
def sandboxed(request: pytest.FixtureRequest) -> Iterator[ConsoleProcess]:
    """A console whose jobs run sandboxed: as root (per-job uids) and as an ordinary user (user namespaces)."""
    require_bubblewrap()
    as_root = os.getuid() == 0
    if request.param == "console-as-root" and not as_root:
        pytest.skip("the test process is not root: the ordinary-user variant covers this machine")
    base = Path(tempfile.mkdtemp(prefix="sf-sandbox-"))
    base.chmod(0o755)
    state = base / "state"
    state.mkdir()
    prefix: tuple[str, ...] = ()
    env: dict[str, str] = {}
    if request.param == "console-as-ordinary-user" and as_root:
        home = base / "home"
        home.mkdir()
        for folder in (state, home):
            os.chown(folder, NOBODY, NOBODY)
        prefix, env = as_ordinary_user(home), {"HOME": str(home), "FORGE_HOME": str(home / ".forge")}
    config = {"capacity": {"cpu": 3}, "image_allowlist": ["nvcr.io"], "stop_grace_seconds": 2,
              "executors": {"local": {"sandbox": "on", "memory_per_slot": "512MiB"}},
              "runtimes": {"cache_dir": str(base / "runtimes"), "hub_cache": str(base / "hub")}}
    for folder in (base / "runtimes", base / "hub"):  # the console's own caches, whoever it runs as
        folder.mkdir()
        if prefix:
            os.chown(folder, NOBODY, NOBODY)
    console = ConsoleProcess(state, config=config, prefix=prefix, env=env)
    console.start()
    yield console
    console.stop()
    shutil.rmtree(base, ignore_errors=True)


def _custom(api: httpx.Client, name: str, files: dict[str, str], script: str) -> str:
    spec = spec_for(api, "custom/custom", exp=f"experiments/{name}", series="cpu", gpus=1)
    spec["spec"]["framework"]["image"] = "nvcr.io/team/trainer:1.0"
    spec["spec"]["framework"]["observability_url"] = "https://wandb.example.com/team/p"
    files = {**{f"experiments/{name}/{k}": v for k, v in files.items()}, f"experiments/{name}/train.sh": script}
    response = submit(api, spec, data=bundle(files))
    return admitted(response, "submitted")  # 3 CPU slots: at most a sleeper and this job run at once


def _wait(api: httpx.Client, job: str, statuses: set[str], timeout: float = 120) -> dict[str, Any]:
    return wait_for_status(api, job, statuses, timeout)


def _output(console: ConsoleProcess, user: str, name: str, job: str) -> str:
    return (console.state_dir / "runs" / user / name / job / "logs" / "output.log").read_text(errors="replace")


def test_a_hostile_job_finds_nothing_of_the_console_or_of_another_user(sandboxed: ConsoleProcess) -> None:
    console = sandboxed
    victim_user, attacker_user = unique("victim"), unique("attacker")
    victim = console.client(console.token_for(victim_user))
    attacker = console.client(console.token_for(attacker_user))
    marker = f"planted-{uuid.uuid4().hex[:8]}"
    try:
        sleeper = _custom(victim, "private", {"secret.txt": "victim data"}, "echo running\nsleep 120\n")
        _wait(victim, sleeper, {"running"})
        probe = _custom(attacker, "probe", {"probe.py": PROBE},
                        f"exec {sys.executable} experiments/probe/probe.py {console.state_dir} {marker}\n")
        row = _wait(attacker, probe, TERMINAL)
        output = _output(console, attacker_user, "probe", probe)
        assert row["status"] == "succeeded", output[-3000:]
        report = json.loads(next(line for line in output.splitlines() if line.startswith("PROBE "))[6:])
        for finding in ("state_visible", "walk_up", "databases", "other_runs", "tokens", "env_paths"):
            assert report[finding] == [], (finding, report[finding])
        assert len(report["pids"]) < 10, report["pids"]  # its own PID namespace: only its own few processes
        if os.getuid() == 0 and not console.prefix:
            assert report["uid"] not in (0, os.getuid())  # a per-job uid, not the console's
        planted = [p for p in console.state_dir.rglob(marker)]
        assert planted == [], planted  # nothing reached the real state folder
        assert "victim data" not in output
    finally:
        victim.post("/api/job/stop", params={"id": sleeper})
        victim.close()
        attacker.close()


def test_a_job_over_its_memory_limit_fails_with_the_reason(sandboxed: ConsoleProcess) -> None:
    user = unique("hog")
    api = sandboxed.client(sandboxed.token_for(user))
    # 768 MiB, touched page by page, against a 512 MiB limit (the address-space backstop is twice the limit)
    hog = (f"exec {sys.executable} -c \"import time; blocks = [bytearray(b'x' * (64 << 20)) for _ in range(12)]; "
           "time.sleep(60)\"\n")
    try:
        job = _custom(api, "hog", {}, hog)
        row = _wait(api, job, TERMINAL)
        assert row["status"] == "failed"
        assert "memory limit" in row["message"], row["message"]
    finally:
        api.close()


def test_a_bundle_cannot_shadow_the_runtime_s_pinned_code(sandboxed: ConsoleProcess) -> None:
    user = unique("shadow")
    api = sandboxed.client(sandboxed.token_for(user))
    fake = "print('SHADOWED: the bundle replaced the recipe code')\n"
    try:
        files = {"experiments/toy/config.yaml": "grpo:\n  max_num_steps: 3\n", "starforge/__init__.py": "",
                 "starforge/tinyrl/__init__.py": "", "starforge/tinyrl/grpo.py": fake}
        response = submit(api, spec_for(api, "tinyrl/grpo", hyperparams={"max_num_steps": 3}), data=bundle(files))
        job = admitted(response, "submitted")
        row = _wait(api, job, TERMINAL)
        output = _output(sandboxed, user, "toy", job)
        assert row["status"] == "succeeded", output[-2000:]
        assert "SHADOWED" not in output and "step 3/3" in output
    finally:
        api.close()


def test_a_job_cannot_register_an_artifact_outside_its_output_folder(sandboxed: ConsoleProcess) -> None:
    user = unique("art")
    api = sandboxed.client(sandboxed.token_for(user))
    script = (
        f"exec {sys.executable} - <<'EOF'\n"
        "import json, os, urllib.request\n"
        "os.makedirs(os.environ['FORGE_OUT_DIR'] + '/ok', exist_ok=True)\n"
        "os.symlink('/etc', os.environ['FORGE_OUT_DIR'] + '/escape')\n"
        "def register(path):\n"
        "    body = json.dumps({'run_id': os.environ['STARFORGE_RUN_ID'], 'kind': 'checkpoint', 'path': path})\n"
        "    req = urllib.request.Request(os.environ['STARFORGE_ENDPOINT'] + '/artifact', body.encode(),\n"
        "        {'Content-Type': 'application/json', 'X-StarForge-Token': os.environ['STARFORGE_TOKEN']})\n"
        "    try:\n"
        "        return urllib.request.urlopen(req).status\n"
        "    except urllib.error.HTTPError as exc:\n"
        "        return exc.code\n"
        "out = os.environ['FORGE_OUT_DIR']\n"
        "print('CODES', register(out + '/ok'), register('/etc'), register(out + '/escape'),\n"
        "      register(out + '/../work'), flush=True)\n"
        "EOF\n"
    )
    try:
        job = _custom(api, "artifacts", {}, script)
        row = _wait(api, job, TERMINAL)
        output = _output(sandboxed, user, "artifacts", job)
        assert row["status"] == "succeeded", output[-2000:]
        assert "CODES 200 400 400 400" in output, output[-2000:]
        paths = [a["path"] for a in api.get(f"/api/jobs/{job}/artifacts").json()["artifacts"]]
        assert len(paths) == 1 and paths[0].endswith("/out/ok")
    finally:
        api.close()


def test_a_job_reaches_no_service_of_the_machine_and_still_reports(sandboxed: ConsoleProcess) -> None:
    """From inside, a job connects to every port the machine listens on (the console, Ray, PostgreSQL, Slurm…), the
    metadata address and the stack's host alias, and binds the console's port and another; all fail or stay its own,
    while its logs and metrics still arrive and the outside world answers it (egress)."""
    console = sandboxed
    netprobe.probe_as(console, unique("netprobe"))
