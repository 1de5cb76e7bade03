"""What a run is made of, from its row, admitted JobSpec, submission meta, resolutions and launch plan.

Tier: use case (`run_inputs` owns one read transaction; `inputs_of` runs in the caller's and `flat_inputs` is pure).
Hyperparameters come with their origin only where the console recorded one; the merged config is the runner's own
rule (`runner.merged_document`) applied to the launch plan the console wrote into the run's work folder, so it is
absent until the run was prepared. Host paths never leave here: a resolved path is shown by its last component.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from ....contract import loads
from ....runner import merged_document
from ....wire import PLAN_FILE, parse_plan, ref_parts
from ...store.models import Job
from ..accounts.view import UserView
from ..context import Runtime
from ..errors import NotFound
from ..jobs import queries as job_queries
from ..jobs.artifact_archive import open_beneath

__all__ = ["NOT_COMPARED", "SEED", "flat_inputs", "inputs_of", "run_inputs"]

# flat keys that name or place one run rather than define it (its engine's reference, its bundle's digest, the host
# path its init_from resolved to): comparing them would mark every pair of runs as different
NOT_COMPARED = ("placement.engine_ref", "lab.bundle", "model.init_from.resolved")

SEED = re.compile(r"(^|[._])seed($|[._])|seed$", re.IGNORECASE)  # a hyperparameter that seeds randomness
_MAX_CHANGED = 200
_MAX_PLAN = 4 << 20  # a launch plan is a few KB; a bigger file in its place is not the console's
_MAX_TEXT = 400


def _shown_path(path: str) -> str:
    """A resolved host path, as far as a caller may see it: its last component."""
    return "…/" + path.rstrip("/").rsplit("/", 1)[-1] if "/" in path else path


def _init_from(given: str, resolved: str) -> dict[str, Any] | None:
    if not given:
        return None
    found: dict[str, Any] = {"given": given}
    match = re.fullmatch(r"run/([^/@]+)/([^@]+)(?:@step=(\d+))?", given)
    if match:
        found["run"], found["kind"] = match.group(1), match.group(2)
        if match.group(3):
            found["step"] = int(match.group(3))
    if resolved:
        found["resolved"] = _shown_path(resolved)
    return found


def _plan_text(run_dir: Path) -> str:
    """The launch plan in the run's work folder, which its job may write to: opened one component at a time without
    following links (`artifact_archive.open_beneath`), a regular file only, never blocking on a FIFO, at most
    `_MAX_PLAN` bytes read ("" otherwise) — a job that puts a link there reaches no other file of the machine."""
    try:
        fd = open_beneath(run_dir, f"work/{PLAN_FILE}")
    except NotFound:
        return ""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return ""
        data = os.read(fd, _MAX_PLAN + 1)
    except OSError:
        return ""
    finally:
        os.close(fd)
    return data.decode("utf-8", "replace") if len(data) <= _MAX_PLAN else ""


def _merged_config(job: Job) -> dict[str, Any] | None:
    if not job.run_dir:
        return None
    text = _plan_text(Path(job.run_dir))
    try:
        doc = loads(text) if text else None
    except (ValueError, RecursionError):
        return None
    plan, _problems = parse_plan(doc) if doc is not None else (None, [])
    if plan is None or not plan.config.mode:
        return None
    return merged_document(plan.config, [])


def _changed_files(meta: dict[str, Any]) -> list[str]:
    for key in ("git_changes", "changed_files", "dirty_files"):
        value = meta.get(key)
        if isinstance(value, list):
            return [str(v)[:_MAX_TEXT] for v in value[:_MAX_CHANGED]]
    return []


def inputs_of(db: Session, job: Job) -> dict[str, Any]:
    """Return what `job` is made of (the object `run_inputs` answers), read in the caller's session."""
    doc = json.loads(job.spec_json or "{}")
    spec = doc.get("spec", {}) if isinstance(doc, dict) else {}
    meta = json.loads(job.meta_json or "{}")
    resolved = json.loads(job.resolved_json or "{}")
    prov = doc.get("provenance", {}) if isinstance(doc, dict) else {}
    recipe, framework, model = spec.get("recipe", {}), spec.get("framework", {}), spec.get("model", {})
    hyper = spec.get("hyperparams", {}) or {}
    pools = spec.get("resources", {}).get("pools", []) or []
    placement: dict[str, Any] = {"profile": job.profile, "gpus": job.requested_gpus,
                                 "series_gpus": json.loads(job.series_gpus or "{}"), "pools": pools}
    if job.executor_ref:
        placement["engine"], placement["engine_ref"] = ref_parts(job.executor_ref)
    assets = resolved.get("assets", {}) if isinstance(resolved.get("assets"), dict) else {}
    data = {key: value for key, value in (spec.get("data", {}) or {}).items() if value not in (None, "", [], {})}
    return {
        "job_ref": job.id,
        "name": job.name,
        "exp": job.exp,
        "status": job.status,
        "action": job.action or "train",
        "recipe": {"name": recipe.get("name", ""), "version": recipe.get("version", ""),
                   "digest": recipe.get("digest", ""), "plugins": list(recipe.get("plugins", []) or [])},
        "framework": {"kind": framework.get("kind", ""), "version": framework.get("version", ""),
                      "runtime_id": framework.get("runtime_id", "")},
        "image": {"reference": framework.get("image", "") or "", "digest": job.image_digest or ""},
        "model": {"base": model.get("base", "") or "", "peft": model.get("peft") or None,
                  "init_from": _init_from(str(model.get("init_from") or ""), str(resolved.get("init_from") or ""))},
        "data": data,
        "data_resolved": {k: _shown_path(str(v)) for k, v in assets.items() if v},
        "hyperparameters": {name: {"value": value} for name, value in sorted(hyper.items())},
        "config": _merged_config(job),
        "lab": {"commit": meta.get("git_commit") or prov.get("git_commit") or "",
                "dirty": bool(meta.get("git_dirty", prov.get("git_dirty", False))),
                "config_sha": meta.get("config_sha") or prov.get("config_sha") or "",
                "changed_files": _changed_files(meta), "bundle": job.package_sha or ""},
        "placement": placement,
        "seeds": {name: value for name, value in sorted(hyper.items()) if SEED.search(name)},
        "attempts": job.attempts or 0,
        "parent": job.parent_id or None,
        "sweep_id": job.sweep_id or None,
    }


def run_inputs(rt: Runtime, *, user: UserView, ref: str) -> dict[str, Any]:
    """Return what the caller's run `ref` is made of: recipe, framework, image and digest, model (init_from as given
    and what it resolved to), data, every hyperparameter, the merged config, lab commit, placement, seeds and
    attempts (NotFound for a run that is not the caller's)."""
    with rt.db.read() as db:
        return inputs_of(db, job_queries.find_job(db, user, ref))


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _flatten(prefix: str, value: Any, out: dict[str, str]) -> None:
    if isinstance(value, dict) and value:
        for key in sorted(value, key=str):
            _flatten(f"{prefix}.{key}" if prefix else str(key), value[key], out)
    elif value not in (None, "", [], {}):
        out[prefix] = _text(value)


def flat_inputs(inputs: dict[str, Any]) -> dict[str, str]:
    """Return `inputs` as dotted key → display string (a hyperparameter as `hyperparameters.<name>`, the merged
    config as `config.<path>`), leaving out empty values and what names the run rather than defines it."""
    out: dict[str, str] = {}
    for section, value in inputs.items():
        if section in ("job_ref", "name", "status", "sweep_id", "parent"):
            continue
        if section == "hyperparameters":
            for name, entry in value.items():
                out[f"hyperparameters.{name}"] = _text(entry.get("value"))
            continue
        _flatten(section, value, out)
    return out
