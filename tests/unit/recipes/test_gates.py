"""Recipe gates R1-R7 (§8): rule order, fields, --no-validate, the rebuilt spec and warnings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from starforge.contract import parse
from starforge.recipes import Recipe, check_gates

from .trees import catalog, manifest, spec


def _recipe(tmp_path: Path, **changes: Any) -> Recipe:
    framework = changes.pop("framework", "testfw")
    data = manifest(framework=framework, **changes)
    if framework in ("verl", "trl"):
        for version, variant in data["runtime"]["versions"].items():
            variant["requires"] = [f"{framework}=={version}"]
    if framework == "custom":
        data["name"] = "custom"
        data["runtime"] = {"default_version": "user-managed", "versions": {"user-managed": {}}}
    found = catalog(tmp_path, data).get(f"{framework}/{data['name']}")
    assert found is not None
    return found


def _gates(recipe: Recipe, validate: bool = True, **changes: Any) -> tuple[Any, list[str], list[str]]:
    parsed = parse(spec(recipe, **changes))
    assert parsed.spec is not None, parsed.problems
    out, problems, warnings = check_gates(parsed.spec, recipe, validate=validate)
    return out, [f"{p.field}:{p.code}" for p in problems], [f"{w.field}:{w.code}" for w in warnings]


def test_a_valid_spec_is_rebuilt(tmp_path: Path) -> None:
    recipe = _recipe(tmp_path)
    out, problems, warnings = _gates(recipe, hyperparams={"precision": "bf16", "learning_rate": 0.5})
    assert problems == [] and warnings == []
    assert list(out.spec.hyperparams.items()) == [("learning_rate", 0.5), ("steps", 10), ("precision", "bf16")]


def test_every_gate_in_order(tmp_path: Path) -> None:
    recipe = _recipe(tmp_path)
    _, problems, _ = _gates(
        recipe,
        hyperparams={"bogus": 1},
        lifecycle={"on_success": ["eval"]},
        framework__observability_url="https://wandb.example.com/x",
        framework__image="bad image",
        resources={"pools": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
                   "roles": {"actor": "a", "critic": "b"}},
    )
    assert problems == [
        "spec.hyperparams:unknown_hyperparameter",
        "spec.lifecycle.on_success:lifecycle_action_unknown",
        "spec.framework.observability_url:observability_url_forbidden",
        "spec.framework.image.reference:invalid_image_reference",
        "spec.resources.roles:role_unknown",
        "spec.resources.roles.rollout:role_unmapped",
    ]


def test_no_validate_skips_r1_r2_r6_only(tmp_path: Path) -> None:
    recipe = _recipe(tmp_path)
    out, problems, _ = _gates(recipe, validate=False, hyperparams={"bogus": 1, "steps": 0},
                              lifecycle={"on_success": ["eval"]}, resources={
                                  "pools": [{"name": "all"}], "roles": {"critic": "all"}},
                              framework__observability_url="https://x.example")
    assert problems == ["spec.framework.observability_url:observability_url_forbidden"]
    assert list(out.spec.hyperparams) == ["steps", "bogus"]


def test_observability_external(tmp_path: Path) -> None:
    recipe = _recipe(tmp_path, adapter_options={"observability": "external"})
    assert _gates(recipe)[1] == ["spec.framework.observability_url:observability_url_required"]
    for bad in ("wandb.example.com/x", "ftp://x.example/a", "https://x.example/a b", "https://"):
        assert _gates(recipe, framework__observability_url=bad)[1] == ["spec.framework.observability_url:invalid_url"]
    assert _gates(recipe, framework__observability_url="http://localhost:8080/run")[1] == []


def test_custom_needs_an_image_and_the_syntax_comes_first(tmp_path: Path) -> None:
    recipe = _recipe(tmp_path, framework="custom", adapter_options={"observability": "platform"}, roles=["trainer"],
                     params={})
    assert _gates(recipe, hyperparams={})[1] == ["spec.framework.image:image_required"]
    assert _gates(recipe, hyperparams={}, framework__image="x@sha256:abc")[1] == [
        "spec.framework.image.reference:invalid_image_reference"]
    assert _gates(recipe, hyperparams={}, framework__image="ubuntu:22.04")[1] == []


@pytest.mark.parametrize(
    ("framework", "data", "model", "expected"),
    [
        ("verl", {}, {}, ["spec.model.base:model_base_required", "spec.data.train.path:train_data_required",
                          "spec.data.validation.path:validation_data_required"]),
        ("trl", {"train": {"path": "/data/t.jsonl"}}, {"base": "Qwen/Qwen3-4B"},
         ["spec.data.validation.path:validation_data_required"]),
        ("verl", {"train": {"dataset": "a/b@v1", "path": "t.parquet"}, "validation": {"path": "/v"}},
         {"base": "Qwen/Qwen3-4B"}, []),
        ("testfw", {}, {}, []),
    ],
)
def test_model_and_data_requirements(tmp_path: Path, framework: str, data: dict[str, Any], model: dict[str, Any],
                                     expected: list[str]) -> None:
    recipe = _recipe(tmp_path, framework=framework, adapter_options={"observability": "platform"})
    assert _gates(recipe, data=data, model=model)[1] == expected


def test_openrlhf_needs_no_validation_data(tmp_path: Path) -> None:
    recipe = _recipe(tmp_path, framework="openrlhf")
    assert _gates(recipe, model={"base": "m"}, data={"train": {"path": "/t"}})[1] == []


def test_roles_are_always_checked_for_one_pool(tmp_path: Path) -> None:
    recipe = _recipe(tmp_path)
    _, problems, _ = _gates(recipe, resources={"pools": [{"name": "all"}], "roles": {"trainer": "all"}})
    assert problems == ["spec.resources.roles:role_unknown"]


def test_multi_pool_rules(tmp_path: Path) -> None:
    recipe = _recipe(tmp_path)
    pools = [{"name": "a"}, {"name": "b"}]
    assert _gates(recipe, resources={"pools": pools, "roles": {"actor": "a"}})[1] == [
        "spec.resources.roles.rollout:role_unmapped"]
    assert _gates(recipe, resources={"pools": pools, "roles": {"actor": "a", "rollout": "a"}})[1] == [
        "spec.resources.pools:pool_idle"]
    assert _gates(recipe, resources={"pools": pools, "roles": {"actor": "a", "rollout": "b"}})[1] == []


def test_adapter_topology_rules(tmp_path: Path) -> None:
    single = _recipe(tmp_path / "one", adapter_options={"observability": "platform", "launcher": "torchrun"})
    assert _gates(single, resources={"pools": [{"name": "a"}, {"name": "b"}],
                                     "roles": {"actor": "a", "rollout": "b"}})[1] == [
        "spec.resources.pools:pool_topology_unsupported"]
    verl = _recipe(tmp_path / "two", framework="verl", roles=["actor", "teacher", "rollout"])
    kwargs: dict[str, Any] = {"model": {"base": "m"}, "data": {"train": {"path": "/t"}, "validation": {"path": "/v"}}}
    assert _gates(verl, resources={"pools": [{"name": "a"}, {"name": "b"}],
                                   "roles": {"actor": "a", "teacher": "a", "rollout": "b"}}, **kwargs)[1] == [
        "spec.resources.roles.teacher:pool_topology_unsupported"]
    assert _gates(verl, resources={"pools": [{"name": "a"}, {"name": "b"}],
                                   "roles": {"actor": "a", "teacher": "b", "rollout": "a"}}, **kwargs)[1] == []


def test_a_deprecated_variant_warns_with_its_sunset(tmp_path: Path) -> None:
    recipe = _recipe(tmp_path)
    _, problems, warnings = _gates(recipe, framework__version="0.9.0", framework__runtime_id="testfw-0.9.0")
    assert problems == [] and warnings == ["spec.framework.version:runtime_deprecated"]
    parsed = parse(spec(recipe, framework__version="0.9.0"))
    assert parsed.spec is not None
    assert "2030-01-31" in check_gates(parsed.spec, recipe)[2][0].message
