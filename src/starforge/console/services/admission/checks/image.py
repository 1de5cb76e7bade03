"""Image allowlist: an image override's registry host, resolved by Docker's rules, must be on the allowlist."""

from __future__ import annotations

from .....contract import Problem
from .....recipes import image_allowed, image_registry_host
from ..context import AdmissionContext

__all__ = ["check_image"]


def check_image(ctx: AdmissionContext) -> list[Problem]:
    """Refuse an image whose registry host is not allowlisted (an unset allowlist disables the check)."""
    image = ctx.spec.spec.framework.image
    allowlist = ctx.settings.image_allowlist
    if not image or allowlist is None or image_allowed(image, list(allowlist)):
        return []
    host = image_registry_host(image)
    allowed = ", ".join(allowlist) if allowlist else "(none: image overrides are disabled here)"
    return [
        Problem(
            "spec.framework.image",
            "image_not_allowed",
            f"registry {host} of image {image!r} is not on this deployment's allowlist",
            f"use an image from an allowed registry: {allowed}",
        )
    ]
