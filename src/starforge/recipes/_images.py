"""Image overrides: OCI reference syntax (gate R4) and the Docker registry host rules of the allowlist (§9.2)."""

from __future__ import annotations

from collections.abc import Iterable

from ._manifest_runtime import check_oci_reference

__all__ = ["image_allowed", "image_reference_error", "image_registry_host"]


def image_reference_error(reference: str) -> str:
    """Return why `reference` is not a valid OCI image reference, or "" when it is."""
    return check_oci_reference(reference)


def image_registry_host(ref: str) -> str:
    """Return the registry host of an image reference the way Docker resolves it (lower-cased, port kept)."""
    name = ref.strip().split("@", 1)[0]
    if "/" not in name:
        return "docker.io"
    first = name.split("/", 1)[0]
    if "." in first or ":" in first or first == "localhost" or first != first.lower():
        host = first.lower()
        return "docker.io" if host == "index.docker.io" else host
    return "docker.io"


def image_allowed(ref: str, allowlist: Iterable[str]) -> bool:
    """Return True when the registry host of `ref` equals an allowlist entry exactly (case-insensitively)."""
    host = image_registry_host(ref)
    return any(host == entry.strip().lower() for entry in allowlist)
