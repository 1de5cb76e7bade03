"""Spec operations: the console's verdict on a JobSpec, and explanations of a rejection with concrete fixes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from starforge.contract import Problem

from ._backend import Backend
from ._errors import BackendError, ToolRefusal
from ._explain import ExplainContext, Explanation, explain, problems_of
from ._results import Outcome

__all__ = ["explain_rejection", "render_explanations", "validate_jobspec"]


def _bullets(problems: Sequence[Problem]) -> list[str]:
    return [f"- {p.field} ({p.code}): {p.message}" + (f" — hint: {p.hint}" if p.hint else "") for p in problems]


def validate_jobspec(backend: Backend, *, spec: dict[str, Any], profile: str | None) -> Outcome:
    """Return admission's verdict on `spec` (every stage, nothing stored); a rejection is a verdict, not an error."""
    verdict = backend.check(spec, profile or None)
    data = {
        "ok": verdict.ok,
        "problems": [p.to_dict() for p in verdict.problems],
        "warnings": [w.to_dict() for w in verdict.warnings],
        "requested_gpus": verdict.requested_gpus,
        "profile": profile or "",
    }
    if verdict.ok:
        summary = (f"accepted by the console ({verdict.requested_gpus} GPU(s)); submit_job with the same spec and "
                   "profile to run it")
    else:
        summary = "\n".join([f"rejected by the console: {len(verdict.problems)} problem(s)", *_bullets(verdict.problems),
                             "Admission stops at the first failing stage, so fixing these may reveal the next ones. "
                             "explain_rejection(rejection=<this result>, spec=<the spec>) gives the fixes."])
    if verdict.warnings:
        summary += "\nwarnings:\n" + "\n".join(f"- {w.field}: {w.message}" for w in verdict.warnings)
    return Outcome(summary, data)


def render_explanations(explanations: list[Explanation]) -> str:
    """Return the explanations as a numbered plain-text list (cause, fix, commands, patches)."""
    lines = []
    for i, item in enumerate(explanations, 1):
        p = item.problem
        lines.append(f"{i}. {p.field} ({p.code}{', warning' if item.severity == 'warning' else ''}): {p.message}")
        lines.append(f"   cause: {item.cause}")
        lines.append(f"   fix: {item.fix}")
        lines.extend(f"   run: {c}" for c in item.commands)
        for patch in item.patches:
            what = f"set {patch.target} = {patch.value!r}" if patch.op == "set" else f"remove {patch.target}"
            lines.append(f"   patch: {what}")
    return "\n".join(lines)


def _params(backend: Backend, spec: Mapping[str, Any] | None) -> dict[str, Any]:
    recipe = spec.get("spec", {}).get("recipe", {}).get("name") if isinstance(spec, Mapping) and isinstance(
        spec.get("spec"), Mapping) and isinstance(spec["spec"].get("recipe"), Mapping) else None
    if not isinstance(recipe, str):
        return {}
    try:
        found = backend.catalog().get(recipe)
    except (ValueError, OSError):
        return {}
    return dict(found.params) if found is not None else {}


def explain_rejection(backend: Backend, *, rejection: Any, spec: dict[str, Any] | None, exp: str | None,
                      profile: str | None) -> Outcome:
    """Explain every problem of `rejection` (or, without one, of the console's verdict on `spec`)."""
    problems = problems_of(rejection) if rejection else []
    checked = False
    if not problems and spec is not None:
        problems, checked = list(backend.check(spec, profile or None).problems), True
    if not problems and not checked:
        raise ToolRefusal("Nothing to explain", [Problem(
            "rejection", "invalid_request", "neither a rejection with problems nor a spec to check was given",
            "pass the problems list, the console's error body, validate_jobspec's result, or the spec")])
    try:
        catalog: Mapping[str, Any] | None = backend.recipes()
    except BackendError:
        catalog = None  # explanations still work, only without the published recipe identity
    ctx = ExplainContext(spec=spec, exp=exp or "", profile=profile or "", catalog=catalog,
                         params=_params(backend, spec))
    explanations = explain(problems, ctx)
    data = {"count": len(explanations), "explanations": [e.to_dict() for e in explanations], "checked_spec": checked}
    if not explanations:
        return Outcome("nothing to explain: the console accepts this spec", data)
    head = f"{len(explanations)} problem(s) explained" + (" (from the console's verdict on the spec)" if checked else "")
    tail = ("Apply the patches (set/remove the dotted spec paths; `profile` is the submit argument), then "
            "validate_jobspec again: admission reports one stage at a time.")
    return Outcome("\n".join([head, render_explanations(explanations), tail]), data)
