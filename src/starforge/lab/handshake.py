"""The client side of the catalog handshake (wire-protocol §6.3) with the fix spelled out for the researcher."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from starforge import __version__
from starforge.contract import JobSpec, Problem

__all__ = ["HandshakeReport", "check_handshake"]


@dataclass(frozen=True)
class HandshakeReport:
    """The first failing check H1-H8 (as problems with a fix) and the values that differ, console beside spec."""

    problems: list[Problem]
    rows: list[tuple[str, str, str]] = field(default_factory=list)  # (what, the console's catalog, this spec)

    @property
    def ok(self) -> bool:
        """Return True when the console's catalog matches the spec (nothing to upload is refused)."""
        return not self.problems


def _entry(payload: Any, name: str) -> Mapping[str, Any]:
    recipes = payload.get("recipes") if isinstance(payload, Mapping) else None
    for row in recipes if isinstance(recipes, list) else []:
        if isinstance(row, Mapping) and row.get("name") == name:
            return row
    return {}


def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _needed_core(problem: Problem, payload: Any, entry: Mapping[str, Any]) -> str:
    if problem.field == "provenance.core_version":
        return _text(entry.get("core_requires"))
    core = payload.get("core") if isinstance(payload, Mapping) else None
    return _text(core.get("requirement")) if isinstance(core, Mapping) else ""


def _rows(payload: Any, spec: JobSpec, client_version: str, needed_core: str | None) -> list[tuple[str, str, str]]:
    s = spec.spec
    entry = _entry(payload, s.recipe.name)
    variants = entry.get("runtime", {}).get("versions", {}) if isinstance(entry.get("runtime"), Mapping) else {}
    variant = variants.get(s.framework.version) if isinstance(variants, Mapping) else None
    versions = entry.get("supported_framework_versions")
    pairs = [
        ("recipe.version", _text(entry.get("version")), s.recipe.version),
        ("recipe.digest", _text(entry.get("digest")), s.recipe.digest),
        ("framework.kind", _text(entry.get("framework")), s.framework.kind),
        ("framework.versions", ", ".join(map(str, versions)) if isinstance(versions, list) else "",
         s.framework.version),
        ("framework.runtime_id", _text(variant.get("runtime_id")) if isinstance(variant, Mapping) else "",
         s.framework.runtime_id),
    ]
    if not entry:
        pairs = []
    if needed_core is not None:
        pairs.append(("core version", needed_core, client_version))
    rows = [(what, console, ours) for what, console, ours in pairs if console != ours]
    return [r for r in rows if r[0] != "framework.versions" or r[2] not in r[1].split(", ")]


def _fix(problem: Problem, payload: Any, spec: JobSpec, exp_label: str, local_versions: Sequence[str],
         client_version: str) -> Problem:
    name = spec.spec.recipe.name
    entry = _entry(payload, name)
    if problem.code == "core_version_incompatible" and problem.data.get("versions", {}).get("too_old", True):
        needed = _needed_core(problem, payload, entry)
        return replace(problem, hint=f"upgrade sf: this client is {client_version}, the catalog needs {needed}")
    if problem.code == "framework_version_unsupported":
        served = entry.get("supported_framework_versions")
        served = [str(v) for v in served] if isinstance(served, list) else []
        usable = [v for v in served if v in local_versions]
        if usable:
            return replace(problem, hint=f"run `sf recipe upgrade {exp_label} --framework-version {usable[0]}`")
        return replace(problem, hint=f"upgrade sf: this client's {name} runs framework versions "
                                     f"{', '.join(local_versions) or 'none'}; the console serves {', '.join(served)}")
    if problem.code in ("recipe_version_mismatch", "recipe_digest_mismatch", "framework_kind_mismatch",
                        "runtime_id_mismatch"):
        return replace(problem, hint=f"upgrade sf (this client is {client_version}) so its catalog matches the "
                                     f"console's, or ask the console operator to publish {name}@"
                                     f"{spec.spec.recipe.version}; `sf recipe upgrade` cannot fix this")
    return problem


def check_handshake(payload: Any, spec: JobSpec, *, exp_label: str, local_versions: Sequence[str] = (),
                    client_version: str = __version__) -> HandshakeReport:
    """Run the client-side checks H1-H8 of the console's catalog `payload` against `spec`, with the fix as hint.

    `local_versions` are the framework versions the local recipe offers (to tell whether `sf recipe upgrade
    --framework-version` can reach one the console serves). Nothing is uploaded when the report is not ok.
    """
    from starforge.recipes import check_client_handshake

    problems = check_client_handshake(payload, spec, client_version)
    if not problems:
        return HandshakeReport([])
    fixed = [_fix(p, payload, spec, exp_label, local_versions, client_version) for p in problems]
    core = next((p for p in problems if p.code == "core_version_incompatible"), None)
    needed = _needed_core(core, payload, _entry(payload, spec.spec.recipe.name)) if core else None
    return HandshakeReport(fixed, _rows(payload, spec, client_version, needed))
