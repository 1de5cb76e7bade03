"""The Slurm executor: each job is a batch script submitted with `sbatch --parsable`, its state read from Slurm.

A ref is `slurm:<job id>:<run dir>`. The run folder is seen by the nodes at the console's own path (a shared
filesystem), so the script, the run token, the output (`<run>/logs/output.log`) and the exit record that
`forge-launch` writes (`<run>/logs/exit.json`) are all found from the ref alone, after a console restart too.
State comes from `squeue` while Slurm queues or runs the job, then from `scontrol show job` (kept for MinJobAge),
then from `sacct` when accounting is on; the exit record, when present, decides the exit code. A job Slurm no
longer knows that left no exit record is lost.

With `executors.slurm.sandbox` on (the default), each job starts on its nodes in the job sandbox of cluster nodes
(`node_sandbox.NodeSandbox`, shared with the Ray executor): its options are written to `<run>/sandbox.args` (0600,
never shown to the job) and the job sees its run at /forge/runs/…, in its own network namespace set up on the node by
`jobnet_node` (`executors.slurm.network`: none or egress), which also relays its ingest; on several nodes the helpers
join the ranks through the job fabric, meeting in `<run>/fabric` (0700, made before sbatch); a root console runs it
as its account's uid from the uid pool, recorded in `<run>/slurm-sandbox.json` so that a restarted console holds it
again and releases it once Slurm says it ended.
Ray-on-Slurm jobs stay unsandboxed: their paths are translated back to the console's own.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from ...contract import INGEST_ENDPOINT_VARIABLE, INGEST_TOKEN_VARIABLE
from ...wire import EXIT_FILE_VARIABLE, channel_endpoint, read_exit_record
from ..base import ExecState, ExecutorError, JobPaths, JobRefused, LaunchRequest
from ..identities import UidPool
from ..isolation import Isolation
from ..node_sandbox import FABRIC_FOLDER, NodeSandbox, console_side, fabric_folder, submitting
from ..run_log import EXIT_FILE, TOKEN_FILE, fresh_log, read_log, write_private
from .config import SlurmSettings
from .script import SlurmJob, SlurmPool, render_batch
from .states import (
    SACCT_FIELDS,
    SQUEUE_FORMAT,
    SlurmJobState,
    exit_status,
    map_state,
    parse_sacct,
    parse_squeue,
    waiting_text,
)

__all__ = ["FABRIC_FOLDER", "SANDBOX_RECORD", "SCRIPT_FILE", "SlurmExecutor"]

SCRIPT_FILE = "slurm.sh"  # in the run folder, mode 0700: the batch script as submitted
SANDBOX_RECORD = "slurm-sandbox.json"  # in the run folder: the job's uid and owner, and whether it was released
_TIMEOUT = 30.0  # seconds a Slurm command may take before the engine counts as unreachable
_STOP_POLL = 0.2  # seconds between two checks of a stopping job
_INVALID_ID = "Invalid job id specified"
# sbatch errors that no amount of waiting cures: the job is refused with Slurm's message
_NEVER = ("Requested node configuration is not available", "Invalid partition", "Invalid account",
          "Invalid qos", "Invalid generic resource", "Invalid feature specification", "Requested time limit is invalid",
          "More processors requested than permitted", "Node count specification invalid",
          "Job violates accounting/QOS policy", "Invalid job array specification")
# Slurm states that mean the engine itself ended the job (a limit, a node): they become the job's failure reason
_ENGINE_ENDED = {"NODE_FAIL", "OUT_OF_MEMORY", "TIMEOUT", "BOOT_FAIL", "DEADLINE", "PREEMPTED", "REVOKED"}
_BASE_ENV = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ", "SLURM_CONF")
_KEY_VALUE = re.compile(r"(\w+)=(\S*)")


def _parse_ref(ref: str) -> tuple[str, Path]:
    kind, job_id, run_dir = ref.split(":", 2)
    if kind != "slurm" or not job_id.isdigit():
        raise ValueError(f"not a Slurm executor ref: {ref}")
    return job_id, Path(run_dir)


def _interpreter(argv: tuple[str, ...]) -> str:
    return argv[0] if argv and os.path.basename(argv[0]).startswith("python") else "python3"


class SlurmExecutor:
    """Run jobs on the Slurm cluster whose commands are on PATH (or in `env`, e.g. SLURM_CONF).

    `settings` maps series onto partitions and shapes the scripts; `stop_grace` is the grace period of the stops
    the executor starts itself; `env` is added to the environment of every Slurm command.
    """

    name = "slurm"

    def __init__(self, settings: SlurmSettings, *, stop_grace: float = 10.0,
                 env: Mapping[str, str] | None = None, storage_root: Path | None = None,
                 uids: UidPool | None = None) -> None:
        self.settings = settings
        self.stop_grace = stop_grace
        self.storage_root = storage_root  # the console's state folder: runs/ lies beneath it
        self._env = {**{k: os.environ[k] for k in _BASE_ENV if k in os.environ}, **(env or {})}
        self._sacct: bool | None = None  # None: not tried yet; False: accounting is off on this cluster
        # the job sandbox on the nodes (None: `sandbox: off`)
        self.sandbox = NodeSandbox(storage_root, uids, settings.network, record=SANDBOX_RECORD) \
            if settings.sandbox else None

    # Slurm commands ------------------------------------------------------------------------------------------
    def _run(self, *argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(list(argv), capture_output=True, text=True, timeout=_TIMEOUT, env=self._env,
                                  cwd=cwd, stdin=subprocess.DEVNULL, check=False)
        except subprocess.TimeoutExpired as exc:
            raise ExecutorError(f"Slurm did not answer: `{argv[0]}` took more than {_TIMEOUT:.0f}s") from exc
        except OSError as exc:
            raise ExecutorError(f"cannot run `{argv[0]}` (is Slurm installed on the console's machine?): "
                                f"{exc.strerror}") from exc

    @staticmethod
    def _message(done: subprocess.CompletedProcess[str]) -> str:
        text = (done.stderr or done.stdout).strip()
        return text.splitlines()[-1] if text else f"exit status {done.returncode}"

    def _squeue(self, ids: list[str]) -> dict[str, SlurmJobState]:
        done = self._run("squeue", "-h", "-o", SQUEUE_FORMAT, f"--jobs={','.join(ids)}")
        if done.returncode != 0:
            if _INVALID_ID in done.stderr:  # a single id Slurm no longer knows
                return {}
            raise ExecutorError(f"squeue failed: {self._message(done)}")
        return parse_squeue(done.stdout)

    def _scontrol(self, job_id: str) -> dict[str, str] | None:
        done = self._run("scontrol", "-o", "show", "job", job_id)
        if done.returncode != 0:
            if _INVALID_ID in done.stderr:
                return None
            raise ExecutorError(f"scontrol failed: {self._message(done)}")
        line = done.stdout.strip().splitlines()[0] if done.stdout.strip() else ""
        return dict(_KEY_VALUE.findall(line)) if line else None

    def _sacct_state(self, job_id: str) -> SlurmJobState | None:
        if self._sacct is False:
            return None
        done = self._run("sacct", "-n", "-P", "-o", SACCT_FIELDS, "-j", job_id)
        if done.returncode != 0:
            self._sacct = False  # accounting is optional: without it, scontrol and the exit record tell
            return None
        self._sacct = True
        return parse_sacct(done.stdout).get(job_id)

    # starting ------------------------------------------------------------------------------------------------
    def capacity(self) -> dict[str, int]:
        """Return the slots of each configured series: its GRES count (or CPUs) over every node of its partition, or
        what `executors.slurm.capacity` says instead."""
        if self.settings.capacity:
            return dict(self.settings.capacity)
        done = self._run("sinfo", "-h", "-N", "-o", "%N|%P|%G|%c")
        if done.returncode != 0:
            raise ExecutorError(f"sinfo failed: {self._message(done)}")
        rows: list[tuple[str, str, int]] = []  # (partition, GRES, CPUs) of each node in each of its partitions
        default = ""
        for line in done.stdout.splitlines():
            fields = line.strip().split("|")
            if len(fields) != 4:
                continue
            _node, partition, gres, cpus = fields
            if partition.endswith("*"):
                partition = default = partition[:-1]
            rows.append((partition, gres, int(cpus) if cpus.isdigit() else 0))
        out: dict[str, int] = {}
        for series_name, series in self.settings.series.items():
            wanted = series.partition or default
            total = 0
            for partition, gres, node_cpus in rows:
                if partition != wanted:
                    continue
                total += _gres_count(gres, series.gres) if series.gres else node_cpus
            if total:
                out[series_name] = total
        return out

    def job_paths(self, run_dir: Path) -> JobPaths:
        """Return where the job sees its run: under /forge in the sandbox, else the console's own paths (the nodes
        see the run folder where the console keeps it)."""
        if self.sandbox is not None:
            return self.sandbox.job_paths(run_dir)
        return Isolation.none(self.storage_root).job_paths(run_dir)

    def _job(self, request: LaunchRequest, env: dict[str, str], sandbox: str = "") -> SlurmJob:
        if request.pools:
            pools = tuple(SlurmPool(p.series, p.nodes, p.per_node) for p in request.pools)
        elif request.devices:
            pools = tuple(SlurmPool(series, 1, count) for series, count in request.devices.items())
        else:
            pools = (SlurmPool("cpu", 1, 1),)
        return SlurmJob(run_id=request.run_id, name=f"sf-{request.run_id}", run_dir=str(request.run_dir),
                        logs=str(request.run_dir / "logs"), argv=request.argv, env=env, cwd=request.cwd, pools=pools,
                        time_limit_seconds=request.limits.wall_seconds, image=request.image,
                        uses_ray=self.settings.uses_ray(request.framework), python=_interpreter(request.argv),
                        sandbox=sandbox)

    def _gpus_per_node(self, request: LaunchRequest) -> int:
        sizes = [max(p.per_node, self.settings.series_for(p.series).gpus_per_node) for p in request.pools
                 if self.settings.series_for(p.series).gres]
        sizes += [count for series, count in request.devices.items()
                  if not request.pools and self.settings.series_for(series).gres]
        return max(sizes, default=0)

    def submit(self, request: LaunchRequest) -> str:
        """Write the batch script (and the run token, 0600) into the run folder and submit it with sbatch.

        Sandboxed, bubblewrap's options go to `<run>/sandbox.args` and the job's folders to its uid (root console).
        """
        run_dir = request.run_dir
        for name in ("work", "out", "logs"):
            (run_dir / name).mkdir(parents=True, exist_ok=True)
        (run_dir / "logs" / EXIT_FILE).unlink(missing_ok=True)
        fresh_log(run_dir)  # appended to outside the sandbox: never through what an earlier attempt planted there
        (run_dir / SANDBOX_RECORD).unlink(missing_ok=True)
        box = self.sandbox
        sandboxed = box is not None and not self.settings.uses_ray(request.framework)
        if box is not None and not sandboxed and os.getuid() == 0:
            raise JobRefused(f"{request.framework} recipes start a Ray world, which cannot run in the job sandbox on "
                             "Slurm nodes, and this console submits as root: the job would run as root. Run the console "
                             "as an unprivileged service account, or set executors.slurm.sandbox: off to accept it")
        if request.image_root is not None and not sandboxed and self.settings.container == "none":
            raise JobRefused(f"the job runs in the image {request.image}, which needs the job sandbox on the nodes "
                             "(executors.slurm.sandbox) or a container mode (executors.slurm.container: pyxis or "
                             "apptainer): it would run on the nodes' own system instead")
        if box is not None and not sandboxed:  # a Ray world runs unsandboxed: where the job was told /forge/…
            request = console_side(request, box.job_paths(run_dir), self.storage_root)
        exit_file = f"{self.job_paths(run_dir).logs if sandboxed else run_dir / 'logs'}/{EXIT_FILE}"
        env = {**request.env, EXIT_FILE_VARIABLE: exit_file}
        token = env.get(INGEST_TOKEN_VARIABLE)
        if token is not None:
            env[INGEST_TOKEN_VARIABLE] = ""  # the script reads it from TOKEN_FILE; never written into the script
        console = env.get(INGEST_ENDPOINT_VARIABLE, "")
        if sandboxed and console:
            env[INGEST_ENDPOINT_VARIABLE] = channel_endpoint()  # its own network: the console only by its channel
        uid = box.take(request.owner) if sandboxed and box is not None else None
        with submitting(box, run_dir, uid):
            if sandboxed and box is not None:
                inside = box.prepare(request, uid, gpus_per_node=self._gpus_per_node(request))
                helper = box.helper(console, image=request.image_root is not None)
                job = replace(self._job(request, env, box.bwrap), argv=tuple(inside), network_helper=helper)
                if sum(pool.nodes for pool in job.pools) > 1:
                    job = replace(job, fabric=str(fabric_folder(run_dir)))
            else:
                job = self._job(request, env)
            script = render_batch(job, self.settings)
            if token is not None:
                write_private(run_dir / TOKEN_FILE, token, 0o600)
            write_private(run_dir / SCRIPT_FILE, script, 0o700)
            if box is not None:
                box.started(run_dir, uid, request.owner)
            # sbatch's folder becomes SLURM_SUBMIT_DIR in the job's environment: a sandboxed job never learns where
            # the console keeps its runs
            done = self._run("sbatch", "--parsable", str(run_dir / SCRIPT_FILE),
                             cwd=Path("/") if sandboxed else run_dir)
            if done.returncode != 0:
                message = self._message(done)
                if any(text in message for text in _NEVER):
                    raise JobRefused(f"Slurm refuses the job: {message}")
                raise ExecutorError(f"sbatch failed: {message}")
            job_id = done.stdout.strip().split(";", 1)[0]
            if not job_id.isdigit():
                raise ExecutorError(f"sbatch answered {done.stdout.strip()!r}, not a job id")
        return f"slurm:{job_id}:{run_dir}"

    # watching ------------------------------------------------------------------------------------------------
    def _states(self, refs: list[str]) -> dict[str, ExecState]:
        parsed = {ref: _parse_ref(ref) for ref in refs}
        queued = self._squeue(sorted({job_id for job_id, _ in parsed.values()})) if parsed else {}
        states = {ref: self._state(job_id, run_dir, queued.get(job_id)) for ref, (job_id, run_dir) in parsed.items()}
        if self.sandbox is not None:
            for ref, (_job_id, run_dir) in parsed.items():
                self.sandbox.settle(run_dir, states[ref])
        return states

    def _state(self, job_id: str, run_dir: Path, queued: SlurmJobState | None) -> ExecState:
        if queued is not None and queued.status == "pending":
            return ExecState("pending", detail=waiting_text(queued.reason))
        if queued is not None and queued.status == "running":
            return ExecState("running", detail=queued.reason)
        record, problems = read_exit_record(run_dir / "logs" / EXIT_FILE)
        slurm_state, code, sig, engine_reason, detail = "", None, None, "", ""
        shown = self._scontrol(job_id)
        if shown is not None:
            slurm_state = shown.get("JobState", "")
            mapped = map_state(slurm_state, shown.get("Reason", ""))
            if mapped.status == "pending":
                return ExecState("pending", detail=waiting_text(mapped.reason))
            if mapped.status == "running":
                return ExecState("running", detail=mapped.reason)
            code, sig = exit_status(shown.get("ExitCode", ""))
            detail = mapped.reason
            engine_reason = mapped.reason if slurm_state.upper() in _ENGINE_ENDED else ""
        else:
            accounted = self._sacct_state(job_id)
            if accounted is not None:
                if accounted.status in ("pending", "running"):
                    return ExecState(accounted.status, detail=accounted.reason)
                code, sig, detail = accounted.exit_code, accounted.signal, accounted.reason
                slurm_state = accounted.status
                engine_reason = accounted.reason if accounted.status == "failed" and \
                    not accounted.reason.startswith("the job failed on the cluster") else ""
        if record is not None and record.exit_code == 0 and code and shown is not None \
                and shown.get("NumNodes", "1") not in ("", "1"):
            # several nodes: rank 0 succeeded, another rank failed (Slurm's exit status is the failing task's)
            return ExecState("exited", exit_code=code, detail=detail or "a rank on another node failed",
                             reason=engine_reason)
        if record is not None:
            return ExecState("exited", exit_code=record.exit_code, signal=record.signal, detail=detail,
                             reason=engine_reason)
        if not slurm_state:
            if any(problem.code == "not_an_object" for problem in problems):
                return ExecState("lost", detail="the job's exit record is malformed")
            return ExecState("lost", detail=f"Slurm no longer knows job {job_id} and it left no exit record")
        if sig:
            return ExecState("exited", exit_code=128 + sig, signal=sig, detail=detail, reason=engine_reason)
        if code == 0 and map_state(slurm_state, "").status == "stopped":
            # cancelled before it could say anything: not a success
            return ExecState("exited", exit_code=None, signal=15, detail=detail, reason=engine_reason)
        return ExecState("exited", exit_code=code, detail=detail, reason=engine_reason)

    def poll(self, ref: str) -> ExecState:
        """Return pending (with Slurm's reason), running, exited (exit code or signal, and Slurm's reason) or lost."""
        return self._states([ref])[ref]

    def poll_many(self, refs: list[str]) -> dict[str, ExecState]:
        """Return the state of every ref from one squeue (scontrol only for jobs that left the queue)."""
        return self._states(refs)

    def logs(self, ref: str, offset: int) -> tuple[bytes, int]:
        """Return the output written since `offset`."""
        _job_id, run_dir = _parse_ref(ref)
        return read_log(run_dir, offset)

    # stopping ------------------------------------------------------------------------------------------------
    def _queued(self, job_id: str) -> SlurmJobState | None:
        return self._squeue([job_id]).get(job_id)

    def _scancel(self, *args: str) -> None:
        with contextlib.suppress(ExecutorError):
            self._run("scancel", *args)

    def stop(self, ref: str, grace: float) -> None:
        """SIGTERM to every process of the job (batch script and steps); SIGKILL if it still runs after `grace` s.

        A job that still waits in the queue is simply cancelled.
        """
        job_id, _run_dir = _parse_ref(ref)
        queued = self._queued(job_id)
        if queued is None:
            return
        if queued.status == "pending":
            self._scancel(job_id)
            return
        self._scancel("--signal=TERM", "--full", job_id)

        def escalate() -> None:
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline:
                with contextlib.suppress(ExecutorError):
                    if self._queued(job_id) is None:
                        return
                time.sleep(_STOP_POLL)
            self._scancel("--signal=KILL", "--full", job_id)  # Slurm cancels the job with it (exit signal 9)

        threading.Thread(target=escalate, name=f"stop-slurm-{job_id}", daemon=True).start()

    def reconcile(self, refs: list[str]) -> dict[str, ExecState]:
        """Return the state of each ref after a restart (one squeue for all; Slurm keeps running what runs)."""
        return self.poll_many(refs)


def _gres_count(text: str, wanted: str) -> int:
    """Return how many units of GRES `wanted` (`gpu`, or typed `gpu:h200`) sinfo's `%G` text declares."""
    name, _, kind = wanted.partition(":")
    total = 0
    for item in re.split(r",(?![^(]*\))", text):
        parts = item.split("(", 1)[0].split(":")
        if parts[0] != name or len(parts) < 2:
            continue
        count = parts[-1]
        item_kind = parts[1] if len(parts) == 3 else ""
        if kind and item_kind != kind:
            continue
        if count.isdigit():
            total += int(count)
    return total
