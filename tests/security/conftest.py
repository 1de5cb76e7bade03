"""Fixtures of the security suite: consoles started per test and always stopped (see `consoles.Launcher`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.security.consoles import Launcher


@pytest.fixture
def launch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Launcher]:
    """A factory of running consoles (`launch("sqlite" | "postgres", config)`), stopped at the end of the test."""
    launcher = Launcher(tmp_path_factory)
    try:
        yield launcher
    finally:
        launcher.close()


@pytest.fixture(scope="module")
def launch_module(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Launcher]:
    """The same factory for module-scoped consoles."""
    launcher = Launcher(tmp_path_factory)
    try:
        yield launcher
    finally:
        launcher.close()
