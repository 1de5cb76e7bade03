"""Stage A of admission: the `X-Forge-Meta` header (or the JSON body of the tool API) before any spec rule.

Tier: shared (pure; no database). `envelope` reads both submission shapes into what `read_meta` checks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ....contract import JsonObject, Problem

__all__ = ["Meta", "parse_meta_header", "read_meta"]

KNOWN_META = frozenset(
    {"exp", "profile", "git_commit", "git_dirty", "config_sha", "project", "spec", "sweep_id", "sweep_params",
     "sweep_early_stop", "action", "flags"}
)


@dataclass(frozen=True)
class Meta:
    """The submission envelope: experiment, profile, provenance echo and the raw spec document."""

    exp: str
    profile: str
    spec: Any
    extra: dict[str, Any] = field(default_factory=dict)


def parse_meta_header(raw: bytes | None) -> tuple[Any, list[Problem]]:
    """Decode `X-Forge-Meta` (ISO-8859-1 bytes of JSON) into an object, or return the problem."""
    if raw is None or not raw.strip():
        return None, [Problem("X-Forge-Meta", "meta_invalid", "the X-Forge-Meta header is missing",
                              "send the submission with `sf submit`, or use POST /api/admission/check for a spec alone")]
    try:
        return json.loads(raw.decode("latin-1"), object_pairs_hook=JsonObject), []
    except ValueError as exc:
        return None, [Problem("X-Forge-Meta", "meta_invalid", f"X-Forge-Meta is not valid JSON: {exc}")]


def read_meta(doc: Any, *, require_exp: bool = True) -> tuple[Meta | None, list[Problem], list[Problem]]:
    """Check the envelope: an object with a `spec` object and non-empty `exp` and `profile` equal to the spec's."""
    problems: list[Problem] = []
    warnings: list[Problem] = []
    if not isinstance(doc, dict):
        return None, [Problem("X-Forge-Meta", "meta_invalid", "X-Forge-Meta must be a JSON object")], []
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        problems.append(Problem("X-Forge-Meta.spec", "meta_invalid", "X-Forge-Meta.spec must be the JobSpec object"))
    values: dict[str, str] = {}
    for key in ("exp", "profile"):
        value = doc.get(key)
        if (require_exp or key == "profile") and (not isinstance(value, str) or not value.strip()):
            problems.append(Problem(f"X-Forge-Meta.{key}", "meta_invalid", f"{key} must be a non-empty string"))
        values[key] = value.strip() if isinstance(value, str) else ""
    if not problems and values["exp"] and isinstance(spec, dict):
        source = spec.get("spec", {}).get("source", {}) if isinstance(spec.get("spec"), dict) else {}
        spec_exp = source.get("exp") if isinstance(source, dict) else None
        if not isinstance(spec_exp, str) or spec_exp.strip().rstrip("/") != values["exp"].rstrip("/"):
            problems.append(
                Problem("X-Forge-Meta.exp", "meta_invalid",
                        f"exp {values['exp']!r} differs from spec.source.exp {spec_exp!r}",
                        "both must name the same experiment path")
            )
    for key in doc:
        if key not in KNOWN_META:
            warnings.append(Problem(f"X-Forge-Meta.{key}", "unknown_field", "unknown field, ignored"))
    if problems:
        return None, problems, warnings
    extra = {k: v for k, v in doc.items() if k in KNOWN_META and k not in ("exp", "profile", "spec")}
    return Meta(values["exp"], values["profile"], spec, extra), [], warnings
