"""Image allowlist: an image override's registry host, resolved by Docker's rules, must be on the allowlist.

Secure by default: a console without an `image_allowlist` refuses every image override.
"""

from __future__ import annotations

from .....contract import Problem
from .....recipes import image_allowed, image_registry_host
from ..context import AdmissionContext

__all__ = ["check_image"]

_HOW = ("an operator adds the registry host to `image_allowlist` in the console configuration "
        "(or starts the console with `sf console up --allow-registry HOST`)")


def check_image(ctx: AdmissionContext) -> list[Problem]:
    """Refuse an image whose registry host is not allowlisted; without an allowlist, refuse every image."""
    image = ctx.spec.spec.framework.image
    allowlist = ctx.settings.image_allowlist
    if not image or (allowlist and image_allowed(image, list(allowlist))):
        return []
    host = image_registry_host(image)
    if not allowlist:
        return [
            Problem(
                "spec.framework.image",
                "image_not_allowed",
                f"image {image!r} cannot be used: this console allows no image registries",
                f"drop --image to use the recipe's runtime, or {_HOW}",
                {"got": image, "registry": host, "allowed": []},
            )
        ]
    return [
        Problem(
            "spec.framework.image",
            "image_not_allowed",
            f"registry {host} of image {image!r} is not on this deployment's allowlist",
            f"use an image from an allowed registry ({', '.join(allowlist)}), or {_HOW}",
            {"got": image, "registry": host, "allowed": list(allowlist)},
        )
    ]
