"""The shared conformance cases of layers catalog, admission and client, through `check_document`.

They run against the official 0.3.56 catalog (read as data), published under scheme `manifest` with the core
requirement of that served catalog, `>=0.3.56,<0.4`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from starforge.contract import parse
from starforge.recipes import Catalog, check_document, check_gates, load_catalog
from tests.conftest import load_cases

LAYERS = ("catalog", "admission", "client")


@pytest.fixture(scope="module")
def served(official_0356: Path) -> Catalog:
    return load_catalog(official_0356, scheme="manifest", overlays=False, core_version="0.3.56",
                        core_requirement=">=0.3.56,<0.4")


@pytest.mark.parametrize("case", load_cases(*LAYERS), ids=lambda c: c["name"])
def test_case(case: dict[str, Any], served: Catalog) -> None:
    verdict = check_document(case["spec"], served)
    if case["expect"] == "accept":
        assert verdict.ok, [str(p) for p in verdict.problems]
        assert verdict.spec is not None
    else:
        assert not verdict.ok
        assert verdict.problems[0].field == case["field"], [str(p) for p in verdict.problems]
        assert all(p.code and p.message for p in verdict.problems)


def test_the_cases_cover_every_layer() -> None:
    assert {c["layer"] for c in load_cases(*LAYERS)} == set(LAYERS)


@pytest.mark.parametrize("case", load_cases("client"), ids=lambda c: c["name"])
def test_client_cases_are_refused_by_the_gates(case: dict[str, Any], served: Catalog) -> None:
    parsed = parse(case["spec"])
    assert parsed.spec is not None
    recipe = served.get(parsed.spec.spec.recipe.name)
    assert recipe is not None
    _, problems, _ = check_gates(parsed.spec, recipe)
    assert problems and problems[0].field == case["field"]


def test_the_core_version_case_names_both_versions(served: Catalog) -> None:
    case = next(c for c in load_cases("catalog") if c["name"] == "reject_core_version_below_range")
    message = check_document(case["spec"], served).problems[0].message
    assert "0.0.9" in message and ">=0.3.56,<0.4" in message and "0.3.56" in message
