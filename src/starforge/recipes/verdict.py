"""The static verdict of a JobSpec document: contract (stage B), then catalog (C) and recipe gates (D).

`sf spec check`, `POST /api/admission/check`, the console's admission and MCP's `validate_jobspec` all call
`check_document`, so a spec accepted locally is never refused remotely for a contract or catalog reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starforge.contract import JobSpec, Problem, parse

from ._catalog import Catalog, load_catalog
from ._digests import SCHEMES
from ._gates import check_gates
from ._handshake import check_catalog

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


def open_catalog(path: str | Path | None, scheme: str = "manifest") -> Catalog:
    """Return the catalog to check against: the recipe tree at `path` (exactly that tree), else the built-in one.

    The built-in catalog includes the overlays (`FORGE_RECIPE_PATH`, `$FORGE_HOME/recipes`). Raises ValueError
    with a readable message for an unknown scheme, a path that is not a recipe tree, or an invalid manifest.
    """
    if scheme not in SCHEMES:
        raise ValueError(f"unknown digest scheme {scheme!r}: use manifest or manifest+template")
    if path is None:
        return load_catalog(scheme=scheme)
    tree = Path(path).expanduser()
    if not tree.is_dir():
        raise ValueError(f"no recipe tree at {path}: expected a directory of <framework>/<name>/recipe.yaml")
    try:
        return load_catalog(tree, scheme=scheme, overlays=False)
    except OSError as exc:
        raise ValueError(f"cannot read the recipe tree at {path}: {exc}") from None


def check_document(doc: Any, catalog: Catalog | None = None, *, validate: bool = True) -> Verdict:
    """Run stage B (contract), then stage C (H4-H8) if B passed, then stage D (R1-R7) if C passed.

    Without a catalog only the contract runs. An accepted verdict carries the normalised spec (hyperparameters
    rebuilt in declaration order with defaults); `validate=False` skips R1, R2 and R6 (the CLI's --no-validate).
    """
    parsed = parse(doc)
    warnings = list(parsed.warnings)
    if parsed.spec is None or catalog is None:
        return Verdict(parsed.spec, list(parsed.problems), warnings)
    problems = check_catalog(parsed.spec, catalog)
    if problems:
        return Verdict(None, problems, warnings)
    recipe = catalog.get(parsed.spec.spec.recipe.name)
    assert recipe is not None  # stage C found it
    spec, problems, gate_warnings = check_gates(parsed.spec, recipe, validate=validate)
    warnings += gate_warnings
    return Verdict(None if problems else spec, problems, warnings)
