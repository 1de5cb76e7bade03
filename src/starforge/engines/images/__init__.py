"""Job images: pulled from allowlisted registries with the operator's access, unpacked once per digest into a
bounded read-only cache, and shown to the sandbox as the job's root filesystem (`sandbox.View.root`)."""

from ...contract import pinned_reference
from .cache import ImageCache, UnpackedImage, make_safe
from .config import DEFAULT_MAX_BYTES, ImageSettings, RegistryAccess, image_settings_from
from .service import Images, pull_ahead
from .tools import PullError, ToolMissing

__all__ = [
    "DEFAULT_MAX_BYTES",
    "ImageCache",
    "ImageSettings",
    "Images",
    "PullError",
    "RegistryAccess",
    "ToolMissing",
    "UnpackedImage",
    "image_settings_from",
    "make_safe",
    "pinned_reference",
    "pull_ahead",
]
