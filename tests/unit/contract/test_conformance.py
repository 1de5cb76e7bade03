"""The conformance cases (tests/conformance) of the contract layers, against `parse` directly, and their format."""

from __future__ import annotations

import json
from typing import Any

import pytest

from starforge.contract import parse
from tests.conftest import CONFORMANCE, load_cases

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


LAYERS = {*CONTRACT_LAYERS, "catalog", "admission", "client", "policy"}
KEYS = {"name", "expect", "spec", "field", "why", "layer"}


def test_the_cases_live_in_the_repository_in_their_documented_format() -> None:
    """tests/conformance/README.md states the format; every case keeps it, so no case is silently never run."""
    lines = [line for line in CONFORMANCE.read_text(encoding="utf-8").splitlines() if line.strip()]
    cases = [json.loads(line) for line in lines]
    assert len(cases) >= 77  # the cases first copied: more may be added, none dropped
    assert len({c["name"] for c in cases}) == len(cases), "case names are unique"
    assert {c["layer"] for c in cases} == LAYERS
    for case in cases:
        name = case["name"]
        assert set(case) == KEYS | ({"context"} if case["layer"] == "policy" else set()), name
        assert case["expect"] in ("accept", "reject") and name.startswith(case["expect"] + "_"), name
        assert isinstance(case["spec"], dict) and case["spec"].get("apiVersion") == "forge/v2", name
        assert isinstance(case["why"], str) and case["why"].strip(), name
        if case["expect"] == "reject":
            assert isinstance(case["field"], str) and case["field"], name
        else:
            assert case["field"] is None, name
        if case["layer"] == "policy":
            assert isinstance(case["context"], dict) and case["context"], name
