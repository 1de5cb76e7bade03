"""The sandbox shows an image as the job's root: the image's files, none of the machine's system, its own uid, and
every mount (the runtime's interpreter, the run's folders) still in place."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from starforge.engines.identities import chown_tree
from starforge.engines.image_view import image_root_args
from starforge.engines.images import make_safe
from starforge.engines.isolation import Isolation, IsolationConfig
from tests.conftest import require_bubblewrap

_LOOK = r"""
import json, os
print(json.dumps({"marker": open("/etc/marker").read().strip(), "uid": os.getuid(), "top": sorted(os.listdir("/")),
                  "bwrap": os.path.exists("/usr/bin/bwrap"), "state": os.path.exists(os.environ["STATE"]),
                  "resolv": os.path.isfile("/etc/resolv.conf")}))
"""


def _mini_image(root: Path) -> Path:
    """Write a tiny image: the machine's C library and loader (what any glibc image has) and a marker file."""
    libs = root / "lib" / "x86_64-linux-gnu"
    libs.mkdir(parents=True)
    for name in ("libc.so.6", "libm.so.6"):
        shutil.copy(Path("/lib/x86_64-linux-gnu") / name, libs / name)
    (root / "lib64").mkdir()
    shutil.copy("/lib64/ld-linux-x86-64.so.2", root / "lib64")
    (root / "etc").mkdir()
    (root / "etc" / "marker").write_text("only in the image\n")
    (root / "root").mkdir()  # the runtime's interpreter may live under /root: it is rebuilt one level down
    (root / "usr" / "bin").mkdir(parents=True)
    (root / "bin").symlink_to("usr/bin")
    make_safe(root)
    return root


def test_folders_of_the_image_on_the_way_to_a_mount_are_rebuilt_and_the_rest_bound(tmp_path: Path) -> None:
    root = _mini_image(tmp_path / "rootfs")
    args, created = image_root_args(root, ["/root/.pyenv/versions/3.11/bin", "/forge/runs/a/work"])
    text = " ".join(args)
    assert "--dir /root" in text and f"--ro-bind {root}/root /root" not in text
    assert f"--ro-bind {root}/etc /etc" in text and "--symlink usr/bin /bin" in text
    assert "/proc" not in args and "/tmp" not in args  # the sandbox gives its own
    assert created == {"/", "/root"}


def test_a_job_in_an_image_sees_the_image_and_nothing_of_the_machine(tmp_path: Path) -> None:
    require_bubblewrap()
    if not Path("/lib64/ld-linux-x86-64.so.2").exists():
        import pytest

        pytest.skip("the mini image copies this machine's x86-64 glibc")
    base = tmp_path / "base"
    base.mkdir()
    base.chmod(0o755)
    state = base / "state"
    root = _mini_image(base / "rootfs")
    isolation = Isolation.prepare(state, IsolationConfig(network="none"), total_slots=1)
    run = state / "runs" / "alice" / "exp" / "r-0123456789"
    for name in ("work", "out", "logs", "tmp"):
        (run / name).mkdir(parents=True)
    uid = isolation.uids.take("alice") if isolation.uids is not None else None
    if uid is not None:
        chown_tree(run, uid, uid)
    paths = isolation.job_paths(run)
    view = isolation.view(run, paths, paths.work, (), (), root=root)
    plan = isolation.spawn(view, [sys.executable, "-I", "-c", _LOOK], uid=uid, prefix=[])
    child = subprocess.Popen(plan.argv, pass_fds=plan.pass_fds, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env={"STATE": str(state), "PATH": "/usr/bin:/bin"}, start_new_session=True)
    assert plan.args_fd is not None
    os.close(plan.args_fd)
    plan.attach_network(child.pid)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err[-2000:]
    seen = json.loads(out.strip().splitlines()[-1])
    assert seen["marker"] == "only in the image"
    assert seen["bwrap"] is False  # the machine's /usr is not there: the image's is
    assert seen["state"] is False and seen["resolv"] is True
    if uid is not None:
        assert seen["uid"] == uid  # the machine's setpriv, run through its own loader, dropped to the job's uid
