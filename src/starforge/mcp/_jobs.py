"""Job operations: submit (spec, bundle, profile, idempotency key), list, show, stop; the console decides all."""

from __future__ import annotations

import base64
import binascii
import uuid
from typing import Any

from starforge.contract import Problem

from ._backend import Backend
from ._errors import BackendError, ToolRefusal
from ._explain import first_pool_series
from ._results import Outcome
from ._shapes import JobRow

__all__ = ["MAX_JOBS", "decode_bundle", "get_job", "list_jobs", "stop_job", "submit_job"]

MAX_JOBS = 200


def _line(job: JobRow) -> str:
    return f"- {job.ref}  {job.status or '?'}  {job.name or job.exp_name or ''}".rstrip()


def decode_bundle(text: str | None) -> bytes | None:
    """Return the bundle bytes of a base64 string (None when absent); refuse text that is not base64."""
    if not text:
        return None
    try:
        return base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ToolRefusal("The bundle was refused", [Problem(
            "bundle_base64", "invalid_request", f"not valid base64: {exc}",
            "send the gzip tar of the experiment's files base64-encoded (standard alphabet), or omit it")]) from None


def submit_job(backend: Backend, *, spec: dict[str, Any], profile: str | None, bundle_base64: str | None,
               exp: str | None, idempotency_key: str | None) -> Outcome:
    """Submit `spec` with its bundle under an idempotency key (generated when absent and returned for retries)."""
    bundle = decode_bundle(bundle_base64)
    chosen = profile or first_pool_series(spec)
    key = idempotency_key or str(uuid.uuid4())
    result = backend.submit(spec, bundle, exp=exp or None, profile=chosen, idempotency_key=key)
    data = {**result.body, "job_id": result.job_id, "run_id": result.run_id, "queued": result.queued,
            "requested_gpus": result.requested_gpus, "warnings": list(result.warnings), "profile": chosen,
            "idempotency_key": key}
    state = "queued" if result.queued else "submitted"
    summary = f"{state} job {result.job_id}" + (f": {result.message}" if result.message else "")
    if result.warnings:
        summary += "\nwarnings:\n" + "\n".join(f"- {w}" for w in result.warnings)
    summary += "\nFollow it with get_job / get_job_logs; stop it with stop_job."
    return Outcome(summary, data)


def list_jobs(backend: Backend, *, limit: int) -> Outcome:
    """Return the caller's newest jobs (each account sees only its own)."""
    jobs = backend.jobs(limit)
    rows = [j.to_dict() for j in jobs]
    note = (f"list truncated at the newest {limit} jobs; older ones may exist (limit goes up to {MAX_JOBS})"
            if len(rows) >= limit else "")
    lines = [_line(j) for j in jobs]
    summary = f"{len(rows)} job(s), newest first" + ("\n" + "\n".join(lines) if lines else ": none yet")
    return Outcome(summary + (f"\n{note}" if note else ""), {"jobs": rows, "count": len(rows), "note": note})


def get_job(backend: Backend, *, job: str) -> Outcome:
    """Return one job (an id, a unique prefix or an experiment name) with the latest value of each metric."""
    found = backend.job(job)
    metrics: dict[str, Any] = {}
    note = ""
    try:
        latest = backend.latest_metrics(found.ref)
        metrics = {k: {"step": p.step, "value": p.value} for k, p in latest.items()}
    except BackendError as exc:
        note = f"metrics unavailable: {exc.title}"
    summary = f"{found.ref} ({found.name or found.exp_name or '?'}): {found.status or 'unknown'}"
    if metrics:
        summary += "\n" + "\n".join(f"- {k} = {v['value']:g} at step {v['step']}" for k, v in sorted(metrics.items()))
    return Outcome(summary, {"job": found.to_dict(), "metrics": metrics, "note": note})


def stop_job(backend: Backend, *, job: str) -> Outcome:
    """Stop a job; stopping a finished one is not an error (`stopped` is then false)."""
    found = backend.job(job)
    result = backend.stop(found.ref)
    status = result.status or found.status
    summary = f"stopped {found.ref}" if result.stopped else f"{found.ref} had already finished ({status})"
    return Outcome(summary, {"job": found.ref, "stopped": result.stopped, "status": status, "raw": result.body})
