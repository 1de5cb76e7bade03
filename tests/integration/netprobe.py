"""The network probe of a job, shared by every engine that sandboxes: what the machine listens on (its targets),
a stand-in "internet" host in a network namespace of its own, and the checks made from outside while the job holds
its listeners."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.integration.conftest import ConsoleProcess, free_port
from tests.integration.helpers import admitted, bundle, spec_for, submit

PROBE = Path(__file__).with_name("network_probe.py").read_text()


def machine_addresses() -> list[str]:
    """Return this machine's own IPv4 addresses (every interface), loopback first."""
    out = subprocess.run(["ip", "-4", "-j", "addr", "show"], capture_output=True, text=True, check=True).stdout
    found = [a["local"] for link in json.loads(out) for a in link.get("addr_info", [])]
    return ["127.0.0.1", *sorted({a for a in found if not a.startswith("127.")})]


def listening_ports() -> list[tuple[str, int]]:
    """Return every TCP (host, port) this machine listens on, as a job would try to connect to it."""
    targets: list[tuple[str, int]] = []
    mine = machine_addresses()
    for table, wildcard in (("/proc/net/tcp", "0.0.0.0"), ("/proc/net/tcp6", "::")):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                if state != "0A":  # LISTEN
                    continue
                raw, port_hex = local.split(":")
                port = int(port_hex, 16)
                host = _address(raw)
                hosts = mine if host in (wildcard, "::ffff:0.0.0.0") else ([host] if ":" not in host else ["::1"])
                targets += [(h, port) for h in hosts]
    return sorted(set(targets))


def _address(raw: str) -> str:
    data = bytes.fromhex(raw)
    if len(data) == 4:
        return str(ipaddress.IPv4Address(data[::-1]))
    words = b"".join(data[i:i + 4][::-1] for i in range(0, 16, 4))
    address = ipaddress.IPv6Address(words)
    return str(address.ipv4_mapped or address)


@dataclass(frozen=True)
class RemoteHost:
    """A host of its own (a network namespace behind a veth pair) standing in for the internet."""

    address: str
    port: int


@contextlib.contextmanager
def remote_host() -> Iterator[RemoteHost | None]:
    """Start an HTTP server on a host of its own; yield None where this test process cannot make one (not root)."""
    if os.getuid() != 0 or shutil.which("ip") is None:
        yield None
        return
    failures: list[str] = []
    for _attempt in range(3):  # making a host is the test's own scaffolding: a failed attempt is retried afresh
        made = _make_remote_host()
        if isinstance(made, str):
            failures.append(made)
            continue
        name, host_end, server, remote = made
        try:
            yield remote
        finally:
            _remove_remote_host(name, host_end, server)
        return
    raise AssertionError("could not make a remote host: " + " | ".join(failures))


def _make_remote_host() -> tuple[str, str, subprocess.Popen[bytes], RemoteHost] | str:
    """Make a network namespace joined to the machine by a veth pair, with an HTTP server in it answering from the
    machine; return it, or why it failed (everything made so far removed)."""
    name = f"sf-remote-{uuid.uuid4().hex[:6]}"
    host_end, remote_end = f"sfh{name[-6:]}", f"sfr{name[-6:]}"
    subnet = 10 + int(name[-2:], 16) % 200
    mine, theirs = f"10.213.{subnet}.1", f"10.213.{subnet}.2"
    steps = [["ip", "netns", "add", name],
             ["ip", "link", "add", host_end, "type", "veth", "peer", "name", remote_end],
             ["ip", "link", "set", remote_end, "netns", name],
             ["ip", "addr", "add", f"{mine}/30", "dev", host_end], ["ip", "link", "set", host_end, "up"],
             ["ip", "-n", name, "addr", "add", f"{theirs}/30", "dev", remote_end],
             ["ip", "-n", name, "link", "set", remote_end, "up"], ["ip", "-n", name, "link", "set", "lo", "up"]]
    server = None
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode != 0:
            _remove_remote_host(name, host_end, server)
            return f"{shlex.join(step)}: {done.stderr.strip()}"
    code = f"import http.server as h; h.HTTPServer(({theirs!r}, 8080), h.SimpleHTTPRequestHandler).serve_forever()"
    server = subprocess.Popen(["ip", "netns", "exec", name, sys.executable, "-c", code],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd="/")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and server.poll() is None:  # until it answers, through the veth pair
        with socket.socket() as ready, contextlib.suppress(OSError):
            ready.settimeout(1)
            ready.connect((theirs, 8080))
            return name, host_end, server, RemoteHost(theirs, 8080)
        time.sleep(0.05)
    if server.poll() is not None and server.stderr is not None:
        why = "exited: " + server.stderr.read().decode(errors="replace")[-500:]
    else:
        why = "did not answer within 60 s"
    _remove_remote_host(name, host_end, server)
    return f"the remote host's server {why}"


def _remove_remote_host(name: str, host_end: str, server: subprocess.Popen[bytes] | None) -> None:
    """Stop the host's server and remove its veth pair and namespace (whatever of them exists)."""
    if server is not None:
        server.kill()
        server.wait()
        if server.stderr:
            server.stderr.close()
    subprocess.run(["ip", "link", "del", host_end], capture_output=True)
    subprocess.run(["ip", "netns", "del", name], capture_output=True)


def targets(console_port: int, listen_port: int, remote: RemoteHost | None) -> dict[str, object]:
    """Return what the job tries: every listening port of the machine (the console, Ray, PostgreSQL, Slurm…),
    the machine's link-local metadata address and the stack's host alias; and what it listens on."""
    tcp = [*listening_ports(), ("169.254.169.254", 80), ("10.0.2.2", console_port)]
    binds = [("127.0.0.1", console_port), ("0.0.0.0", listen_port), ("::1", console_port), ("::", listen_port)]
    return {"tcp": [list(t) for t in tcp], "bind": [list(b) for b in binds], "hold": 120,
            "remote": [remote.address, remote.port] if remote else None}


def reachable_from_the_machine(console_port: int, listen_port: int) -> list[str]:
    """Return which of the job's listening addresses answer as the job from the machine (must be none)."""
    answered = []
    for host in machine_addresses():
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.settimeout(2)
            with contextlib.suppress(OSError):
                probe.connect((host, listen_port))
                answered.append(f"{host}:{listen_port}")
    for port in (console_port, listen_port):
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.settimeout(2)
            with contextlib.suppress(OSError):
                probe.connect(("::1", port))
                answered.append(f"[::1]:{port}")
    return answered


TERMINAL = {"succeeded", "failed", "stopped"}


def _status(api: httpx.Client, job: str) -> str:
    return str(api.get("/api/job", params={"id": job}).json()["status"])


def run_probe(console: ConsoleProcess, api: httpx.Client, *, remote: RemoteHost | None,
              run_dir_of: Callable[[str], Path], series: str = "cpu",
              image: str = "nvcr.io/team/trainer:1.0") -> dict[str, Any]:
    """Run the probe as a custom job of `api`'s account (in `image`); return its report and what the machine saw
    meanwhile."""
    listen_port = free_port()
    plan = targets(console.port, listen_port, remote)
    spec = spec_for(api, "custom/custom", exp="experiments/netprobe", series=series, gpus=1)
    spec["spec"]["framework"]["image"] = image
    spec["spec"]["framework"]["observability_url"] = "https://wandb.example.com/team/p"
    script = f"exec {sys.executable} experiments/netprobe/probe.py {shlex.quote(json.dumps(plan))}\n"
    files = {"experiments/netprobe/probe.py": PROBE, "experiments/netprobe/train.sh": script}
    response = submit(api, spec, data=bundle(files))
    job = admitted(response, "submitted")
    deadline = time.monotonic() + 180
    log = ""
    while "NETPROBE " not in log:
        assert time.monotonic() < deadline, log[-3000:]
        assert _status(api, job) not in TERMINAL or "NETPROBE " in log, log[-3000:]
        with contextlib.suppress(OSError):
            log = (run_dir_of(job) / "logs" / "output.log").read_text(errors="replace")
        time.sleep(0.2)
    line = next((line for line in log.splitlines() if line.startswith("NETPROBE ")), "")
    assert line, log[-3000:]
    report: dict[str, Any] = json.loads(line[len("NETPROBE "):])
    report["answered"] = reachable_from_the_machine(console.port, listen_port)
    report["console_answers"] = httpx.get(f"{console.url}/api/version", timeout=5).status_code
    (run_dir_of(job) / "out" / "release").write_text("")
    while _status(api, job) not in TERMINAL:
        assert time.monotonic() < deadline, "the probe job did not end"
        time.sleep(0.2)
    report["status"] = _status(api, job)
    report["log"] = log[-2000:]
    report["metrics"] = api.get(f"/api/jobs/{job}/metrics").json()
    report["tried"] = [f"{host}:{port}" for host, port in plan["tcp"]]  # type: ignore[attr-defined]
    report["console_port"] = console.port
    return report


def service_ports() -> list[int]:
    """Return the loopback ports of the test services that run here (PostgreSQL, the Ray Jobs API), if any."""
    from urllib.parse import urlsplit

    from tests.conftest import _service_env

    env = {**_service_env(), **os.environ}
    ports = []
    for key in ("STARFORGE_TEST_POSTGRES_URL", "RAY_ADDRESS"):
        if env.get(key):
            with contextlib.suppress(ValueError):
                ports.append(urlsplit(env[key]).port or 0)
    return [p for p in ports if p]


def check(report: dict[str, Any], remote: RemoteHost | None) -> None:
    """Assert that the job reached nothing of the machine, was reached by nothing, and still reported."""
    for port in (report["console_port"], *service_ports()):  # what the attacks went for was among the targets
        assert f"127.0.0.1:{port}" in report["tried"], (port, report["tried"])
    assert report["reached"] == [], report["reached"]
    assert report["channel_leaks"] == [], report["channel_leaks"]
    assert report["endpoint_is_loopback"] is True
    assert report["bound"], report  # it may listen in its own namespace...
    assert report["answered"] == [], report["answered"]  # ...where the machine never reaches it
    assert report["console_answers"] == 200  # and the console's port is still the console's
    assert report["status"] == "succeeded", report
    assert "probe/reached" in json.dumps(report["metrics"]), report["metrics"]
    if remote is not None:
        assert report["remote"] == 200, report["remote"]


@contextlib.contextmanager
def _one_probe_at_a_time() -> Iterator[None]:
    """Hold this machine's probe lock: a remote host gives the machine a new address, which a probe already running
    (its job's closed destinations computed when it started) would see as a service of the machine it reaches."""
    import fcntl

    with open(os.path.join(tempfile.gettempdir(), "starforge-netprobe.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def probe_as(console: ConsoleProcess, user: str, image: str = "nvcr.io/team/trainer:1.0") -> None:
    """Run the probe as `user`'s job on `console` in `image` (with a host outside where one can be made); check it."""
    with _one_probe_at_a_time(), console.client(console.token_for(user)) as api, remote_host() as remote:
        report = run_probe(console, api, remote=remote, image=image,
                           run_dir_of=lambda job: console.state_dir / "runs" / user / "netprobe" / job)
    check(report, remote)
