"""External evaluations (the official client's `sf bench external`): a run record for scores a harness outside the
platform produced, with a token that can only report that run's scores, and the report of those scores.

Tier: use case (one write transaction per call). `open_external` makes a job row of recipe `evalkit/benchmark` that
never runs (status succeeded at once, profile `external`, no GPUs) so its scores are stored, read, compared and
shown like any run's; `report_external` takes the run's own token (as the job-side ingest does) or its owner's
bearer token, and stores the scores by the same rules (`scores.read_report`, `scores.record`).
"""

from __future__ import annotations

import hashlib
from typing import Any

from .... import __version__
from ....contract import Problem, parse_or_raise
from ...store.models import Job
from ..accounts import credentials as accounts
from ..accounts.credentials import UserView
from ..admission.checks.benchmarks import BENCHMARK_RECIPE
from ..context import Runtime
from ..errors import AuthRequired, NotFound, Rejected
from ..jobs import queries as job_queries
from ..jobs.rows import build_job, create_job, set_status
from ..jobs.submissions import require_writable
from . import scores
from .scores import EXTERNAL_PROFILE

__all__ = ["EXTERNAL_PROFILE", "open_external", "report_external"]

_TITLE = "Invalid external evaluation"
_PLACEHOLDER_DIGEST = "sha256:" + hashlib.sha256(b"starforge external evaluation").hexdigest()


def _text(body: dict[str, Any], name: str, problems: list[Problem], *, limit: int, required: bool = False) -> str:
    value = body.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()) or "\x00" in value or len(value) > limit:
        problems.append(Problem(name, "invalid_request", f"{name} must be {'non-empty ' if required else ''}text of "
                                                         f"at most {limit} characters",
                                "e.g. the model's hub id or registered name" if name == "model" else "or leave it out"))
        return ""
    return value.strip()


def _segment(text: str) -> str:
    kept = "".join(c if c.isalnum() or c in "-_." else "-" for c in text.lower()).strip("-.")
    return kept[:64] or "external"


def open_external(rt: Runtime, *, user: UserView, body: Any) -> dict[str, Any]:
    """Open an external evaluation for `{model, harness?, train_run_id?, note?}` and return `{run_id, token}` (the
    token reports this run's scores only); a `train_run_id` must be a run of the caller (404 otherwise)."""
    require_writable(user, rt)
    if not isinstance(body, dict):
        raise Rejected(_TITLE, [Problem("<body>", "not_an_object", "the body must be a JSON object",
                                        '{"model": "org/name", "harness": "cvdp"}')], status=422)
    problems: list[Problem] = []
    model = _text(body, "model", problems, limit=4096, required=True)
    harness = _text(body, "harness", problems, limit=64)
    train_run = _text(body, "train_run_id", problems, limit=64)
    note = _text(body, "note", problems, limit=2000)
    if problems:
        raise Rejected(_TITLE, problems, status=422)
    recipe = rt.catalog.get(BENCHMARK_RECIPE)
    version = recipe.version if recipe is not None else "1.0.0"
    name = _segment(harness or "external")
    spec = parse_or_raise({
        "apiVersion": "forge/v2", "kind": "TrainingJob", "metadata": {"name": name, "project": "external"},
        "spec": {"recipe": {"name": BENCHMARK_RECIPE, "version": version, "digest": _PLACEHOLDER_DIGEST},
                 "source": {"exp": f"external/{name}"},
                 "framework": {"kind": "evalkit", "version": version},
                 "resources": {"pools": [{"name": "all", "nodes": 1, "gpus_per_node": 1, "series": EXTERNAL_PROFILE}]}},
        "provenance": {"core_version": __version__},
    }).with_owner(user.username)
    with rt.db.write() as db:
        if train_run:
            train_run = job_queries.find_job(db, user, train_run).id
        job = create_job(db, build_job(
            user_id=user.id, username=user.username, spec=spec, exp=f"external/{name}", profile=EXTERNAL_PROFILE,
            priority=0, meta={"external": {"model": model, "harness": harness, "train_run_id": train_run,
                                           "note": note}},
            resolved={}, package_sha="", parent_id=train_run))
        job.requested_gpus, job.series_gpus = 0, "{}"  # it runs nowhere: nothing to count against a quota
        set_status(db, job, "submitted", reason="external evaluation opened")
        set_status(db, job, "succeeded", reason=f"external evaluation of {model}" + (f" ({harness})" if harness
                                                                                      else ""))
        token = accounts.issue_run_token(db, user, job.id)
        return {"run_id": job.id, "token": token, "model": model, "harness": harness, "train_run_id": train_run}


def report_external(rt: Runtime, *, token: str, body: Any) -> dict[str, Any]:
    """Store `{run_id, scores, model?, harness?}` for an external evaluation and return `{written}`; `token` is the
    run's own token or its owner's bearer token (anything else is a 401, another account's run a 404)."""
    run_id = body.get("run_id") if isinstance(body, dict) else None
    with rt.db.write() as db:
        try:
            accounts.authenticate_run(db, token, run_id if isinstance(run_id, str) else None)
            owner: UserView | None = None
        except AuthRequired:
            owner = accounts.authenticate(db, token)
        if not isinstance(body, dict) or not isinstance(run_id, str) or not run_id:
            raise Rejected(_TITLE, [Problem("run_id", "invalid_request", "the body must be a JSON object with run_id",
                                            "the run_id `sf bench external create` returned")])
        job = db.get(Job, run_id) if owner is None else job_queries.find_job(db, owner, run_id)
        if job is None or job.profile != EXTERNAL_PROFILE:
            raise NotFound(f"no external evaluation {run_id!r} of yours")
        report = scores.read_report(run_id, {**body, "runner": body.get("harness") or body.get("runner")})
        return {"written": scores.record(db, run_id, report)}
