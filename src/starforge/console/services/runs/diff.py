"""Why two runs differ: their inputs compared section by section, the most explanatory first, then their final
metrics side by side, with a one-line summary naming the first difference.

Tier: use case (`diff_runs` owns one read transaction; `compare_inputs` is pure). Both runs must be the caller's
(NotFound otherwise). Section order: hyperparameters, merged config, other JobSpec fields, lab commit (with a
per-file stat of the two bundles), recipe, runtime and image, data, seeds, placement.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from ...store.models import Job
from ..accounts.view import UserView
from ..context import Runtime
from ..jobs import metrics as metric_store
from ..jobs import queries as job_queries
from .bundle_stat import bundle_stat
from .inputs import NOT_COMPARED, flat_inputs, inputs_of

__all__ = ["SECTIONS", "compare_inputs", "diff_runs", "summary_of"]

# (name, title, which flat keys it holds): a key goes to the first section that claims it
SECTIONS: tuple[tuple[str, str], ...] = (
    ("hyperparameters", "Hyperparameters"),
    ("config", "Merged config"),
    ("spec", "JobSpec"),
    ("lab", "Lab commit"),
    ("recipe", "Recipe"),
    ("runtime", "Runtime and image"),
    ("data", "Data"),
    ("seeds", "Seeds"),
    ("placement", "Placement"),
)
_SPEC_COVERED = ("spec.hyperparams.", "spec.recipe.", "spec.framework.", "spec.data.", "spec.resources.",
                 "provenance.", "metadata.owner")
_PREFIXES: dict[str, tuple[str, ...]] = {
    "hyperparameters": ("hyperparameters.",),
    "config": ("config.",),
    "lab": ("lab.",),
    "recipe": ("recipe.",),
    "runtime": ("framework.", "image."),
    "data": ("data.", "data_resolved."),
    "seeds": ("seeds.",),
    "placement": ("placement.",),
}
_IGNORED = ("exp", "action", "attempts", "lab.changed_files", *NOT_COMPARED)


def _flat_spec(value: Any, prefix: str, out: dict[str, str]) -> None:
    if isinstance(value, dict) and value:
        for key in sorted(value, key=str):
            _flat_spec(value[key], f"{prefix}.{key}" if prefix else str(key), out)
    elif value not in (None, "", [], {}):
        out[prefix] = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _spec_keys(job: Job) -> dict[str, str]:
    out: dict[str, str] = {}
    _flat_spec(json.loads(job.spec_json or "{}"), "", out)
    return {f"spec.{k}" if not k.startswith("spec.") else k: v for k, v in out.items()
            if not any(k.startswith(p) or k == p.rstrip(".") for p in _SPEC_COVERED)}


def _changes(a: dict[str, str], b: dict[str, str], keep: Callable[[str], bool]) -> list[dict[str, Any]]:
    out = []
    for key in sorted(set(a) | set(b)):
        if not keep(key) or a.get(key) == b.get(key):
            continue
        change = "added" if key not in a else "removed" if key not in b else "changed"
        out.append({"key": key, "a": a.get(key), "b": b.get(key), "change": change})
    return out


def _short(key: str) -> str:
    """A key as the summary names it: a hyperparameter by its own name."""
    for prefix in ("hyperparameters.", "seeds."):
        if key.startswith(prefix):
            return key[len(prefix):]
    return key


def compare_inputs(flat_a: dict[str, str], flat_b: dict[str, str], spec_a: dict[str, str],
                   spec_b: dict[str, str]) -> list[dict[str, Any]]:
    """Return the sections of a diff, in `SECTIONS` order: `{name, title, same, changes: [{key, a, b, change}]}`;
    the merged config leaves out the paths a hyperparameter already names, seeds repeat their hyperparameters."""
    hyper = {k.removeprefix("hyperparameters.") for k in (*flat_a, *flat_b) if k.startswith("hyperparameters.")}
    sections = []
    for name, title in SECTIONS:
        if name == "spec":
            changes = _changes(spec_a, spec_b, lambda key: True)
            model = _changes(flat_a, flat_b, lambda key: key.startswith("model.") and key not in _IGNORED)
            changes = model + [c for c in changes if not c["key"].startswith("spec.model.")]
        else:
            prefixes = _PREFIXES[name]

            def keep(key: str, prefixes: tuple[str, ...] = prefixes, name: str = name) -> bool:
                if key in _IGNORED or not key.startswith(prefixes):
                    return False
                return not (name == "config" and key.removeprefix("config.") in hyper)

            changes = _changes(flat_a, flat_b, keep)
        sections.append({"name": name, "title": title, "same": not changes, "changes": changes})
    return sections


def _metrics(db: Any, a: str, b: str) -> list[dict[str, Any]]:
    last_a = metric_store.series_of(db, a)["latest"]
    last_b = metric_store.series_of(db, b)["latest"]
    rows = []
    for key in sorted(set(last_a) | set(last_b)):
        va, vb = last_a.get(key), last_b.get(key)
        delta = vb - va if isinstance(va, float | int) and isinstance(vb, float | int) else None
        rows.append({"key": key, "a": va, "b": vb,
                     "delta": delta if delta is None or math.isfinite(delta) else None})
    return rows


def summary_of(sections: list[dict[str, Any]]) -> tuple[str, dict[str, Any] | None]:
    """Return the summary line naming the first change of the first section that has one (`key: a → b`), with
    that change; the same-inputs sentence and None when no section has any."""
    for section in sections:
        for change in section["changes"]:
            a, b = change["a"], change["b"]
            said = (f"{a} → {b}" if change["change"] == "changed"
                    else f"only in B: {b}" if change["change"] == "added" else f"only in A: {a}")
            return f"{_short(change['key'])}: {said}", {"section": section["name"], **change}
    return "The two runs are made of the same inputs.", None


def diff_runs(rt: Runtime, *, user: UserView, a: str, b: str) -> dict[str, Any]:
    """Return why the caller's runs `a` and `b` differ: `{a, b, identical, summary, first, sections, files,
    metrics}`; `files` is the per-file stat of their two bundles (None when either is not stored), `metrics` the
    last value per key of each with the difference b − a. NotFound when either run is not the caller's."""
    with rt.db.read() as db:
        job_a, job_b = job_queries.find_job(db, user, a), job_queries.find_job(db, user, b)
        inputs_a, inputs_b = inputs_of(db, job_a), inputs_of(db, job_b)
        sections = compare_inputs(flat_inputs(inputs_a), flat_inputs(inputs_b), _spec_keys(job_a), _spec_keys(job_b))
        metrics = _metrics(db, job_a.id, job_b.id)
        sha_a, sha_b = job_a.package_sha, job_b.package_sha
    files = [] if sha_a and sha_a == sha_b else bundle_stat(rt.settings.state_dir, sha_a, sha_b)
    if files:
        lab = next(s for s in sections if s["name"] == "lab")
        lab["same"] = False
    summary, first = summary_of(sections)
    if first is None and files:
        summary, first = f"experiment files: {len(files)} changed", {"section": "lab", "key": "files"}
    return {"a": _brief(inputs_a), "b": _brief(inputs_b), "identical": first is None, "summary": summary,
            "first": first, "sections": sections, "files": files, "metrics": metrics}


def _brief(inputs: dict[str, Any]) -> dict[str, Any]:
    return {k: inputs[k] for k in ("job_ref", "name", "exp", "status", "action")}
