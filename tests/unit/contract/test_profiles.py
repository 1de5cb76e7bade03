"""Profile expressions (jobspec-contract §9.1): shapes, roles, multi-pool and every error."""

from __future__ import annotations

import pytest

from starforge.contract import ProfileEntry, profile_name, resolve_profiles

REGISTRY = [ProfileEntry("h200", "h200", 1, 8), ProfileEntry("h100", "h100", 1, 8), ProfileEntry("cpu", "", 1, 4)]
GRPO_ROLES = ("actor", "reference", "rollout")


def _pools(exprs: list[str], roles: tuple[str, ...] = GRPO_ROLES) -> list[tuple[str, int, int, str]]:
    placement, problems = resolve_profiles(exprs, REGISTRY, roles)
    assert problems == [] and placement is not None
    return [(p.name, p.nodes, p.gpus_per_node, p.series) for p in placement.pools]


def test_shapes() -> None:
    assert _pools(["h200"]) == [("all", 1, 8, "h200")]
    assert _pools(["h200:4"]) == [("all", 1, 4, "h200")]
    assert _pools(["h200:16"]) == [("all", 2, 8, "h200")]
    assert _pools([" h200 : 8 "]) == [("all", 1, 8, "h200")]
    assert _pools(["cpu:1"]) == [("all", 1, 1, "cpu")]  # an empty series falls back to the profile name


def test_single_entry_maps_every_recipe_role() -> None:
    placement, _ = resolve_profiles(["h200"], REGISTRY, GRPO_ROLES)
    assert placement is not None and placement.roles == {"actor": "all", "reference": "all", "rollout": "all"}
    assert placement.profile == "h200"


def test_multi_pool_distillation() -> None:
    placement, problems = resolve_profiles(["actor,rollout=h200:8", "teacher=h100:16"], REGISTRY, ())
    assert problems == [] and placement is not None
    assert [(p.name, p.nodes, p.gpus_per_node, p.series) for p in placement.pools] == [
        ("actor", 1, 8, "h200"), ("teacher", 2, 8, "h100")]
    assert placement.roles == {"actor": "actor", "rollout": "actor", "teacher": "teacher"}
    assert placement.total_gpus == 24 and placement.profile == "h200"


@pytest.mark.parametrize(
    "exprs",
    [["h200:12"], ["h200:"], ["h200:0"], ["h200:8:2"], ["h200:x"], ["h200:٨"], [",=h200"], ["nope"], [":8"],
     ["h200", "h100"], ["a=h200", "a=h100"], []],
)
def test_errors(exprs: list[str]) -> None:
    placement, problems = resolve_profiles(exprs, REGISTRY, GRPO_ROLES)
    assert placement is None and problems and all(p.code == "invalid_profile" for p in problems)


def test_unknown_profile_lists_the_available_ones() -> None:
    _, problems = resolve_profiles(["b200"], REGISTRY, GRPO_ROLES)
    assert "cpu, h100, h200" in problems[0].hint


@pytest.mark.parametrize(("expression", "name"), [("h200", "h200"), ("h200:8", "h200"), (" a100 : 2 ", "a100"),
                                                  ("actor,rollout=h200:8", "h200"), ("actor=cpu", "cpu"), ("", "")])
def test_profile_name_is_the_profile_an_expression_names(expression: str, name: str) -> None:
    assert profile_name(expression) == name
