"""The shared conformance cases of the contract layers, against `parse` directly."""

from __future__ import annotations

from typing import Any

import pytest

from starforge.contract import parse
from tests.conftest import CONFORMANCE, SHARED_CONFORMANCE, load_cases

CONTRACT_LAYERS = ("contract", "contract-brief", "contract-0.3.56-ext")


@pytest.mark.parametrize("case", load_cases(*CONTRACT_LAYERS), ids=lambda c: c["name"])
def test_contract_case(case: dict[str, Any]) -> None:
    parsed = parse(case["spec"])
    if case["expect"] == "accept":
        assert parsed.ok, [str(p) for p in parsed.problems]
        assert parsed.problems == []
    else:
        assert not parsed.ok
        assert parsed.problems[0].field == case["field"], [str(p) for p in parsed.problems]
        assert all(p.code and p.message for p in parsed.problems)


_NOT_CONTRACT_REJECTS = [c for c in load_cases() if not (c["layer"] in CONTRACT_LAYERS and c["expect"] == "reject")]


@pytest.mark.parametrize("case", _NOT_CONTRACT_REJECTS, ids=lambda c: c["name"])
def test_every_case_that_is_not_a_contract_reject_parses(case: dict[str, Any]) -> None:
    """Cases of later layers are valid contract-wise, except those whose rule the contract itself owns."""
    parsed = parse(case["spec"])
    contract_owned = {"reject_dataset_path_absolute"}  # dataset paths are a contract rule (jobspec-contract §6.3)
    assert parsed.ok != (case["name"] in contract_owned), [str(p) for p in parsed.problems]


def test_vendored_cases_match_the_shared_file() -> None:
    if not SHARED_CONFORMANCE.is_file():
        pytest.skip("../shared is not next to this checkout")
    assert CONFORMANCE.read_bytes() == SHARED_CONFORMANCE.read_bytes()
