"""The Ray executor: each job is a Ray job submitted through the Jobs API; its output and exit record stay in the run.

A ref is `ray:<submission id>:<run dir>`. The run folder is shared storage: the job sees it at the console's paths,
appends its output to `<run>/logs/output.log` (the entrypoint redirects it there, so `logs()` reads the same file
as on the local executor, before and after a console restart, and even after the Ray head forgot the job) and
writes its exit record to `<run>/logs/exit.json`, which wins over Ray's view of the driver. The submission id is
chosen here and recorded in `<run>/ray.json` before the job is submitted, so submitting a run again never starts it
twice. Stop is Ray's: SIGTERM to the driver and its descendants, SIGKILL once the job's stop wait (the executor's
grace, fixed at submission) has passed. ray is imported only when the executor is built.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
from pathlib import Path
from typing import Any

from ...contract import INGEST_TOKEN_VARIABLE
from ...wire import read_exit_record
from ..base import ExecState, ExecutorError, JobPaths, LaunchRequest
from ..isolation import Isolation
from ..run_log import EXIT_FILE, OUTPUT, TOKEN_FILE, read_log, write_private
from .config import RaySettings
from .submission import render_submission

__all__ = ["RECORD", "RayExecutor", "submission_id_for"]

RECORD = "ray.json"
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
                 storage_root: Path | None = None) -> None:
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
        for node in nodes:
            total = dict(getattr(node, "resources_total", {}) or {})
            for series in settings.cpu_series:
                out[series] = out.get(series, 0) + int(total.get("CPU", 0))
            gpus = int(total.get("GPU", 0))
            for resource in total:
                series = gpu_series.get(resource, "")
                if not series and resource.startswith("accelerator_type:"):
                    series = resource.partition(":")[2].lower()
                if series and gpus:
                    out[series] = out.get(series, 0) + gpus
        return out

    def job_paths(self, run_dir: Path) -> JobPaths:
        """Return the console's own paths: the run folder is on storage every node sees at the same path."""
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
        paths = self.job_paths(run_dir)
        token = request.env.get(INGEST_TOKEN_VARIABLE)
        if token is not None:
            write_private(run_dir / TOKEN_FILE, token, 0o600)
        rendered = render_submission(request, self.settings, submission_id=submission_id,
                                     log_file=f"{paths.logs}/{OUTPUT}", exit_file=f"{paths.logs}/{EXIT_FILE}",
                                     stop_grace=self.stop_grace, requirements=self._requirements(request),
                                     token_file=str(run_dir / TOKEN_FILE) if token is not None else "")
        try:
            self._client.submit_job(**rendered.to_dict())
        except Exception as exc:  # noqa: BLE001 - upload, HTTP and validation errors all mean "not started"
            raise ExecutorError(f"Ray refused the job: {exc}") from exc
        return f"ray:{submission_id}:{run_dir}"

    # watching ------------------------------------------------------------------------------------------------
    def poll(self, ref: str) -> ExecState:
        """Return pending (Ray's message), running, exited (the exit record, else Ray's driver exit) or lost."""
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
            return ExecState("running")
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
