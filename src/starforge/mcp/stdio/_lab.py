"""Lab operations (stdio only): the JobSpec `sf submit` would send, and the lock state of the lab's experiments.

They read the lab and the installed catalog (`starforge.lab`) and ask the console through the stdio backend's client.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from starforge import DISTRIBUTION, __version__
from starforge.client import ForgeHome
from starforge.contract import Problem, ProfileEntry

from .._errors import BackendError, ToolRefusal
from .._results import Outcome
from .._truncate import clip_items
from ._client import ClientBackend

__all__ = ["MAX_INLINE_BUNDLE", "build_spec", "recipe_status"]

MAX_INLINE_BUNDLE = 16 * 1024 * 1024


def _lab(backend: ClientBackend) -> Path:
    if backend.lab is None:
        raise ToolRefusal("No lab here", [Problem(
            "lab", "invalid_request", "this tool needs a lab, and `sf mcp` was not started inside one",
            "start `sf mcp` from a directory inside the lab (where starforge.yaml is), or `sf init` one")])
    return backend.lab


def _registry(backend: ClientBackend) -> list[ProfileEntry]:
    """Return the console's profile registry, else the copy `sf` last cached for this console."""
    from starforge.lab import load_registry

    try:
        return list(backend.cluster_status().profiles)
    except BackendError:
        cached = load_registry(ForgeHome.from_env().path, backend.console.server)
        if cached is None:
            raise
        return cached


def build_spec(backend: ClientBackend, *, exp: str, profiles: list[str], sets: list[str], image: str,
               observability_url: str, init_from: str, corpus: str, train_dataset: str, plugins: list[str],
               then: list[str], framework_version: str, allow_dirty: bool, include_bundle: bool) -> Outcome:
    """Build the JobSpec of experiment `exp` exactly as `sf submit` would (`lab.build_submission`; nothing is
    uploaded)."""
    from starforge.lab import SubmitOptions, build_submission

    lab = _lab(backend)
    options = SubmitOptions(profiles=tuple(profiles), sets=tuple(sets), image=image, observability_url=observability_url,
                            init_from=init_from, corpus=corpus, train_dataset=train_dataset, plugins=tuple(plugins),
                            then=tuple(then), allow_dirty=allow_dirty, framework_version=framework_version)
    sub = build_submission(lab, exp, options, profiles=_registry(backend), catalog=backend.catalog(),
                           pack="bundle" if include_bundle else "none")
    built = sub.built
    if sub.stage == "spec" or built is None or built.job is None:
        raise ToolRefusal(f"The JobSpec of {exp} could not be built", sub.problems, status=422)
    if sub.stage == "bundle" or (include_bundle and sub.bundle is None):
        raise ToolRefusal(f"The bundle of {built.exp} was refused", sub.problems)
    prov = built.provenance
    data: dict[str, Any] = {
        "ok": True,
        "spec": built.spec,
        "profile": built.profile,
        "exp": built.exp,
        "warnings": [w.to_dict() for w in built.warnings],
        "provenance": {"git_commit": getattr(prov, "git_commit", None), "git_dirty": getattr(prov, "git_dirty", None),
                       "config_sha": getattr(prov, "config_sha", None)},
        "note": "",
    }
    summary = [f"built the JobSpec of {built.exp} for profile {built.profile} "
               f"({built.spec['spec']['recipe']['name'] if built.spec else '?'}); nothing was uploaded"]
    if include_bundle and sub.bundle is not None and sub.packed is not None:
        packed, bundle = sub.packed, sub.bundle
        files, files_note = clip_items(packed.files, 200, what="bundle file list")
        data["bundle"] = {"bytes": len(bundle), "files": files, "dropped": packed.dropped, "note": files_note}
        if len(bundle) > MAX_INLINE_BUNDLE:
            data["note"] = (f"the bundle is {len(bundle):,} bytes, more than {MAX_INLINE_BUNDLE:,} sent inline: "
                            f"submit it with `sf submit {built.exp} --profile {built.profile}`")
        else:
            data["bundle_base64"] = base64.b64encode(bundle).decode("ascii")
            summary.append(f"bundle: {len(packed.files)} file(s), {len(bundle):,} bytes (bundle_base64)")
    summary += [f"warning: {w.field}: {w.message}" for w in built.warnings]
    summary.append("validate_jobspec checks it against the console; submit_job(spec, profile, bundle_base64) runs it.")
    if data["note"]:
        summary.append(data["note"])
    return Outcome("\n".join(summary), data)


def _name(lab: Path, exp_dir: Path) -> str:
    try:
        return exp_dir.relative_to(lab).as_posix()
    except ValueError:
        return str(exp_dir)


def _fix(state: str, message: str, name: str) -> str:
    if state == "sdk_incompatible":
        return f"pip install -U {DISTRIBUTION}"
    if state == "current" or (state == "malformed" and "legacy" not in message):
        return ""
    return f"sf recipe upgrade {name}"


def recipe_status(backend: ClientBackend, *, exp: str, compare_with_console: bool) -> Outcome:
    """Return the lock state of one experiment (or all with a lock), with diffs, the console's view and the fix."""
    from starforge.lab import inspect_lock, locked_experiments, resolve_experiment
    from starforge.recipes import compare_server_entry

    lab = _lab(backend)
    if exp.strip():
        found = resolve_experiment(lab, exp)
        if found is None:
            raise ToolRefusal("Unknown experiment", [Problem("exp", "experiment_unknown", f"no experiment {exp!r} in {lab}",
                                                             "name one as <name>, experiments/<name> or smoke/<name>")])
        dirs = [found]
    else:
        dirs = locked_experiments(lab)
    catalog = backend.catalog()
    inspections = [inspect_lock(d, catalog, __version__) for d in dirs]
    payload: dict[str, Any] | None = None
    note = ""
    if compare_with_console:
        try:
            payload = backend.recipes()
        except BackendError as exc:
            note = f"the console's catalog was not compared: {exc.title}"
    rows = []
    for item in inspections:
        name = _name(lab, item.exp_dir)
        row: dict[str, Any] = {
            "exp": name, "state": item.state, "label": item.label, "admits": item.admits,
            "recipe": item.recipe_id, "framework_version": item.framework_version, "message": item.message,
            "diffs": [{"field": f, "locked": a, "current": b} for f, a, b in item.diffs],
            "fix": _fix(item.state, item.message, name),
        }
        if payload is not None and item.recipe is not None:
            status, message = compare_server_entry(payload, item.recipe.id, item.recipe.version, item.recipe.digest())
            row["console"] = {"status": status, "message": message}
        rows.append(row)
    lines = [f"{'ok ' if r['admits'] else 'NO '} {r['exp']}: {r['state']} {r['recipe']}".rstrip()
             + (f" — {r['message']}" if r["message"] else "") + (f"\n    fix: {r['fix']}" if r["fix"] else "")
             + (f"\n    console: {r['console']['message']}" if "console" in r else "") for r in rows]
    summary = "\n".join(lines) if lines else "no experiment in this lab has a recipe.lock.json"
    ok = all(r["admits"] for r in rows)
    return Outcome(summary + (f"\n{note}" if note else ""), {"ok": ok, "lab": str(lab), "experiments": rows,
                                                               "note": note})
