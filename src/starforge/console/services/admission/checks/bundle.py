"""Bundle safety: the uploaded job bundle is inspected as hostile before anything is stored."""

from __future__ import annotations

from .....bundle import BundleLimits, inspect_bundle
from .....contract import Problem
from ....settings import Settings
from ..context import AdmissionContext

__all__ = ["bundle_problems", "check_bundle"]


def check_bundle(ctx: AdmissionContext) -> list[Problem]:
    """Refuse absolute paths, `..`, links leaving the bundle, devices, and count/size/expansion-ratio excess."""
    return [] if ctx.bundle is None else bundle_problems(ctx.settings, ctx.bundle)


def bundle_problems(settings: Settings, bundle: bytes) -> list[Problem]:
    """Return what is wrong with `bundle` within this console's limits (it depends on nothing else, so a sweep's
    one bundle is inspected once for all of its points)."""
    limits = BundleLimits(max_bytes=settings.max_bundle_bytes, max_files=settings.max_bundle_files)
    return inspect_bundle(bundle, limits)
