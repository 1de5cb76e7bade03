"""Image references by Docker's rules: which part names the registry host, the repository, the tag and the digest."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["ImageName", "image_name", "image_registry_host", "pinned_reference"]

DOCKER_HUB = "docker.io"


class ImageName(NamedTuple):
    """An image reference taken apart: registry host as written ("" for Docker Hub), repository, tag, digest."""

    host: str
    repository: str
    tag: str
    digest: str


def image_name(ref: str) -> ImageName:
    """Return the parts of `ref`: the first component is a host when it has `.` or `:`, is `localhost`, or has an
    upper-case letter (Docker's rule); the tag is what follows the last `:` after the last `/`."""
    name, _, digest = ref.strip().partition("@")
    slash = name.rfind("/")
    tag = ""
    if name.rfind(":") > slash:
        name, tag = name[:name.rfind(":")], name[name.rfind(":") + 1:]
    first, sep, rest = name.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost" or first != first.lower()):
        return ImageName(first, rest, tag, digest)
    return ImageName("", name, tag, digest)


def image_registry_host(ref: str) -> str:
    """Return the registry host of an image reference the way Docker resolves it (lower-cased, port kept)."""
    host = image_name(ref).host.lower()
    return DOCKER_HUB if host in ("", "index.docker.io") else host


def pinned_reference(reference: str, digest: str) -> str:
    """Return `reference` pinned to `digest`: `host/repository@sha256:…` (its tag dropped)."""
    name = image_name(reference)
    return f"{name.host}/{name.repository}@{digest}" if name.host else f"{name.repository}@{digest}"
