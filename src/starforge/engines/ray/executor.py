"""The Ray executor: each job is a Ray job submitted through the Jobs API; its output and exit record stay in the run.

A ref is `ray:<submission id>:<run dir>`. The run folder is shared storage: the job sees it at the console's paths,
appends its output to `<run>/logs/output.log` (the entrypoint redirects it there, so `logs()` reads the same file
as on the local executor, before and after a console restart, and even after the Ray head forgot the job) and
writes its exit record to `<run>/logs/exit.json`, which wins over Ray's view of the driver. The submission id is
chosen here and recorded in `<run>/ray.json` before the job is submitted, so submitting a run again never starts it
twice. Stop is Ray's: SIGTERM to the driver and its descendants, SIGKILL once the job's stop wait (the executor's
grace, fixed at submission) has passed. ray is imported only when the executor is built.

With `executors.ray.sandbox` on (the default), a job runs in the job sandbox of its node, as on Slurm
(`node_sandbox.NodeSandbox`): it sees its run at /forge/runs/…, in its own network namespace (`executors.ray.network`)
whose only way to the console is the node helper's channel, in its image when it names one, and, with a root Ray,
as its account's uid from the pool (recorded in `<run>/ray-sandbox.json`, released once Ray says it ended). A job on
several nodes (not a Ray-based framework) is a gang: its entrypoint is the gang launcher (`gang`), which reserves its
nodes all at once and runs one rank on each; until every rank runs, the job is pending with the launcher's reason
(`<run>/ray-gang-status.json`). Ray-based frameworks run unsandboxed, as Ray's user, their paths the console's own.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from ...contract import INGEST_ENDPOINT_VARIABLE, INGEST_TOKEN_VARIABLE
from ...wire import channel_endpoint, read_exit_record
from ..base import ExecState, ExecutorError, JobPaths, JobRefused, LaunchRequest
from ..identities import UidPool
from ..isolation import Isolation
from ..node_sandbox import (
    SANDBOX_ARGS_FILE,
    NodeSandbox,
    console_side,
    fabric_folder,
    node_command,
    submitting,
)
from ..run_log import EXIT_FILE, OUTPUT, TOKEN_FILE, fresh_log, read_log, write_private
from .config import RaySettings
from .gang import GANG_FILE, GANG_STATUS_FILE
from .submission import Sandboxed, is_gang, placement_for, render_submission

__all__ = ["MASTER_PORT", "RECORD", "SANDBOX_RECORD", "RayExecutor", "submission_id_for"]

RECORD = "ray.json"
SANDBOX_RECORD = "ray-sandbox.json"  # in the run folder: the job's uid and owner, and whether it was released
MASTER_PORT = 29500  # the rendezvous port of a sandboxed gang's rank 0 (on the fabric, the port is the job's own)
_ENDED = ("SUCCEEDED", "FAILED", "STOPPED")


def submission_id_for(run_id: str) -> str:
    """Return a new submission id for run `run_id`: the run id (Ray-safe characters) and a short random suffix."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "-", run_id)[:80] or "run"
    return f"sf-{safe}-{secrets.token_hex(3)}"


def _parse_ref(ref: str) -> tuple[str, Path]:
    kind, submission_id, run_dir = ref.split(":", 2)
    if kind != "ray":
        raise ValueError(f"not a Ray executor ref: {ref}")
    return submission_id, Path(run_dir)


class RayExecutor:
    """Run jobs on the Ray cluster whose Jobs API (dashboard) answers at `address`."""

    name = "ray"

    def __init__(self, settings: RaySettings, address: str, *, stop_grace: float = 10.0,
                 storage_root: Path | None = None, uids: UidPool | None = None) -> None:
        from ray.job_submission import (
            JobSubmissionClient,  # the optional extra `ray`; only this executor needs it
        )

        self.settings = settings
        self.address = address
        self.stop_grace = stop_grace
        self.storage_root = storage_root  # the console's state folder: runs/ lies beneath it
        try:
            self._client: Any = JobSubmissionClient(address)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ExecutorError(f"the Ray Jobs API at {address} does not answer: {exc}") from exc
        self._capacity: dict[str, int] | None = None
        # the job sandbox on the nodes (None: `sandbox: off`)
        self.sandbox = NodeSandbox(storage_root, uids, settings.network, record=SANDBOX_RECORD) \
            if settings.sandbox else None

    # the cluster ---------------------------------------------------------------------------------------------
    def capacity(self) -> dict[str, int]:
        """Return the slots per series: configured, else counted on the cluster's alive nodes (asked once)."""
        if self.settings.capacity:
            return dict(self.settings.capacity)
        if self._capacity is None:
            self._capacity = self._cluster_capacity()
        return dict(self._capacity)

    def _cluster_capacity(self) -> dict[str, int]:
        from ray.util.state import list_nodes

        try:
            nodes = list_nodes(address=self.address, filters=[("state", "=", "ALIVE")], raise_on_missing_output=False)
        except Exception as exc:  # noqa: BLE001 - ray raises many kinds; none must stop the console
            raise ExecutorError(f"cannot list the nodes of the Ray cluster at {self.address}: {exc}") from exc
        settings = self.settings
        gpu_series = {resource: series for series, resource in settings.series_resources.items()}
        out: dict[str, int] = {}
        def add(series: str, slots: int) -> None:
            size = settings.slots_per_node.get(series)
            out[series] = out.get(series, 0) + (min(slots, size) if size else slots)

        for node in nodes:
            total = dict(getattr(node, "resources_total", {}) or {})
            for series in settings.cpu_series:
                add(series, int(total.get("CPU", 0)))
            gpus = int(total.get("GPU", 0))
            for resource in total:
                series = gpu_series.get(resource, "")
                if not series and resource.startswith("accelerator_type:"):
                    series = resource.partition(":")[2].lower()
                if series and gpus:
                    add(series, gpus)
        return out

    def job_paths(self, run_dir: Path) -> JobPaths:
        """Return where the job sees its run: under /forge in the sandbox, else the console's own paths (the run
        folder is on storage every node sees at the same path)."""
        if self.sandbox is not None:
            return self.sandbox.job_paths(run_dir)
        return Isolation.none(self.storage_root).job_paths(run_dir)

    # starting ------------------------------------------------------------------------------------------------
    def _status(self, submission_id: str) -> Any | None:
        """Return Ray's JobInfo of a submission, None when Ray does not know it; raise ExecutorError if unreachable."""
        try:
            return self._client.get_job_info(submission_id)
        except RuntimeError as exc:
            if "does not exist" in str(exc) or "404" in str(exc):
                return None
            raise ExecutorError(f"the Ray Jobs API at {self.address} failed: {exc}") from exc
        except (ConnectionError, OSError) as exc:
            raise ExecutorError(f"the Ray Jobs API at {self.address} does not answer: {exc}") from exc

    def _requirements(self, request: LaunchRequest) -> tuple[str, ...]:
        if self.settings.shared_runtime or not request.runtime:
            return ()
        from ..runtimes.record import read_record

        record = read_record(request.runtime[0])  # the venv comes first among the runtime's folders
        if record is None:
            raise ExecutorError(f"the runtime at {request.runtime[0]} has no build record: its requirements are "
                                "unknown, and executors.ray.shared_runtime is false")
        return record.requirements

    def submit(self, request: LaunchRequest) -> str:
        """Submit the job under a submission id recorded first in the run folder; return `ray:<id>:<run dir>`."""
        run_dir = request.run_dir
        for name in ("work", "out", "logs"):
            (run_dir / name).mkdir(parents=True, exist_ok=True)
        record_path = run_dir / RECORD
        submission_id = ""
        with contextlib.suppress(OSError, ValueError, AttributeError):
            submission_id = str(json.loads(record_path.read_text(encoding="utf-8")).get("submission_id", ""))
        if submission_id:
            known = self._status(submission_id)
            if known is not None and str(known.status) not in _ENDED:
                return f"ray:{submission_id}:{run_dir}"  # submitted before the console could store the ref
            if known is not None:
                submission_id = ""  # an ended attempt: this is a new one
        submission_id = submission_id or submission_id_for(request.run_id)
        tmp = record_path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"submission_id": submission_id}), encoding="utf-8")
        os.replace(tmp, record_path)
        (run_dir / "logs" / EXIT_FILE).unlink(missing_ok=True)
        fresh_log(run_dir)  # appended to outside the sandbox: never through what an earlier attempt planted there
        (run_dir / SANDBOX_RECORD).unlink(missing_ok=True)
        for stale in (GANG_FILE, GANG_STATUS_FILE):  # a previous attempt's gang
            (run_dir / stale).unlink(missing_ok=True)
        self._check_sizes(request)
        box = self.sandbox
        sandboxed = box is not None and not self.settings.uses_ray(request.framework)
        if request.image_root is not None and not sandboxed:
            raise JobRefused(f"the job runs in the image {request.image}, which needs the job sandbox on the Ray nodes "
                             "(executors.ray.sandbox; Ray-based frameworks run unsandboxed): it would run on the "
                             "nodes' own system instead")
        if box is not None and not sandboxed:  # a Ray world runs unsandboxed: where the job was told /forge/…
            request = console_side(request, box.job_paths(run_dir), self.storage_root)
        paths = self.job_paths(run_dir) if sandboxed else Isolation.none(self.storage_root).job_paths(run_dir)
        token = request.env.get(INGEST_TOKEN_VARIABLE)
        if token is not None:
            write_private(run_dir / TOKEN_FILE, token, 0o600)
        console = request.env.get(INGEST_ENDPOINT_VARIABLE, "")
        if sandboxed and console:  # its own network: the console only by its channel
            request = replace(request, env={**request.env, INGEST_ENDPOINT_VARIABLE: channel_endpoint()})
        gang = is_gang(request, self.settings)
        uid = box.take(request.owner) if sandboxed and box is not None else None
        token_file = str(run_dir / TOKEN_FILE) if token is not None else ""
        log_file = f"{run_dir}/logs/{OUTPUT}"  # the entrypoint's side: the console's own paths
        with submitting(box, run_dir, uid):
            sandbox: Sandboxed | None = None
            helper: tuple[str, ...] = ()
            inside: list[str] = []
            if sandboxed and box is not None:
                inside = box.prepare(request, uid, gpus_per_node=self._gpus_per_node(request))
                helper = box.helper(console, image=request.image_root is not None)
                sandbox = Sandboxed(tuple(node_command(helper, box.bwrap, inside)), str(run_dir / SANDBOX_ARGS_FILE))
            gang_file = ""
            if gang:
                gang_file = self._write_gang(request, sandboxed=sandboxed, helper=helper, inside=inside,
                                             log_file=log_file, token_file=token_file)
            rendered = render_submission(request, self.settings, submission_id=submission_id, log_file=log_file,
                                         exit_file=f"{paths.logs}/{EXIT_FILE}", stop_grace=self.stop_grace,
                                         requirements=self._requirements(request), token_file=token_file,
                                         sandboxed=sandbox if not gang else None, gang_file=gang_file,
                                         python=sys.executable)
            if box is not None:
                box.started(run_dir, uid, request.owner)
            try:
                self._client.submit_job(**rendered.to_dict())
            except Exception as exc:  # noqa: BLE001 - upload, HTTP and validation errors all mean "not started"
                raise ExecutorError(f"Ray refused the job: {exc}") from exc
        return f"ray:{submission_id}:{run_dir}"

    def _check_sizes(self, request: LaunchRequest) -> None:
        for pool in request.pools:
            size = self.settings.slots_per_node.get(pool.series)
            if size and pool.per_node > size:
                raise JobRefused(f"the {pool.series} pool asks {pool.per_node} slots per node, but a {pool.series} "
                                 f"node offers {size} (executors.ray.slots_per_node.{pool.series})")

    def _gpus_per_node(self, request: LaunchRequest) -> int:
        return max((p.per_node for p in request.pools if not self.settings.is_cpu(p.series)), default=0)

    def _write_gang(self, request: LaunchRequest, *, sandboxed: bool, helper: tuple[str, ...], inside: list[str],
                    log_file: str, token_file: str) -> str:
        """Write what the gang launcher runs to `<run>/ray-gang.json` (0600; paths, never the token); return it."""
        run_dir = request.run_dir
        placement = placement_for(request.pools, self.settings)
        fabric = str(fabric_folder(run_dir)) if sandboxed else ""
        spec = {"run_id": request.run_id, "bundles": placement["bundles"], "per_node": request.pools[0].per_node,
                "sandboxed": sandboxed, "helper": list(helper), "bwrap": self.sandbox.bwrap if self.sandbox else "",
                "inside": inside, "args_file": str(run_dir / SANDBOX_ARGS_FILE), "argv": list(request.argv),
                "cwd": "/" if sandboxed else request.cwd, "log_file": log_file, "token_file": token_file,
                "token_variable": INGEST_TOKEN_VARIABLE, "exit_record": str(run_dir / "logs" / EXIT_FILE),
                "status_file": str(run_dir / GANG_STATUS_FILE), "grace": self.stop_grace, "fabric": fabric,
                "master_port": MASTER_PORT}
        path = run_dir / GANG_FILE
        write_private(path, json.dumps(spec, indent=1), 0o600)
        return str(path)

    # watching ------------------------------------------------------------------------------------------------
    def poll(self, ref: str) -> ExecState:
        """Return pending (Ray's message, or the gang launcher's while it waits for its nodes), running, exited (the
        exit record, else Ray's driver exit) or lost."""
        state = self._poll(ref)
        if self.sandbox is not None:
            self.sandbox.settle(_parse_ref(ref)[1], state)
        return state

    def _poll(self, ref: str) -> ExecState:
        submission_id, run_dir = _parse_ref(ref)
        try:
            info = self._status(submission_id)
        except ExecutorError as exc:
            return ExecState("pending", detail=str(exc))  # unreachable: neither ended nor known to run; ask again
        if info is None:
            return self._from_exit_file(run_dir, "Ray does not know the job (its head was replaced?) and the job "
                                                 "left no exit record")
        status = str(getattr(info.status, "value", info.status))
        if status == "PENDING":
            return ExecState("pending", detail=(info.message or "waiting for resources").strip().splitlines()[0])
        if status == "RUNNING":
            return _gang_state(run_dir) or ExecState("running")
        record, _problems = read_exit_record(run_dir / "logs" / EXIT_FILE)
        if record is not None:
            return ExecState("exited", exit_code=record.exit_code, signal=record.signal)
        if status == "STOPPED":  # Ray's supervisor escalated to SIGKILL (a job that handled SIGTERM leaves a record)
            return ExecState("exited", exit_code=137, signal=9, detail="stopped through Ray")
        code = info.driver_exit_code
        if code is None:
            message = (info.message or "").strip().splitlines()
            return ExecState("exited", exit_code=1, detail=f"Ray: {status}",
                             reason=f"Ray could not run the job: {message[0] if message else status}")
        if code < 0:
            return ExecState("exited", exit_code=128 - code, signal=-code)
        return ExecState("exited", exit_code=code)

    @staticmethod
    def _from_exit_file(run_dir: Path, missing: str) -> ExecState:
        record, _problems = read_exit_record(run_dir / "logs" / EXIT_FILE)
        if record is not None:
            return ExecState("exited", exit_code=record.exit_code, signal=record.signal)
        return ExecState("lost", detail=missing)

    def logs(self, ref: str, offset: int) -> tuple[bytes, int]:
        """Return the output written since `offset` (the run's log file, as on the local executor)."""
        _submission_id, run_dir = _parse_ref(ref)
        return read_log(run_dir, offset)

    def stop(self, ref: str, grace: float) -> None:
        """Ask Ray to stop the job: SIGTERM now, SIGKILL after the stop wait set at submission (the executor's grace).

        Ray reads that wait from the job's environment when it starts it, so `grace` cannot change it afterwards.
        """
        submission_id, _run_dir = _parse_ref(ref)
        try:
            self._client.stop_job(submission_id)
        except RuntimeError as exc:
            if "does not exist" not in str(exc):
                raise ExecutorError(f"Ray could not stop {submission_id}: {exc}") from exc

    def poll_many(self, refs: list[str]) -> dict[str, ExecState]:
        """Return the state of each ref (the Jobs API answers one submission at a time)."""
        return {ref: self.poll(ref) for ref in refs}

    def reconcile(self, refs: list[str]) -> dict[str, ExecState]:
        """Return the state of each ref after a restart, from the Jobs API and the runs' exit records."""
        return self.poll_many(refs)


def _gang_state(run_dir: Path) -> ExecState | None:
    """Return pending with the gang launcher's reason until all of a gang's ranks run (None: not a gang job)."""
    if not (run_dir / GANG_FILE).exists():
        return None
    try:
        said = json.loads((run_dir / GANG_STATUS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ExecState("pending", detail="Ray: the gang launcher is reserving the job's nodes")
    if not isinstance(said, dict) or said.get("state") == "waiting":
        message = str(said.get("message", "")) if isinstance(said, dict) else ""
        return ExecState("pending", detail=f"Ray: {message or 'waiting for the job nodes'}")
    return ExecState("running")
