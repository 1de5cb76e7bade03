"""`images:` of the console configuration: where pulled images are kept, how large that cache may grow, and each
registry's connection and credentials (the operator's, never a user's).

    images:
      cache_dir: /var/cache/starforge/images     # default: <user cache>/starforge/images
      max_bytes: 50000000000                      # unpacked size the cache keeps (least recently used go first)
      pull_timeout: 1800                          # seconds one pull may take
      run: true                                   # false: record the image, run jobs on this machine's system
      registries:
        registry.example.com: {auth_file: /etc/starforge/registry-auth.json}   # a containers-auth.json file
        127.0.0.1:5055: {tls_verify: false}                                     # plain HTTP (a loopback registry)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..config_reader import known_block

__all__ = ["DEFAULT_MAX_BYTES", "ImageSettings", "RegistryAccess", "image_settings_from"]

DEFAULT_MAX_BYTES = 50 * 1000**3
_KNOWN = ("cache_dir", "max_bytes", "pull_timeout", "registries", "run")
_REGISTRY_KNOWN = ("tls_verify", "auth_file")


@dataclass(frozen=True)
class RegistryAccess:
    """How the console reaches one registry: over TLS or not, and with which credentials file (None: anonymous)."""

    tls_verify: bool = True
    auth_file: Path | None = None


@dataclass(frozen=True)
class ImageSettings:
    """The image cache and the registries the console pulls from."""

    cache_dir: Path
    max_bytes: int = DEFAULT_MAX_BYTES
    pull_timeout: float = 1800.0
    registries: Mapping[str, RegistryAccess] = field(default_factory=dict)
    run: bool = True  # False: images are admitted and recorded, and jobs run on the machine's system (said loudly)

    def access(self, host: str) -> RegistryAccess:
        """Return how to reach registry `host` (the defaults when the operator named nothing for it)."""
        return self.registries.get(host.lower(), RegistryAccess())


def _registry(host: str, raw: Any) -> RegistryAccess:
    path = f"images.registries.{host}"
    block = known_block(raw or {}, path, _REGISTRY_KNOWN)
    tls = block.get("tls_verify", True)
    if not isinstance(tls, bool):
        raise ValueError(f"{path}.tls_verify: must be true or false")
    auth = block.get("auth_file")
    if auth is not None and (not isinstance(auth, str) or not auth.strip()):
        raise ValueError(f"{path}.auth_file: must be the path of a containers-auth.json file")
    return RegistryAccess(tls, Path(auth).expanduser() if auth else None)


def image_settings_from(raw: Any, defaults: ImageSettings) -> ImageSettings:
    """Return `defaults` with the values of the `images:` block `raw`; raise ValueError naming the bad key."""
    block = known_block(raw or {}, "images", _KNOWN)
    out = defaults
    if "cache_dir" in block:
        if not isinstance(block["cache_dir"], str) or not block["cache_dir"].strip():
            raise ValueError("images.cache_dir: must be a folder path")
        out = replace(out, cache_dir=Path(block["cache_dir"]).expanduser())
    if "max_bytes" in block:
        value = block["max_bytes"]
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError("images.max_bytes: must be a whole number of bytes above 0, e.g. 50000000000")
        out = replace(out, max_bytes=value)
    if "pull_timeout" in block:
        value = block["pull_timeout"]
        if isinstance(value, bool) or not isinstance(value, int | float) or not 1 <= value <= 86400:
            raise ValueError("images.pull_timeout: must be a number of seconds from 1 to 86400")
        out = replace(out, pull_timeout=float(value))
    if "run" in block:
        if not isinstance(block["run"], bool):
            raise ValueError("images.run: must be true (jobs run in their image) or false (on this machine's system)")
        out = replace(out, run=block["run"])
    if "registries" in block:
        registries = block["registries"]
        if not isinstance(registries, dict):
            raise ValueError("images.registries: must map registry hosts to {tls_verify, auth_file}")
        out = replace(out, registries={str(h).lower(): _registry(str(h), v) for h, v in registries.items()})
    return out
