"""Benchmark: what the job sandbox adds to starting a job (target: p50 overhead ≤ 50 ms per job).

Starts the same tiny Python program 20 times directly and 20 times in the sandbox the local executor uses (the
whole view: system, runtime, run folders, private /tmp; per-job uid when run as root; its own network, attached as
the executor attaches it), and compares medians.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from starforge.engines.identities import chown_tree  # noqa: E402
from starforge.engines.isolation import Isolation, IsolationConfig, SpawnPlan  # noqa: E402

TARGET_MS = 50.0
SAMPLES = 20
PROGRAM = [sys.executable, "-c", "import sys"]


def _timed(argv: list[str], *, pass_fds: tuple[int, ...] = (), cwd: str | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, pass_fds=pass_fds, cwd=cwd, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def _timed_job(plan: SpawnPlan, cwd: str) -> float:
    """Start the plan as the local executor does (its network set up once bubblewrap runs) and wait for it."""
    start = time.perf_counter()
    proc = subprocess.Popen(plan.argv, pass_fds=plan.pass_fds, cwd=cwd, stdout=subprocess.DEVNULL,
                            start_new_session=True, close_fds=True)
    stack = plan.attach_network(proc.pid)
    if proc.wait() != 0:
        raise SystemExit(f"the sandboxed program failed ({proc.returncode})")
    elapsed = time.perf_counter() - start
    if stack is not None:
        stack.wait()
    return elapsed


def main() -> int:
    if shutil.which("bwrap") is None:
        print("bubblewrap is not installed: nothing to measure (scripts/services.sh up installs it)")
        return 0
    root = Path(tempfile.mkdtemp(prefix="sf-bench-sandbox-"))
    try:
        isolation = Isolation.prepare(root, IsolationConfig(), total_slots=2)
        run_dir = root / "runs" / "bench" / "exp" / "r-0000000000"
        for name in ("work", "out", "logs", "tmp"):
            (run_dir / name).mkdir(parents=True)
        uid = isolation.uids.take() if isolation.uids else None
        if uid is not None:
            chown_tree(run_dir, uid, uid)
        paths = isolation.job_paths(run_dir)
        view = isolation.view(run_dir, paths, paths.work, (), ())
        direct, boxed = [], []
        for _ in range(SAMPLES):
            direct.append(_timed(PROGRAM))
            plan = isolation.spawn(view, PROGRAM, uid=uid, prefix=[])
            try:
                boxed.append(_timed_job(plan, str(run_dir)))
            finally:
                if plan.args_fd is not None:
                    os.close(plan.args_fd)
        overhead = (statistics.median(boxed) - statistics.median(direct)) * 1000
        print(f"start of a tiny Python job ({SAMPLES} each): direct p50 {statistics.median(direct) * 1000:.1f} ms, "
              f"sandboxed p50 {statistics.median(boxed) * 1000:.1f} ms ({isolation.describe()})")
        verdict = "MEETS" if overhead <= TARGET_MS else "MISSES"
        print(f"sandbox overhead p50 {overhead:.1f} ms — target ≤ {TARGET_MS:.0f} ms: {verdict}")
        return 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
