"""The job network: what each policy closes, that the console refuses to start a policy it cannot enforce, the
resolver a job gets when the machine's is on loopback, and the job channel (ingest only, on any path length)."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from starforge.console.job_channel import JobChannelGuard
from starforge.console.settings import SettingsError, load_settings
from starforge.engines.isolation import Isolation, IsolationConfig, SandboxUnavailable
from starforge.engines.jobnet import (
    EGRESS,
    NONE,
    JobNetwork,
    NetworkUnavailable,
    _fib_locals,
    bind_unix,
    network_mode,
    resolver_override,
)
from starforge.engines.jobnet_node import _inherited, _with_options
from starforge.wire import channel_endpoint, unix_endpoint
from tests.conftest import require_bubblewrap


def test_egress_closes_the_machines_own_addresses_link_local_and_the_stacks_host_alias() -> None:
    routes = JobNetwork(EGRESS, denied=("198.51.100.7", "not-an-address", "::1")).routes()
    assert "route add prohibit 169.254.0.0/16" in routes
    assert "route add prohibit 10.0.2.2/32" in routes
    assert "route add prohibit 198.51.100.7/32" in routes  # the console's host, seen from a node
    assert not any("127." in line or "::" in line for line in routes)  # its own loopback stays its own
    ours = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True).stdout.split()
    for address in (word.split("/")[0] for word in ours if word.count(".") == 3 and "/" in word):
        if not address.startswith("127."):
            assert f"route add prohibit {address}/32" in routes, (address, routes)


def test_the_kernels_list_of_local_addresses_is_read_without_iproute2() -> None:
    trie = ("Main:\n  +-- 0.0.0.0/0 3 0 5\n     |-- 192.0.2.2\n        /32 host LOCAL\n"
            "     |-- 127.0.0.1\n        /32 host LOCAL\nLocal:\n     |-- 192.0.2.2\n        /32 host LOCAL\n")
    assert _fib_locals(trie) == ["192.0.2.2"]


def test_a_job_network_is_one_of_two_policies_named_at_its_key() -> None:
    assert network_mode("none", "executors.local.network") == NONE
    with pytest.raises(ValueError, match=r"executors\.local\.network: must be none .* or egress"):
        network_mode("host", "executors.local.network")


def test_the_configuration_takes_the_network_of_local_and_slurm_jobs(tmp_path: Path) -> None:
    config = tmp_path / "console.yaml"
    config.write_text("executors: {local: {network: none}, slurm: {network: none, series: {cpu: {partition: p}}}}\n")
    settings = load_settings(state_dir=tmp_path / "state", config_file=config)
    assert settings.local.network == NONE and settings.slurm.network == NONE
    assert IsolationConfig().network == EGRESS  # egress unless the operator says otherwise
    config.write_text("executors: {local: {network: shared}}\n")
    with pytest.raises(SettingsError, match="executors.local.network"):
        load_settings(state_dir=tmp_path / "state", config_file=config)


def test_the_console_refuses_to_start_when_egress_cannot_be_enforced(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    bwrap = require_bubblewrap()
    tools = tmp_path / "bin"
    tools.mkdir()
    for name in ("setpriv", "nsenter", "ip"):  # everything but slirp4netns
        found = shutil.which(name)
        if found:
            (tools / name).symlink_to(found)
    (tools / "bwrap").symlink_to(bwrap)
    monkeypatch.setenv("PATH", str(tools))
    with pytest.raises(NetworkUnavailable, match="slirp4netns") as refused:
        JobNetwork.find(EGRESS)
    assert "apt-get install slirp4netns" in refused.value.fix and "network: none" in refused.value.fix
    with pytest.raises(SandboxUnavailable, match="slirp4netns"):
        Isolation.prepare(tmp_path / "state", IsolationConfig(), total_slots=1)
    assert JobNetwork.find(NONE).mode == NONE  # no network at all needs no stack


def test_a_machine_whose_resolver_is_on_loopback_gives_jobs_the_stacks_forwarder(tmp_path: Path) -> None:
    stub = tmp_path / "resolv.conf"
    stub.write_text("# systemd-resolved\nnameserver 127.0.0.53\noptions edns0 trust-ad\nsearch lab.example\n")
    assert resolver_override(str(stub)) == "nameserver 10.0.2.3\noptions edns0 trust-ad\nsearch lab.example\n"
    stub.write_text("nameserver 10.255.255.53\n")
    assert resolver_override(str(stub)) is None  # reachable through the stack as it is


def test_the_channel_endpoint_names_its_socket_and_the_ingest_root() -> None:
    endpoint = channel_endpoint()
    assert endpoint == "http+unix://%2Fforge%2Fconsole%2Fingest.sock/api/ingest"
    assert unix_endpoint(endpoint) == ("/forge/console/ingest.sock", "/api/ingest")
    assert unix_endpoint("http://127.0.0.1:8080/api/ingest") is None
    assert unix_endpoint("http+unix://relative.sock/api/ingest") is None


def test_a_unix_socket_binds_at_a_path_longer_than_a_socket_address(tmp_path: Path) -> None:
    folder = tmp_path / ("d" * 60) / ("e" * 60)
    folder.mkdir(parents=True)
    path = folder / "ingest.sock"
    with bind_unix(str(path)) as server, socket.socket(socket.AF_UNIX) as client:
        assert len(str(path)) > 108
        handle = os.open(folder, os.O_PATH)
        try:
            client.connect(f"/proc/self/fd/{handle}/ingest.sock")
        finally:
            os.close(handle)
        assert oct(path.stat().st_mode & 0o777) == "0o666"
        server.accept()[0].close()


def _call(guard: JobChannelGuard, method: str, path: str, server: tuple[str, int | None]) -> int:
    seen: list[int] = []

    async def app(scope: dict, receive: object, send: object) -> None:
        seen.append(200)

    async def run() -> int:
        sent: list[dict] = []

        async def send(message: dict) -> None:
            sent.append(message)

        async def receive() -> dict:
            return {"type": "http.request", "body": b""}

        guard.app = app  # type: ignore[assignment]
        await guard({"type": "http", "method": method, "path": path, "server": server}, receive, send)
        return int(sent[0]["status"]) if sent else seen[-1]

    return asyncio.run(run())


def test_the_channel_reaches_the_ingest_and_nothing_else() -> None:
    guard = JobChannelGuard(lambda *_: None)  # type: ignore[arg-type, return-value]
    unix = ("/state/channel/ingest.sock", None)
    assert _call(guard, "POST", "/api/ingest/metrics", unix) == 200
    for method, path in (("GET", "/api/version"), ("GET", "/api/ingest/metrics"), ("POST", "/api/jobs"),
                         ("POST", "/api/ingest/../admin/users"), ("GET", "/ui/")):
        assert _call(guard, method, path, unix) == 404, (method, path)
    assert _call(guard, "GET", "/api/version", ("127.0.0.1", 8080)) == 200  # the TCP port serves everything


def test_the_node_helper_puts_its_options_after_the_views_and_passes_the_args_descriptor() -> None:
    argv = ["bwrap", "--args", "9", "--", "env", "--default-signal=TERM", "python3", "-c", "pass"]
    placed = _with_options(argv, ["--info-fd", "5", "--ro-bind", "/x", "/forge/console"])
    assert placed[:7] == ["bwrap", "--args", "9", "--info-fd", "5", "--ro-bind", "/x"]
    assert placed[placed.index("--"):] == argv[3:]
    assert _inherited(argv) == (9,)


def test_the_node_helper_refuses_without_a_command() -> None:
    done = subprocess.run([sys.executable, "-m", "starforge.engines.jobnet_node", "--network", "none"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "--console URL" in done.stderr


def test_a_job_without_network_has_only_its_loopback_and_its_channel(tmp_path: Path) -> None:
    require_bubblewrap()
    state = tmp_path / "state"
    channel = tmp_path / "channel"
    channel.mkdir()
    isolation = Isolation.prepare(state, IsolationConfig(network=NONE), total_slots=1, channel=channel)  # probes
    run = tmp_path / "run"
    for name in ("work", "out", "logs", "tmp"):
        (run / name).mkdir(parents=True)
    with socket.socket() as listener, bind_unix(str(channel / "ingest.sock")):
        listener.bind(("0.0.0.0", 0))
        listener.listen()
        code = ("import socket; print(sorted(n for _, n in socket.if_nameindex()));\n"
                "s = socket.socket()\ntry:\n  s.connect(('127.0.0.1', %d)); print('reached')\n"
                "except OSError: print('closed')\n"
                "u = socket.socket(socket.AF_UNIX); u.connect('/forge/console/ingest.sock'); print('channel')")
        paths = isolation.job_paths(run)
        view = isolation.view(run, paths, paths.work, (), ())
        uid = isolation.uids.take() if isolation.uids else None
        plan = isolation.spawn(view, [sys.executable, "-I", "-c", code % listener.getsockname()[1]], uid=uid,
                               prefix=[])
        child = subprocess.Popen(plan.argv, stdout=subprocess.PIPE, text=True, pass_fds=plan.pass_fds,
                                 start_new_session=True)
        assert plan.args_fd is not None
        os.close(plan.args_fd)
        assert plan.attach_network(child.pid) is None  # no stack: nothing but its own loopback
        out, _ = child.communicate(timeout=60)
    assert out.split("\n")[:3] == ["['lo']", "closed", "channel"], out
