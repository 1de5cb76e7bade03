"""Image overrides: OCI reference syntax (gate R4) and the Docker registry host rules of the allowlist (§9.2)."""

from __future__ import annotations

from collections.abc import Iterable

from ..contract import image_name, image_registry_host
from ._manifest_runtime import check_oci_reference

__all__ = ["image_allowed", "image_reference_error", "image_registry_host"]


def image_reference_error(reference: str) -> str:
    """Return why `reference` is not a valid OCI image reference, or "" when it is: the OCI syntax, and a
    repository name in lower case (registries refuse `nvcr.io/NVIDIA/NeMo`; only the host and the tag may not be)."""
    why = check_oci_reference(reference)
    if why:
        return why
    repository = image_name(reference).repository
    if repository != repository.lower():
        return (f"the repository name {repository!r} has upper-case letters, which registries refuse "
                f"(write {repository.lower()!r})")
    return ""


def image_allowed(ref: str, allowlist: Iterable[str]) -> bool:
    """Return True when the registry host of `ref` equals an allowlist entry exactly (case-insensitively)."""
    host = image_registry_host(ref)
    return any(host == entry.strip().lower() for entry in allowlist)
