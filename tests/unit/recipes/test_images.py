"""Image references: the OCI syntax of gate R4 and the Docker registry host rules of the allowlist (§9.2)."""

from __future__ import annotations

import pytest

from starforge.recipes import image_allowed, image_reference_error, image_registry_host


@pytest.mark.parametrize(
    ("ref", "host"),
    [
        ("nvcr.io/nvidia/nemo-rl:v0.7.0", "nvcr.io"),
        ("registry.internal:5000/team/trainer:1.4", "registry.internal:5000"),
        ("registry/nemo-rl-ext:v0.7.0", "docker.io"),
        ("ubuntu:22.04", "docker.io"),
        ("localhost:5000/x", "localhost:5000"),
        ("localhost/x", "localhost"),
        ("index.docker.io/library/ubuntu", "docker.io"),
        ("Registry/x", "registry"),
        ("NVCR.IO/nvidia/x", "nvcr.io"),
        ("nvcr.io/nvidia/nemo-rl@sha256:" + "b" * 64, "nvcr.io"),
        ("ubuntu@sha256:" + "b" * 64, "docker.io"),
        ("team/x@sha256:" + "b" * 64, "docker.io"),
    ],
)
def test_registry_host(ref: str, host: str) -> None:
    assert image_registry_host(ref) == host


def test_allowlist_is_exact_and_case_insensitive() -> None:
    allow = ["nvcr.io", "Registry.Internal:5000"]
    assert image_allowed("nvcr.io/nvidia/x:1", allow)
    assert image_allowed("registry.internal:5000/team/x:1", allow)
    assert not image_allowed("registry.internal/team/x:1", allow)
    assert not image_allowed("registry/nemo-rl-ext:v0.7.0", allow)
    assert not image_allowed("nvcr.io/x:1", [])


@pytest.mark.parametrize(
    ("ref", "ok"),
    [("ubuntu:22.04", True), ("nvcr.io/nvidia/nemo-rl@sha256:" + "b" * 64, True), ("a b", False),
     ("x@sha256:abc", False), ("x@sha256:" + "B" * 64, False), ("x@latest", False), ("", False),
     # registries refuse upper case in a repository name; a host (Docker's rule) and a tag may have it
     ("nvcr.io/NVIDIA/nemo-rl:v1", False), ("Ubuntu:22.04", False), ("team/Trainer:1", False),
     ("NVCR.IO/nvidia/x:1", True), ("nvcr.io/nvidia/x:V1-RC", True), ("localhost:5000/x:Latest", True),
     ("registry.internal:5000/team/trainer", True)],
)
def test_reference_syntax(ref: str, ok: bool) -> None:
    assert (image_reference_error(ref) == "") is ok


def test_an_upper_case_repository_names_the_lower_case_form() -> None:
    why = image_reference_error("nvcr.io/NVIDIA/NeMo-RL:v0.7.0")
    assert "'NVIDIA/NeMo-RL' has upper-case letters" in why and "'nvidia/nemo-rl'" in why
