"""Stage A of admission: the `X-Forge-Meta` header (or the JSON body of the tool API) before any spec rule.

Tier: shared (pure; no database). `envelope` reads both submission shapes into what `read_meta` checks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ....contract import JsonObject, Problem

__all__ = ["SWEEP_ID", "Meta", "parse_meta_header", "read_meta", "restarts_problem"]

KNOWN_META = frozenset(
    {"exp", "profile", "git_commit", "git_dirty", "config_sha", "project", "spec", "sweep_id", "sweep_params",
     "sweep_early_stop", "action", "flags", "allow_pending", "max_restarts"}
)
# a sweep id becomes a URL path segment (`/api/sweeps/{id}`): the official client's `sweep-<exp>-<YYYYmmdd-HHMMSS>`
SWEEP_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,159}", re.ASCII)


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


def restarts_problem(extra: Mapping[str, Any], cap: int) -> Problem | None:
    """Return the refusal of a submission asking for more automatic restarts (`max_restarts`) than the deployment's
    cap (`restarts.max_restarts`), or None."""
    asked = extra.get("max_restarts", 0)
    if isinstance(asked, int) and asked > cap:
        return Problem("--max-restarts", "out_of_range",
                       f"--max-restarts {asked} is more than this console allows ({cap})",
                       f"ask for at most {cap}; an operator sets the cap with restarts.max_restarts")
    return None


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
    if not isinstance(doc.get("allow_pending", False), bool):  # ours: let a job no capacity can serve wait
        problems.append(Problem("X-Forge-Meta.allow_pending", "meta_invalid", "allow_pending must be true or false"))
    sweep_id = doc.get("sweep_id")
    if sweep_id is not None and not (isinstance(sweep_id, str) and SWEEP_ID.fullmatch(sweep_id)):
        problems.append(Problem("X-Forge-Meta.sweep_id", "meta_invalid",
                                "sweep_id must be 1 to 160 letters, digits, '.', '_' or '-', starting with a letter "
                                "or digit", "send the id `sf sweep` made, such as sweep-my-grpo-20261202-093000"))
    if not isinstance(doc.get("sweep_params", {}), dict):
        problems.append(Problem("X-Forge-Meta.sweep_params", "meta_invalid",
                                "sweep_params must be an object {param: value}"))
    restarts = doc.get("max_restarts", 0)
    if isinstance(restarts, bool) or not isinstance(restarts, int) or restarts < 0:
        problems.append(Problem("X-Forge-Meta.max_restarts", "meta_invalid",
                                "max_restarts must be a whole number ≥ 0 (`sf submit --max-restarts N`)"))
    for key in doc:
        if key not in KNOWN_META:
            warnings.append(Problem(f"X-Forge-Meta.{key}", "unknown_field", "unknown field, ignored"))
    if problems:
        return None, problems, warnings
    extra = {k: v for k, v in doc.items() if k in KNOWN_META and k not in ("exp", "profile", "spec")}
    return Meta(values["exp"], values["profile"], spec, extra), [], warnings
