"""What the Slurm executor does beyond the conformance suite, on the cluster of `scripts/services.sh up` (two real
nodes and a third that never comes up):
a job larger than the cluster waits with Slurm's reason and is cancelled cleanly; the capacity counts every node of
a series' partition; the run token reaches the job without being written into its batch script; a job runs in the
job sandbox on its node (it sees neither the console's state folder nor another run, and runs as its account's uid
when the console is root).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from starforge.contract import INGEST_TOKEN_VARIABLE
from starforge.engines import ExecState, LaunchRequest, PoolShape
from starforge.engines.identities import UidPool
from starforge.engines.slurm import SlurmExecutor, SlurmSeries, SlurmSettings
from starforge.engines.slurm.executor import SCRIPT_FILE
from starforge.engines.slurm.script import SANDBOX_ARGS_FILE, TOKEN_FILE
from tests.integration.engines import slurm_env

pytestmark = pytest.mark.slurm

SETTINGS = SlurmSettings(series={"cpu": SlurmSeries(gres=""), "h200": SlurmSeries(gres="gpu", gpus_per_node=8)})


@pytest.fixture
def executor() -> SlurmExecutor:
    return SlurmExecutor(SETTINGS, stop_grace=2.0, env=slurm_env())


def _request(executor: SlurmExecutor, tmp_path: Path, name: str, code: str, *, pools: tuple[PoolShape, ...] = (),
             env: dict[str, str] | None = None) -> LaunchRequest:
    run_dir = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=tmp_path)) / name
    (run_dir / "work").mkdir(parents=True)
    return LaunchRequest(run_id=name, run_dir=run_dir, argv=(sys.executable, "-c", code),
                         env={"PATH": os.environ["PATH"], **(env or {})}, cwd=executor.job_paths(run_dir).work,
                         pools=pools)


def _until(executor: SlurmExecutor, ref: str, done: Callable[[ExecState], bool], timeout: float = 30) -> ExecState:
    deadline = time.monotonic() + timeout
    while True:
        state = executor.poll(ref)
        if done(state):
            return state
        assert time.monotonic() < deadline, f"still {state}"
        time.sleep(0.1)


def test_a_job_larger_than_the_cluster_waits_with_slurms_reason_and_is_cancelled(
        executor: SlurmExecutor, tmp_path: Path) -> None:
    request = _request(executor, tmp_path, "big", "print('never')", pools=(PoolShape("h200", 3, 8),))
    ref = executor.submit(request)
    script = (request.run_dir / SCRIPT_FILE).read_text()
    assert "#SBATCH --nodes=3" in script and "#SBATCH --gres=gpu:8" in script
    # Slurm fills in its reason at its first scheduling pass: the third node of the cluster is never up. Which
    # words it uses depends on the pass (`ReqNodeNotAvail, …`, or its long form naming DOWN and DRAINED nodes).
    node_down = ("ReqNodeNotAvail", "Nodes required for job are DOWN, DRAINED")
    state = _until(executor, ref, lambda s: s.state != "pending" or any(why in s.detail for why in node_down))
    assert state.state == "pending" and state.detail.startswith("Slurm: ")
    assert any(why in state.detail for why in node_down), state.detail
    executor.stop(ref, grace=5)
    state = _until(executor, ref, lambda s: s.finished)
    assert state.state == "exited" and state.exit_code != 0 and not state.reason
    assert executor.logs(ref, 0) == (b"", 0)


def test_capacity_counts_every_node_of_the_partition_up_or_not(executor: SlurmExecutor) -> None:
    capacity = executor.capacity()
    assert capacity["h200"] == 24  # gpu:8 on each of the two nodes that run and on the one that never comes up
    assert capacity["cpu"] > 0


def test_the_run_token_reaches_the_job_but_not_its_batch_script(executor: SlurmExecutor, tmp_path: Path) -> None:
    secret = "tok-" + os.urandom(8).hex()
    digest = hashlib.sha256(secret.encode()).hexdigest()  # the job checks the token without the test naming it
    code = (f"import hashlib, os, sys; token = os.environ[{INGEST_TOKEN_VARIABLE!r}].encode(); "
            f"sys.exit(0 if hashlib.sha256(token).hexdigest() == {digest!r} else 7)")
    request = _request(executor, tmp_path, "token", code, env={INGEST_TOKEN_VARIABLE: secret})
    ref = executor.submit(request)
    assert secret not in (request.run_dir / SCRIPT_FILE).read_text()
    assert stat.S_IMODE((request.run_dir / TOKEN_FILE).stat().st_mode) == 0o600
    state = _until(executor, ref, lambda s: s.finished)
    assert state.state == "exited" and state.exit_code == 0


SPY = """
import json, os, sys
seen = {path: os.path.exists(path) for path in sys.argv[1:]}
print(json.dumps({"uid": os.getuid(), "cwd": os.getcwd(), "seen": seen}), flush=True)
"""


def test_a_job_runs_in_the_sandbox_on_its_node(tmp_path: Path) -> None:
    # outside /tmp: inside the sandbox /tmp is the run's own scratch folder, which would hide anything under it
    base = Path(tempfile.mkdtemp(prefix="sf-spy-", dir="/var/tmp"))
    try:
        _spy_from_a_sandboxed_job(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _spy_from_a_sandboxed_job(tmp_path: Path) -> None:
    storage = tmp_path / "state"
    secret = storage / "console.db"
    other = storage / "runs" / "bob" / "exp" / "r-other" / "out" / "model.bin"
    for path in (secret, other):
        path.parent.mkdir(parents=True)
        path.write_text("not for jobs")
    for folder in (tmp_path, *storage.rglob("*"), storage):  # readable by anyone: only the sandbox hides them
        folder.chmod(0o755 if folder.is_dir() else 0o644)
    run_dir = storage / "runs" / "alice" / "exp" / "r-spy"
    (run_dir / "work").mkdir(parents=True)
    uids = UidPool(61184, 65519) if os.getuid() == 0 else None
    executor = SlurmExecutor(SETTINGS, stop_grace=2.0, env=slurm_env(), storage_root=storage, uids=uids)
    paths = executor.job_paths(run_dir)
    request = LaunchRequest(run_id="r-spy", run_dir=run_dir, owner="alice",
                            argv=(sys.executable, "-c", SPY, str(storage), str(secret), str(other), str(run_dir)),
                            env={"PATH": os.environ["PATH"]}, cwd=paths.work)
    ref = executor.submit(request)
    assert stat.S_IMODE((run_dir / SANDBOX_ARGS_FILE).stat().st_mode) == 0o600
    state = _until(executor, ref, lambda s: s.finished)
    out = executor.logs(ref, 0)[0].decode()
    assert state.state == "exited" and state.exit_code == 0, out
    facts = json.loads(out.strip().splitlines()[-1])
    assert facts["seen"] == {str(storage): False, str(secret): False, str(other): False, str(run_dir): False}
    assert facts["cwd"] == paths.work == "/forge/runs/alice/exp/r-spy/work"
    if uids is not None:
        assert uids.first <= facts["uid"] <= uids.last
        assert not uids._count  # released once Slurm said the job ended
        assert (run_dir / "out").stat().st_uid == 0  # the run's folders are the console's again
