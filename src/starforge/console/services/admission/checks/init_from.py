"""`init_from`: the artifact must exist and be readable by the submitter."""

from __future__ import annotations

from .....contract import Problem
from ..context import AdmissionContext

__all__ = ["check_init_from"]


def check_init_from(ctx: AdmissionContext) -> list[Problem]:
    """Refuse an `init_from` that names no artifact the submitter may read."""
    ref = ctx.spec.spec.model.init_from
    if ref is None or ctx.resolutions.init_from is not None:
        return []
    return [
        Problem(
            "spec.model.init_from",
            "artifact_unknown",
            f"{ref} names no artifact you can read",
            f"list the run's artifacts with `sf job artifacts {ref.run_id}`; only your own runs can be used",
        )
    ]
