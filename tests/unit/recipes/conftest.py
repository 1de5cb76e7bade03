"""Recipes tests: the official catalogs on demand and a one-recipe test catalog (FORGE_HOME is private suite-wide)."""

from __future__ import annotations

from pathlib import Path

import pytest

from starforge.recipes import Catalog, Recipe
from tests.conftest import service_unavailable
from tests.official import OfficialUnavailable, official_catalog
from tests.unit.recipes.trees import catalog, manifest


def _official(version: str) -> Path:
    try:
        return official_catalog(version)
    except OfficialUnavailable as exc:  # no network: skip loudly, but never in CI
        service_unavailable("official catalog (PyPI)", str(exc), "needs PyPI to download starforge-core")


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


@pytest.fixture
def cat(tmp_path: Path) -> Catalog:
    """A one-recipe catalog tree (`testfw/grpo`) in a temporary directory."""
    return catalog(tmp_path / "tree", manifest())


@pytest.fixture
def recipe(cat: Catalog) -> Recipe:
    found = cat.get("testfw/grpo")
    assert found is not None
    return found
