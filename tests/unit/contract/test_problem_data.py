"""A problem's structured `data`: optional, plain JSON, on the wire only when present, never part of identity."""

from __future__ import annotations

import json
import pickle
from dataclasses import replace

import pytest

from starforge.contract import CODES, DATA_KEYS, Problem, render_problems


def test_every_existing_construction_still_works_and_carries_no_data() -> None:
    problem = Problem("spec.resources.pools", "pools_empty", "no resource pool is declared", "pass --profile")
    assert problem.data == {}
    assert problem.to_dict() == {"field": "spec.resources.pools", "code": "pools_empty",
                                 "message": "no resource pool is declared", "hint": "pass --profile"}
    assert repr(problem) == ("Problem(field='spec.resources.pools', code='pools_empty', "
                             "message='no resource pool is declared', hint='pass --profile')")


def test_data_goes_on_the_wire_only_when_present_and_comes_back() -> None:
    problem = Problem("X-Forge-Meta.profile", "profile_unknown", "profile 'x' is not registered", "h",
                      {"got": "x", "allowed": ("cpu", "h200")})
    wire = problem.to_dict()
    assert wire["data"] == {"got": "x", "allowed": ["cpu", "h200"]}
    assert json.loads(json.dumps(wire)) == wire
    back = Problem.from_dict(wire)
    assert back == problem and back.data == problem.data
    assert "data={'got': 'x'" in repr(problem)


def test_equality_hashing_and_text_ignore_data() -> None:
    bare = Problem("f", "quota_exceeded", "m", "h")
    rich = Problem("f", "quota_exceeded", "m", "h", {"requested": 16, "limit": 8})
    assert bare == rich and hash(bare) == hash(rich) and len({bare, rich}) == 1
    assert str(rich) == "f: m"
    assert render_problems("The JobSpec was rejected", [rich]) == "The JobSpec was rejected\n- f: m"
    assert Problem("f", "quota_exceeded", "other", "h", rich.data) != rich


def test_data_is_a_private_plain_json_copy() -> None:
    allowed = ["nvcr.io"]
    facts = {"allowed": allowed, "range": {"min": 1}, "got": float("nan")}
    problem = Problem("f", "c", "m", "", facts)
    allowed.append("evil.io")
    assert problem.data == {"allowed": ["nvcr.io"], "range": {"min": 1}, "got": "nan"}
    problem.to_dict()["data"]["allowed"].append("evil.io")
    assert problem.data["allowed"] == ["nvcr.io"]
    assert replace(problem, hint="x").data == problem.data
    assert pickle.loads(pickle.dumps(problem)).data == problem.data


@pytest.mark.parametrize("bad", [{"got": object()}, {"got": {1, 2}}])
def test_data_that_is_not_json_is_a_bug(bad: dict[str, object]) -> None:
    with pytest.raises(TypeError):
        Problem("f", "c", "m", "", bad)
    with pytest.raises(TypeError):
        Problem("f", "c", "m", "", ["not", "a", "mapping"])  # type: ignore[arg-type]


@pytest.mark.parametrize("data", [None, "text", ["a"], 3])
def test_from_dict_drops_a_malformed_data(data: object) -> None:
    problem = Problem.from_dict({"field": "f", "code": "c", "message": "m", "data": data})
    assert problem.data == {} and "data" not in problem.to_dict()


def test_the_data_keys_table_is_documented_like_the_codes() -> None:
    assert DATA_KEYS and all(isinstance(v, str) and v for v in DATA_KEYS.values())
    assert not set(DATA_KEYS) & set(CODES)
