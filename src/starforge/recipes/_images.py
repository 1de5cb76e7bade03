"""Image overrides: OCI reference syntax (gate R4) and the Docker registry host rules of the allowlist (§9.2)."""

from __future__ import annotations

from collections.abc import Iterable

from ._manifest_runtime import check_oci_reference

__all__ = ["image_allowed", "image_reference_error", "image_registry_host"]


def image_reference_error(reference: str) -> str:
    """Return why `reference` is not a valid OCI image reference, or "" when it is: the OCI syntax, and a
    repository name in lower case (registries refuse `nvcr.io/NVIDIA/NeMo`; only the host and the tag may not be)."""
    why = check_oci_reference(reference)
    if why:
        return why
    _host, repository = _split(reference.strip())
    if repository != repository.lower():
        return (f"the repository name {repository!r} has upper-case letters, which registries refuse "
                f"(write {repository.lower()!r})")
    return ""


def _split(ref: str) -> tuple[str, str]:
    """Return `(registry host as written or "", repository)` of a reference, by Docker's rules (tag and digest
    dropped): the first component is a host when it has `.` or `:`, is `localhost`, or has an upper-case letter."""
    name = ref.split("@", 1)[0]
    slash = name.rfind("/")
    if name.rfind(":") > slash:
        name = name[:name.rfind(":")]
    first, sep, rest = name.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost" or first != first.lower()):
        return first, rest
    return "", name


def image_registry_host(ref: str) -> str:
    """Return the registry host of an image reference the way Docker resolves it (lower-cased, port kept)."""
    host = _split(ref.strip())[0].lower()
    return "docker.io" if host in ("", "index.docker.io") else host


def image_allowed(ref: str, allowlist: Iterable[str]) -> bool:
    """Return True when the registry host of `ref` equals an allowlist entry exactly (case-insensitively)."""
    host = image_registry_host(ref)
    return any(host == entry.strip().lower() for entry in allowlist)
