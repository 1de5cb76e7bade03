"""Job operations: submit (spec, bundle, profile, idempotency key), list, show, stop, pause, resume, retry; the
console decides all."""

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
from ._shapes import Controlled, JobRow

__all__ = ["MAX_JOBS", "decode_bundle", "get_job", "list_jobs", "pause_job", "resume_job", "retry_job", "stop_job",
           "submit_job"]

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


_LEFT_OUT = ("events", "validations")  # the status history can be long: `get_job_logs` and the web page show it


def _attempts_line(row: dict[str, Any]) -> str:
    attempts = row.get("attempts")
    if not isinstance(attempts, int) or isinstance(attempts, bool) or attempts < 1:
        return ""
    resumed, step = row.get("resumed_from"), row.get("resume_step")
    if isinstance(resumed, str) and resumed:
        at = f" at step {step}" if isinstance(step, int) and not isinstance(step, bool) else ""
        return f"attempt {attempts}, resumed from {resumed}{at}"
    return f"attempt {attempts}"


def get_job(backend: Backend, *, job: str) -> Outcome:
    """Return one job (an id, a unique prefix or an experiment name) as the console details it — its attempts,
    what the current one resumed from, its place while it waits — with the latest value of each metric."""
    found = backend.job_detail(backend.job(job).ref)
    shown = {k: v for k, v in found.to_dict().items() if k not in _LEFT_OUT}
    metrics: dict[str, Any] = {}
    note = ""
    try:
        latest = backend.latest_metrics(found.ref)
        metrics = {k: {"step": p.step, "value": p.value} for k, p in latest.items()}
    except BackendError as exc:
        note = f"metrics unavailable: {exc.title}"
    summary = f"{found.ref} ({found.name or found.exp_name or '?'}): {found.status or 'unknown'}"
    why, attempts = shown.get("message"), _attempts_line(shown)
    if isinstance(why, str) and why:
        summary += f" — {why}"
    if attempts:
        summary += f"\n{attempts}"
    if metrics:
        summary += "\n" + "\n".join(f"- {k} = {v['value']:g} at step {v['step']}" for k, v in sorted(metrics.items()))
    return Outcome(summary, {"job": shown, "metrics": metrics, "note": note})


def stop_job(backend: Backend, *, job: str) -> Outcome:
    """Stop a job; stopping a finished one is not an error (`stopped` is then false)."""
    found = backend.job(job)
    result = backend.stop(found.ref)
    status = result.status or found.status
    summary = f"stopped {found.ref}" if result.stopped else f"{found.ref} had already finished ({status})"
    return Outcome(summary, {"job": found.ref, "stopped": result.stopped, "status": status, "raw": result.body})


_DONE = {"pause": "paused", "resume": "resumed", "retry": "retried"}


def _said(result: Controlled, ref: str, status: str) -> str:
    """Return what a pause, resume or retry did, in words (the console's own message first)."""
    if result.message:
        return result.message
    if result.action == "pause":
        if not result.done:
            return f"{ref} was not paused: it is {status}"
        if status == "paused":
            return f"paused {ref}: it keeps its place in the queue and is not started until resume_job"
        return f"asked {ref} to save a checkpoint and stop; it is then held paused until resume_job"
    if result.action == "resume":
        if not result.done:
            return f"{ref} is not paused ({status}): nothing to resume"
        if status == "queued":
            return f"resumed {ref}: back in the queue in its place; it resumes from its latest checkpoint"
        return f"cancelled the pause of {ref}: it keeps running"
    return f"retrying {ref}: {status} again as the same job, from its latest checkpoint"


def _controlled(result: Controlled, found: JobRow) -> Outcome:
    status = result.status or found.status
    return Outcome(_said(result, found.ref, status),
                   {"job": found.ref, "action": result.action, "done": result.done, _DONE[result.action]: result.done,
                    "status": status, "raw": result.body})


def pause_job(backend: Backend, *, job: str) -> Outcome:
    """Pause a job: a waiting one is held at once; a running one saves a checkpoint, stops and is held, keeping its
    place in the queue until it is resumed."""
    found = backend.job(job)
    return _controlled(backend.pause(found.ref), found)


def resume_job(backend: Backend, *, job: str) -> Outcome:
    """Put a paused job back in the queue in its place (or cancel a pause still under way)."""
    found = backend.job(job)
    return _controlled(backend.resume(found.ref), found)


def retry_job(backend: Backend, *, job: str) -> Outcome:
    """Run a failed or stopped job again, as the same job, from its latest checkpoint; another status is refused."""
    found = backend.job(job)
    return _controlled(backend.retry(found.ref), found)
