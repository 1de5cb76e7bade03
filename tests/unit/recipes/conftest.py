"""Recipes tests: a private FORGE_HOME, no overlays from the environment, and the official catalogs on demand."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.official import OfficialUnavailable, official_catalog


@pytest.fixture(scope="session", autouse=True)
def _private_forge_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Point FORGE_HOME at a session directory and clear FORGE_RECIPE_PATH, so no test reads the user's state."""
    home = tmp_path_factory.mktemp("forge-home")
    saved = {k: os.environ.get(k) for k in ("FORGE_HOME", "FORGE_RECIPE_PATH")}
    os.environ["FORGE_HOME"] = str(home)
    os.environ.pop("FORGE_RECIPE_PATH", None)
    yield home
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def _official(version: str) -> Path:
    try:
        return official_catalog(version)
    except OfficialUnavailable as exc:  # no network: skip loudly rather than fail for an unrelated reason
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def official_0356() -> Path:
    """The official 0.3.56 catalog tree."""
    return _official("0.3.56")


@pytest.fixture(scope="session")
def official_0338() -> Path:
    """The official 0.3.38 catalog tree."""
    return _official("0.3.38")


@pytest.fixture(scope="session")
def official_032() -> Path:
    """The official 0.3.2 catalog tree."""
    return _official("0.3.2")
