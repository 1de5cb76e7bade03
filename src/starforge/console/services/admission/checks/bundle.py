"""Bundle safety: the uploaded job bundle is inspected as hostile before anything is stored."""

from __future__ import annotations

from .....bundle import BundleLimits, inspect_bundle
from .....contract import Problem
from ..context import AdmissionContext

__all__ = ["check_bundle"]


def check_bundle(ctx: AdmissionContext) -> list[Problem]:
    """Refuse absolute paths, `..`, links leaving the bundle, devices, and count/size/expansion-ratio excess."""
    if ctx.bundle is None:
        return []
    limits = BundleLimits(max_bytes=ctx.settings.max_bundle_bytes, max_files=ctx.settings.max_bundle_files)
    return inspect_bundle(ctx.bundle, limits)
