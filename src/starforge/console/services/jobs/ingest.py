"""Ingest from running jobs (wire-protocol §11): lifecycle, logs, metrics, hparams, artifacts, benchmark scores and
reports.

Every call is authorised by the run's own token, which is valid only for its run id and only here.

Tier: use case (one write transaction per call, the token checked first inside it).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from ....contract import Problem
from ....wire import (
    ARTIFACT_KINDS,
    INGEST_PATHS,
    LIFECYCLE_EVENTS,
    PATH_ARTIFACT,
    PATH_BENCHMARK,
    PATH_CONTROL,
    PATH_LIFECYCLE,
    PATH_LOGS,
    PATH_METRICS,
)
from ...store.models import Job, JobEvent
from ..accounts import credentials as accounts
from ..benchmarks import scores as benchmark_scores
from ..context import Runtime
from ..errors import Forbidden, NotFound, Rejected
from ..logs import store as logs
from ..registries import artifacts
from . import metrics
from .interrupts import control_answer

__all__ = ["ingest"]


def _bad(field: str, message: str) -> Rejected:
    return Rejected("Invalid ingest call", [Problem(field, "invalid_request", message)])


_MAX_STEP = 2**31 - 1
_STORED = (PATH_LIFECYCLE, PATH_METRICS, PATH_ARTIFACT, PATH_BENCHMARK)  # the calls that write rows; the others append to files
_MAX_SIZE = 2**63 - 1


def _check_artifact_fields(body: dict[str, Any]) -> None:
    """Refuse artifact fields the store cannot hold (a hostile job must get a 400, never a server error)."""
    where, fmt, step, size = body.get("path"), body.get("format"), body.get("step"), body.get("size_bytes")
    if isinstance(where, str) and ("\x00" in where or len(where) > 4096):
        raise _bad("path", "the path holds a NUL character or is longer than 4096 characters")
    if fmt is not None and (not isinstance(fmt, str) or len(fmt) > 64 or "\x00" in fmt):
        raise _bad("format", "format must be text of at most 64 characters")
    if step is not None and (isinstance(step, bool) or not isinstance(step, int) or not 0 <= step <= _MAX_STEP):
        raise _bad("step", f"step must be an integer from 0 to {_MAX_STEP}")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or not 0 <= size <= _MAX_SIZE):
        raise _bad("size_bytes", "size_bytes must be a non-negative integer")


def ingest(rt: Runtime, path: str, token: str, body: Any) -> dict[str, Any]:
    """Apply one ingest call for the run named in the body, after checking the run token (always first)."""
    run_id = body.get("run_id") if isinstance(body, dict) else None
    # logs and report lines only read the store (the token, the run's folder): they never wait for its write lock
    with (rt.db.write() if path in _STORED else rt.db.read()) as db:
        accounts.authenticate_run(db, token, run_id if isinstance(run_id, str) else None)
        if path not in INGEST_PATHS:
            raise NotFound(f"no ingest endpoint {path}")
        if not isinstance(body, dict) or not isinstance(run_id, str):
            raise _bad("run_id", "the body must be a JSON object with run_id")
        job = db.get(Job, run_id)
        if job is None:
            raise NotFound(f"no run {run_id}")
        if job.profile == benchmark_scores.EXTERNAL_PROFILE and path != PATH_BENCHMARK:
            raise Forbidden("an external evaluation's token reports its scores only (POST …/benchmark)")
        if path == PATH_CONTROL:
            return control_answer(job, grace=rt.settings.preemption.grace_seconds)
        if path == PATH_LIFECYCLE:
            event = body.get("event")
            if event not in LIFECYCLE_EVENTS:
                raise _bad("event", f"event must be one of {', '.join(LIFECYCLE_EVENTS)}")
            detail = {k: v for k, v in body.items() if k not in ("run_id", "event", "ts")}
            reason = f"lifecycle {event}" + (f" {json.dumps(detail, sort_keys=True)}" if detail else "")
            db.add(JobEvent(job_id=run_id, at=time.time(), from_status=job.status, to_status=job.status,
                            reason=reason[:2000]))
            return {"ok": True}
        if path == PATH_METRICS:
            points = body.get("points")
            if not isinstance(points, list):
                raise _bad("points", "points must be a list of {key, step, value, ts}")
            return {"ok": True, "stored": metrics.record_points(db, run_id, points)}
        if path == PATH_BENCHMARK:  # all or nothing: a report with a bad score stores none of it
            return {"ok": True, "written": benchmark_scores.record(db, run_id,
                                                                   benchmark_scores.read_report(run_id, body))}
        if path == PATH_ARTIFACT:
            kind, where = body.get("kind"), body.get("path")
            if kind not in ARTIFACT_KINDS or not isinstance(where, str) or not where:
                raise _bad("kind", f"an artifact needs a kind ({', '.join(ARTIFACT_KINDS)}) and a path")
            _check_artifact_fields(body)
            if not artifacts.is_remote(where):
                located = artifacts.local_path(where, run_dir=job.run_dir,
                                               job_out=rt.job_paths(Path(job.run_dir), job.executor_ref).out) if job.run_dir else None
                if located is None:
                    raise _bad("path", f"{where!r} is not a file or folder inside this run's output folder "
                                       "(FORGE_OUT_DIR); artifacts are registered from there only")
                where = str(located)
            step = body.get("step")
            size = body.get("size_bytes")
            view = artifacts.register(
                db, run_id, kind, where, format=str(body.get("format") or ""),
                step=step if isinstance(step, int) and not isinstance(step, bool) else None,
                size_bytes=size if isinstance(size, int) and not isinstance(size, bool) else None,
                metrics=body.get("metrics") if isinstance(body.get("metrics"), dict) else None,
            )
            return {"ok": True, "ref": view.ref}
        run_dir = job.run_dir
    if path == PATH_LOGS:
        chunks = body.get("chunks")
        if not isinstance(chunks, list) or not all(isinstance(c, str) for c in chunks):
            raise _bad("chunks", "chunks must be a list of strings")
        if run_dir:
            logs.append(rt.logs, run_dir, "".join(chunks))
        return {"ok": True}
    target = rt.jobs_dir(run_id) / (path.replace("/", "_") + ".jsonl")
    target.parent.mkdir(parents=True, exist_ok=True)
    with Path(target).open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(body, ensure_ascii=False) + "\n")
    return {"ok": True}
