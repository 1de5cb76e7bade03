"""The recipe identity: the `FORGE_*` variables `spec_to_env` writes last, read from a JobSpec or a launch plan.

The variables and the attribute each comes from are the contract's own table (`spec_to_env` section 8); a launch
plan names the same attributes (`recipe.name`, `framework.runtime_id`, …), so one table serves both sources.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Final

from starforge.contract import (
    RECIPE_IDENTITY,  # the table `spec_to_env` writes the identity from
    JobSpec,
)

from ._plan import LaunchPlan

__all__ = ["IDENTITY_VARIABLES", "RECIPE_IDENTITY", "plan_identity", "spec_identity"]

IDENTITY_VARIABLES: Final = tuple(variable for variable, _attribute in RECIPE_IDENTITY)


def spec_identity(spec: JobSpec) -> dict[str, str]:
    """Return the identity variables exactly as `spec_to_env` derives them from `spec` (empty values kept)."""
    return _identity(spec.spec)


def plan_identity(plan: LaunchPlan) -> dict[str, str]:
    """Return the identity variables the launch plan implies."""
    return _identity(plan)


def _identity(source: object) -> dict[str, str]:
    return {variable: str(attrgetter(attribute)(source)) for variable, attribute in RECIPE_IDENTITY}
