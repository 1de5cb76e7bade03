"""The recipe identity re-check: the job environment, the JobSpec and the launch plan must name the same recipe."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from starforge.contract import JobSpec
from starforge.wire import IDENTITY_VARIABLES, LaunchPlan, plan_identity, spec_identity

__all__ = ["Mismatch", "check_identity"]


@dataclass(frozen=True, slots=True)
class Mismatch:
    """One identity variable on which two sources disagree, with both values (`None`: unset)."""

    variable: str
    source: str
    value: str | None
    other_source: str
    other_value: str | None

    def __str__(self) -> str:
        return (
            f"{self.variable}: {self.source} has {_show(self.value)} "
            f"but {self.other_source} has {_show(self.other_value)}"
        )


def check_identity(environ: Mapping[str, str], spec: JobSpec, plan: LaunchPlan) -> list[Mismatch]:
    """Return every disagreement, variable by variable: environment vs JobSpec, then JobSpec vs launch plan.

    An unset variable equals an empty value, because `spec_to_env` drops empty values (e.g. no runtime id).
    """
    from_spec = spec_identity(spec)
    from_plan = plan_identity(plan)
    mismatches: list[Mismatch] = []
    for name in IDENTITY_VARIABLES:
        env_value = environ.get(name)
        if (env_value or "") != from_spec[name]:
            mismatches.append(Mismatch(name, "the environment", env_value, "the JobSpec", from_spec[name]))
        if from_spec[name] != from_plan[name]:
            mismatches.append(
                Mismatch(name, "the JobSpec", from_spec[name], "the launch plan", from_plan[name])
            )
    return mismatches


def _show(value: str | None) -> str:
    return "(unset)" if value is None else repr(value)
