"""`check_image`: an image override's registry host (Docker's rules) must be on the allowlist; none allows no image."""

from __future__ import annotations

import pytest

from starforge.console.services.admission.checks import check_image

from .contexts import DOC, context, job, triples

HOW = ("an operator adds the registry host to `image_allowlist` in the console configuration "
       "(or starts the console with `sf console up --allow-registry HOST`)")
ALLOWLIST = ("nvcr.io", "registry.internal:5000", "docker.io")


def _with_image(image: str) -> dict[str, str]:
    return {**DOC["spec"]["framework"], "image": image}


def test_a_job_without_an_image_passes_even_without_an_allowlist() -> None:
    assert check_image(context(settings__image_allowlist=None)) == []
    assert check_image(context(settings__image_allowlist=())) == []


@pytest.mark.parametrize("image", [
    "nvcr.io/nvidia/pytorch:24.05", "NVCR.IO/nvidia/pytorch:24.05",
    "registry.internal:5000/team/trainer@sha256:" + "a" * 64,
    "ubuntu:24.04", "library/ubuntu", "index.docker.io/library/ubuntu",
])
def test_an_image_from_an_allowed_registry_passes(image: str) -> None:
    ctx = context(job(spec__framework=_with_image(image)), settings__image_allowlist=ALLOWLIST)
    assert check_image(ctx) == []


@pytest.mark.parametrize(("image", "host"), [
    ("ghcr.io/team/trainer:1", "ghcr.io"),
    ("registry.internal/team/trainer:1", "registry.internal"),  # the port is part of the host
    ("localhost:5000/trainer", "localhost:5000"),
])
def test_an_image_from_another_registry_is_refused_naming_the_allowed_ones(image: str, host: str) -> None:
    ctx = context(job(spec__framework=_with_image(image)), settings__image_allowlist=ALLOWLIST)
    [problem] = check_image(ctx)
    assert triples([problem]) == [("spec.framework.image", "image_not_allowed",
                                   f"use an image from an allowed registry (nvcr.io, registry.internal:5000, "
                                   f"docker.io), or {HOW}")]
    assert problem.message == f"registry {host} of image {image!r} is not on this deployment's allowlist"
    assert problem.data == {"got": image, "registry": host, "allowed": list(ALLOWLIST)}


@pytest.mark.parametrize("allowlist", [None, ()])
def test_without_an_allowlist_every_image_is_refused(allowlist: tuple[str, ...] | None) -> None:
    ctx = context(job(spec__framework=_with_image("nvcr.io/nvidia/pytorch:24.05")), settings__image_allowlist=allowlist)
    [problem] = check_image(ctx)
    assert triples([problem]) == [("spec.framework.image", "image_not_allowed",
                                   f"drop --image to use the recipe's runtime, or {HOW}")]
    assert problem.message == ("image 'nvcr.io/nvidia/pytorch:24.05' cannot be used: this console allows no image "
                               "registries")
    assert problem.data == {"got": "nvcr.io/nvidia/pytorch:24.05", "registry": "nvcr.io", "allowed": []}
