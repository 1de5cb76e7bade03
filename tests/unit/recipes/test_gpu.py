"""Settings that need a GPU (`needs_gpu`): the one rule admission and the lab apply on a series without GPUs."""

from __future__ import annotations

import pytest

from starforge.contract import CODES, DATA_KEYS
from starforge.recipes import Catalog, gpu_problems, gpu_settings, load_catalog, validate_hyperparams


@pytest.fixture(scope="module")
def builtin() -> Catalog:
    return load_catalog(overlays=False)


def _sent(catalog: Catalog, recipe_id: str, **given: object) -> dict[str, object]:
    recipe = catalog.get(recipe_id)
    assert recipe is not None
    values, problems = validate_hyperparams(given, recipe, recipe.default_version)
    assert problems == []
    return values


@pytest.mark.parametrize("recipe_id", ["trl/sft", "trl/dpo", "trl/grpo"])
def test_bf16_left_to_trl_s_default_is_refused_on_a_cpu_series_with_the_set_that_fixes_it(
        builtin: Catalog, recipe_id: str) -> None:
    recipe = builtin.get(recipe_id)
    assert recipe is not None
    problems = gpu_problems(_sent(builtin, recipe_id), recipe, ["cpu"], recipe.default_version)
    assert [(p.field, p.code) for p in problems] == [("spec.hyperparams.bf16", "needs_gpu")]
    problem = problems[0]
    assert problem.code in CODES and set(problem.data) <= set(DATA_KEYS)
    assert "series 'cpu' has none" in problem.message and "its default" in problem.message
    assert "--set bf16=false" in problem.hint and "`bf16: false` in the experiment's config.yaml" in problem.hint
    assert gpu_problems(_sent(builtin, recipe_id, bf16=False), recipe, ["cpu"]) == []
    assert gpu_problems(_sent(builtin, recipe_id), recipe, []) == []  # every series has GPUs


def test_every_setting_that_needs_a_gpu_is_reported_at_once(builtin: Catalog) -> None:
    recipe = builtin.get("trl/grpo")
    assert recipe is not None
    values = _sent(builtin, "trl/grpo", use_vllm=True)
    assert gpu_settings(values, recipe) == ["use_vllm", "bf16"]
    problems = gpu_problems(values, recipe, ["cpu", "cpu-big", "cpu"])
    assert [p.field for p in problems] == ["spec.hyperparams.use_vllm", "spec.hyperparams.bf16"]
    assert "series 'cpu', 'cpu-big' have none" in problems[0].message
    assert gpu_settings(_sent(builtin, "trl/grpo", bf16=False), recipe) == []  # use_vllm: TRL's default, false


def test_only_the_trl_recipes_declare_settings_that_need_a_gpu(builtin: Catalog) -> None:
    declared = {r.id: [p.name for p in r.params.values() if p.needs_gpu] for r in builtin.recipes}
    assert {rid: names for rid, names in declared.items() if names} == {
        "trl/sft": ["bf16"], "trl/dpo": ["bf16"], "trl/grpo": ["use_vllm", "bf16"]}
