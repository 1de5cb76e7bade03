"""Two sandboxed processes, each behind its own `jobnet_node` helper with `--fabric` (as two nodes' ranks run), reach
each other over the job fabric (a TCP echo, UDP both ways through the hub); a packet from a forged source is dropped;
a helper without the job's key is refused; and the sandboxes still reach no service of the machine, not even the
hub's own port."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from starforge.engines import fabric
from tests.conftest import require_bubblewrap
from tests.integration import netprobe

RANK = Path(__file__).with_name("fabric_rank.py")


def sandbox(bwrap: str, folder: Path) -> list[str]:
    """Return a small bubblewrap sandbox (the system read-only, the rank's program) with its own network and PIDs."""
    return [bwrap, "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
            "--symlink", "usr/lib64", "/lib64", "--ro-bind", str(folder), str(folder), "--dev", "/dev",
            "--proc", "/proc", "--unshare-net", "--unshare-pid", "--die-with-parent", "--"]


def helper(rank: int, folder: Path, network: str = "egress") -> list[str]:
    return [sys.executable, "-I", "-m", "starforge.engines.jobnet_node", "--network", network,
            "--fabric", str(folder / "fabric"), "--rank", str(rank), "--ranks", "2"]


def report_of(done: subprocess.CompletedProcess[str]) -> dict[str, object]:
    line = next((x for x in done.stdout.splitlines() if x.startswith("FABRIC ")), "")
    assert done.returncode == 0 and line, done.stdout + done.stderr
    return dict(json.loads(line[len("FABRIC "):]))


def test_two_sandboxes_reach_each_other_over_the_fabric_and_nothing_of_the_machine(tmp_path: Path) -> None:
    bwrap = require_bubblewrap()
    if os.getuid() != 0:
        pytest.skip("the nodes' helpers run as root here (Slurm's slurmd starts them)")
    folder = tmp_path / "job"
    (folder / "fabric").mkdir(parents=True, mode=0o700)
    program = folder / "rank.py"
    program.write_text(RANK.read_text())
    python = "/usr/bin/python3"
    targets = [list(t) for t in netprobe.listening_ports() if ":" not in t[0]]
    plans = [{"rank": r, "fabric": [fabric.address_of(0), fabric.address_of(1)], "targets": targets} for r in (0, 1)]
    zero = subprocess.Popen([*helper(0, folder), "--", *sandbox(bwrap, folder), python, str(program),
                             json.dumps(plans[0])], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        published = folder / "fabric" / fabric.RANK0_FILE
        deadline = time.monotonic() + 60
        while not published.exists():  # rank 0's helper publishes its hub, then starts its sandbox
            assert time.monotonic() < deadline and zero.poll() is None, "rank 0's helper published nothing"
            time.sleep(0.02)
        host, port, _key = published.read_text().split()
        hub = [[address, int(port)] for address in {host, *netprobe.machine_addresses()}]
        one = subprocess.run([*helper(1, folder), "--", *sandbox(bwrap, folder), python, str(program),
                              json.dumps({**plans[1], "targets": [*targets, *hub]})],
                             capture_output=True, text=True, timeout=120)
        out, err = zero.communicate(timeout=120)
    finally:
        zero.kill()
    first = report_of(subprocess.CompletedProcess(zero.args, zero.returncode, out, err))
    second = report_of(one)
    assert second["echo"] == "over the fabric" and first["echo_from"] == fabric.address_of(1)
    assert second["forged_sent"] is True  # the kernel sent it out of the fabric: the helper dropped it
    assert first["datagrams"] == ["last"] and first["sources"] == [fabric.address_of(1)]
    assert second["reached"] == [], second["reached"]  # the machine's ports, the hub's own among them
    assert not any(h in targets for h in hub) and len(targets) > 1
    assert not published.exists()  # the hub took its address back when its job ended
