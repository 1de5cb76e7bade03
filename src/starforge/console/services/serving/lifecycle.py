"""The life of a service: start it (a job with `action="serve"`, through admission), read it, extend it, stop it,
let the scheduler stop it once idle, and find where the proxy reaches it.

Tier: use case (`start`, `extend`, `stop`, `touch`: one write transaction each, then the scheduler is woken);
`list_services`, `get`, `proxy_target` read; `stop_expired` runs over the scheduler cycle's session.

A service is a job of the console's own recipe (`serving/transformers` on a CPU series, `serving/vllm` on a GPU
one), built here rather than sent by a client, so the document stages of admission do not apply (as for a
follow-up); every policy check of a submission runs (`admission.pipeline.judge`: names, profiles, capacity,
engines, runtime, quota…). Its job serves the model on its own loopback and bridges it to the Unix socket
`<run>/out/.service/openai.sock`, the one way in (the console's proxy); `ready.json` beside it says it answers.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from .... import __version__
from ....contract import JobSpec, JobSpecError, Problem, parse_or_raise, profile_name
from ....serving import READY_FILE, SERVICE_DIR
from ...settings import Settings
from ...store.models import Job, Service
from ..accounts.credentials import UserView
from ..admission.pipeline import AdmissionRequest, Screened, judge
from ..audit import decision_row
from ..context import Runtime
from ..errors import Conflict, NotFound, Rejected
from ..jobs.rows import TERMINAL, WAITING, build_job, create_job, set_status, stop_job
from ..jobs.submissions import require_writable
from ..outcome import Outcome
from . import ttl
from .references import TITLE, ModelChoice, resolve_model

__all__ = ["ACTION", "any_expired", "extend", "get", "list_services", "own_service", "proxy_target",
           "server_for", "service_dir", "start", "status_of", "stop", "stop_expired", "touch", "view", "Target"]

ACTION = "serve"
EXP = "services"
_MAX_GPUS = 4096
_HINTS = {"name": "a short name of letters, digits, '.', '_' or '-', e.g. my-chat",
          "model": "run:<run_id>, <owner>/<name>@<version>, a folder under model_roots or a hub id (org/name)",
          "gpus": "fewer GPUs, or a profile whose series has them", "profile": "`sf cluster status` lists profiles"}
_RECIPES = {"transformers": "serving/transformers", "vllm": "serving/vllm"}
_FIELDS = {"spec.resources.pools": "gpus", "X-Forge-Meta.profile": "profile", "profile": "profile",
           "metadata.name": "name", "spec.model.base": "model"}


def server_for(series: str, settings: Settings) -> str:
    """Return the server a service runs on `series`: `transformers` on a CPU series, `vllm` on a GPU one."""
    return "transformers" if settings.series_kind(series) == "cpu" else "vllm"


def service_dir(run_dir: str) -> Path:
    """Return the folder of a run where its job puts the service's socket and `ready.json`."""
    return Path(run_dir) / "out" / SERVICE_DIR


def status_of(job: Job, service: Service) -> str:
    """Return the service's status: queued, starting, ready, stopped or failed."""
    if job.status == "failed":
        return "failed"
    if job.status in TERMINAL or service.stopped_at is not None:
        return "stopped"
    if job.status in WAITING or job.status == "paused":
        return "queued"
    if job.status == "running" and job.run_dir and (service_dir(job.run_dir) / READY_FILE).is_file():
        return "ready"
    return "starting"


def view(job: Job, service: Service) -> dict[str, Any]:
    """Return the wire shape of one service (docs: DESIGN-I5 / docs/serving.md)."""
    run_id = service.model_ref[4:].strip() if service.model_ref.startswith("run:") else ""
    return {
        "id": job.id, "name": job.name, "model": service.model_ref, "model_path": service.model_path,
        "server": service.server, "status": status_of(job, service), "gpus": service.gpus, "profile": job.profile,
        "created_at": service.created_at, "expires_at": service.expires_at, "idle_ttl_s": service.idle_ttl_s,
        "url": f"/api/services/{job.id}/v1", "run_id": run_id, "job_status": job.status,
        "stop_reason": service.stop_reason or (job.reason if job.status in TERMINAL else ""),
    }


def own_service(db: Session, user: UserView, service_id: str) -> tuple[Job, Service]:
    """Return the caller's service (its job and row); NotFound for an unknown one or another account's."""
    service = db.get(Service, (service_id or "").strip())
    job = db.get(Job, service.job_id) if service is not None else None
    if service is None or job is None or service.user_id != user.id:
        raise NotFound(f"no service {service_id!r} of yours (see `sf serve ls`)")
    return job, service


def _read_start(body: Any, settings: Settings) -> tuple[str, int, float | None, str, str]:
    problems: list[Problem] = []
    if not isinstance(body, dict):
        raise Rejected(TITLE, [Problem("<body>", "not_an_object", "the body must be a JSON object",
                                       'send {"model": "run:<run_id>"}')], status=422)
    model, gpus, hours = body.get("model"), body.get("gpus", 0), body.get("ttl_hours")
    profile, name = body.get("profile", ""), body.get("name", "")
    if not isinstance(model, str) or not model.strip():
        problems.append(Problem("model", "invalid_request", "model must be a non-empty string",
                                "run:<run_id>, <owner>/<name>@<version>, a folder under model_roots or a hub id"))
    if isinstance(gpus, bool) or not isinstance(gpus, int) or not 0 <= gpus <= _MAX_GPUS:
        problems.append(Problem("gpus", "invalid_request", f"gpus must be a whole number from 0 to {_MAX_GPUS}",
                                "e.g. 0 on a CPU series"))
    problems.extend(ttl.check_ttl(hours, settings.serving))
    if not isinstance(profile, str):
        problems.append(Problem("profile", "not_a_string", "profile must be a string", "a profile name, e.g. cpu"))
    if not isinstance(name, str):
        problems.append(Problem("name", "not_a_string", "name must be a string", "e.g. my-chat"))
    if problems:
        raise Rejected(TITLE, problems, status=422)
    assert isinstance(model, str) and isinstance(gpus, int) and isinstance(profile, str) and isinstance(name, str)
    return model.strip(), gpus, (None if hours is None else float(hours)), profile_name(profile), name.strip()


def _profile_for(settings: Settings, profile: str, gpus: int) -> tuple[str, str]:
    """Return `(profile, series)`: the named one, else `cpu` without GPUs, else the first GPU profile."""
    if not profile:
        wanted_cpu = gpus == 0
        for entry in settings.profiles:
            if (settings.series_kind(entry.series or entry.name) == "cpu") == wanted_cpu:
                profile = entry.name
                break
        else:
            profile = "cpu"
    series = next((p.series or p.name for p in settings.profiles if p.name == profile), profile)
    return profile, series


def _spec(rt: Runtime, *, user: UserView, recipe_id: str, name: str, series: str, gpus: int, choice: ModelChoice
          ) -> JobSpec:
    recipe = rt.catalog.get(recipe_id)
    if recipe is None:  # the package ships both serving recipes: only a broken install lacks one
        raise Conflict(TITLE, [Problem("model", "serving_unavailable", f"this console has no {recipe_id} recipe",
                                       "reinstall the console")])
    version = recipe.runtime.default_version
    variant = recipe.runtime.versions[version]
    doc: dict[str, Any] = {
        "apiVersion": "forge/v2", "kind": "TrainingJob",
        "metadata": {"name": name},
        "spec": {
            "recipe": {"name": recipe.id, "version": recipe.version, "digest": recipe.digest()},
            "source": {"exp": EXP},
            "framework": {"kind": recipe.framework, "version": version, "runtime_id": variant.runtime_id},
            "resources": {"pools": [{"name": "service", "nodes": 1, "gpus_per_node": max(1, gpus), "series": series}]},
        },
        "provenance": {"core_version": __version__},
    }
    if choice.base:
        doc["spec"]["model"] = {"base": choice.base}
    try:
        return parse_or_raise(doc).with_owner(user.username)
    except JobSpecError as exc:  # a name or a hub id the contract refuses: said at the request's own fields
        raise Rejected(TITLE, _at_fields(exc.problems), status=422) from None


def _at_fields(problems: list[Problem]) -> list[Problem]:
    """Return admission's problems at the fields of the service request (`gpus`, `profile`, `name`)."""
    out = []
    for problem in problems:
        field = _field_of(problem.field)
        out.append(replace(problem, field=field, hint=problem.hint or _HINTS.get(field, "")))
    return out


def _field_of(field: str) -> str:
    if field in _FIELDS:
        return _FIELDS[field]
    if field.startswith("spec.resources.pools"):
        return "profile" if field.endswith(".series") else "gpus"
    return field


def start(rt: Runtime, *, user: UserView, body: Any) -> Outcome:
    """Start a service of the caller on the model `body.model` names; 202 with its view (queued for capacity), or
    Rejected with every problem at its field (nothing is created)."""
    require_writable(user, rt)
    model, gpus, hours, profile, name = _read_start(body, rt.settings)
    profile, series = _profile_for(rt.settings, profile, gpus)
    server = server_for(series, rt.settings)
    with rt.db.write() as db:
        choice = resolve_model(db, user, model, model_roots=rt.settings.model_roots, state_dir=rt.settings.state_dir)
        spec = _spec(rt, user=user, recipe_id=_RECIPES[server], name=name or f"serve-{server}", series=series,
                     gpus=gpus, choice=choice)
        request = AdmissionRequest(user=user, doc=None, profile=profile)
        decision = judge(db, rt.settings, rt.catalog, Screened(request, spec, ()))
        if not decision.ok:
            problems = _at_fields(decision.problems)
            db.add(decision_row(user_id=user.id, source="service", verdict="rejected", exp=EXP,
                                recipe=spec.spec.recipe.name, problems=problems))
            status = 403 if any(p.code == "profile_not_allowed" for p in problems) else 422
            raise Rejected(TITLE, problems, status=status)
        resolved: dict[str, Any] = {"init_from": choice.init_from} if choice.init_from else {}
        for field, text, found in _assets(decision):
            resolved[f"{field}={text}"] = found
        job = create_job(db, build_job(
            user_id=user.id, username=user.username, spec=spec, exp=EXP, profile=profile, priority=0,
            meta={"service": {"model": model}}, resolved=resolved, package_sha="", action=ACTION,
            parent_id=choice.run_id,
        ))
        set_status(db, job, "queued", reason=f"service of {model}", waiting_for="capacity")
        db.flush()  # the job row first: the service row refers to it
        now = job.submitted_at
        service = Service(job_id=job.id, user_id=user.id, model_ref=model, model_path=choice.path, server=server,
                          gpus=gpus, idle_ttl_s=rt.settings.serving.idle_ttl_seconds, created_at=now,
                          expires_at=ttl.first_expiry(now, hours, rt.settings.serving))
        db.add(service)
        db.add(decision_row(user_id=user.id, source="service", verdict="queued", exp=EXP, recipe=job.recipe,
                            job_id=job.id, problems=[]))
        db.flush()
        answer = view(job, service)
    rt.wake()
    return Outcome(202, answer)


def _assets(decision: Any) -> list[tuple[str, str, str]]:
    """Return `(field, reference, folder)` of the registered model admission resolved (what the launch mounts)."""
    out = []
    for key, asset in decision.resolutions.assets.items():
        if asset is not None:
            field, _, text = key.partition("=")
            out.append((field, text, asset.path))
    return out


def list_services(rt: Runtime, *, user: UserView, include_stopped: bool = False) -> dict[str, Any]:
    """Return the caller's services, newest first (running ones only unless `include_stopped`)."""
    with rt.db.read() as db:
        rows = db.execute(select(Job, Service).join(Service, Service.job_id == Job.id)
                          .where(Service.user_id == user.id).order_by(Service.created_at.desc())).all()
        views = [view(job, service) for job, service in rows]
    if not include_stopped:
        views = [v for v in views if v["status"] not in ("stopped", "failed")]
    return {"services": views}


def get(rt: Runtime, *, user: UserView, service_id: str) -> dict[str, Any]:
    """Return one service of the caller."""
    with rt.db.read() as db:
        return view(*own_service(db, user, service_id))


def extend(rt: Runtime, *, user: UserView, service_id: str, body: Any) -> dict[str, Any]:
    """Move the caller's service's expiry by `body.hours` (the operator's default TTL when absent), never beyond
    the cap; a stopped service cannot be extended (409)."""
    hours = body.get("hours") if isinstance(body, dict) else None
    with rt.db.write() as db:
        job, service = own_service(db, user, service_id)
        if hours is None:
            hours = rt.settings.serving.default_ttl_hours
        problems = ttl.check_ttl(hours, rt.settings.serving, field="hours")
        if problems:
            raise Rejected("The extension was refused", problems, status=422)
        if status_of(job, service) in ("stopped", "failed"):
            raise Conflict("The extension was refused", [Problem("id", "service_stopped",
                                                                 f"service {job.id} has stopped",
                                                                 "start a new one with `sf serve start`")])
        service.expires_at = ttl.extended(time.time(), created_at=service.created_at, expires_at=service.expires_at,
                                          hours=float(hours), settings=rt.settings.serving)
        return view(job, service)


def _stop(db: Session, job: Job, service: Service, reason: str, now: float) -> None:
    stop_job(db, job, reason)
    if service.stopped_at is None:
        service.stopped_at, service.stop_reason = now, reason[:255]


def stop(rt: Runtime, *, user: UserView, service_id: str) -> dict[str, Any]:
    """Stop the caller's service (its job is stopped; stopping it again changes nothing)."""
    with rt.db.write() as db:
        job, service = own_service(db, user, service_id)
        _stop(db, job, service, f"stopped by {user.username}", time.time())
        answer = view(job, service)
    rt.wake()
    return answer


def any_expired(db: Session, now: float) -> bool:
    """Return True when some running service's `expires_at` has passed (one indexed read)."""
    return db.scalar(select(Service.job_id).where(Service.stopped_at.is_(None), Service.expires_at <= now)
                     .limit(1)) is not None


def stop_expired(db: Session, now: float) -> int:
    """Stop every service whose `expires_at` has passed (reason "idle TTL expired"); return how many."""
    rows = db.execute(select(Job, Service).join(Service, Service.job_id == Job.id)
                      .where(Service.stopped_at.is_(None), Service.expires_at <= now)).all()
    for job, service in rows:
        _stop(db, job, service, "idle TTL expired", now)
    return len(rows)


@dataclass(frozen=True)
class Target:
    """Where the proxy reaches a service: its owner (for the access rule), its socket and its status."""

    owner_id: int
    run_dir: str  # where `socket_door.open_socket` finds the socket ("" before the job has a run folder)
    status: str


def proxy_target(rt: Runtime, *, service_id: str) -> Target | None:
    """Return where the service `service_id` is reached, or None for an unknown one (whoever asks)."""
    with rt.db.read() as db:
        service = db.get(Service, (service_id or "").strip())
        job = db.get(Job, service.job_id) if service is not None else None
        if service is None or job is None:
            return None
        return Target(service.user_id, job.run_dir or "", status_of(job, service))


def touch(rt: Runtime, *, service_id: str) -> None:
    """Move a service's expiry after a request (now + its idle TTL, capped) and note when it was last used."""
    now = time.time()
    with rt.db.write() as db:
        service = db.get(Service, service_id)
        if service is None or service.stopped_at is not None:
            return
        service.last_used_at = now
        service.expires_at = ttl.touched(now, created_at=service.created_at, expires_at=service.expires_at,
                                         idle_ttl_s=service.idle_ttl_s, settings=rt.settings.serving)
