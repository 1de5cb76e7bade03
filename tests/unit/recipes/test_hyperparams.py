"""Hyperparameters (§4.2-§4.4): strict validation and rebuild, `--set` typing, rendering to overrides."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from starforge.recipes import (
    Recipe,
    format_override,
    load_catalog,
    param_overrides,
    parse_set,
    render_overrides,
    validate_hyperparams,
)

from .trees import catalog, manifest


@pytest.fixture
def recipe(tmp_path: Path) -> Recipe:
    data = manifest()
    data["params"]["temperature"] = {"type": "float", "min": 0, "max": 2, "path": "gen.temperature", "default": 1.0}
    data["params"]["mode"] = {"type": "enum", "choices": [1, True, "auto"], "path": "mode"}
    data["params"]["suites"] = {"type": "str", "required": True, "path": "suites"}
    found = catalog(tmp_path, data).get("testfw/grpo")
    assert found is not None
    return found


def _check(recipe: Recipe, values: dict[str, Any], version: str = "1.0.0") -> tuple[dict[str, Any], list[str]]:
    out, problems = validate_hyperparams({"suites": "gsm8k", **values}, recipe, version)
    return out, [f"{p.field}:{p.code}" for p in problems]


def test_rebuilt_in_declaration_order_with_defaults(recipe: Recipe) -> None:
    out, problems = _check(recipe, {"precision": "bf16", "learning_rate": 0.1})
    assert problems == []
    assert list(out.items()) == [("learning_rate", 0.1), ("steps", 10), ("precision", "bf16"),
                                 ("temperature", 1.0), ("suites", "gsm8k")]


def test_unknown_keys_are_one_problem_with_a_suggestion(recipe: Recipe) -> None:
    out, problems = validate_hyperparams({"suites": "x", "learnin_rate": 1.0, "optim.lr": 0.1, "zzz": 1}, recipe,
                                         "1.0.0")
    assert [p.field for p in problems] == ["spec.hyperparams"]
    problem = problems[0]
    assert problem.code == "unknown_hyperparameter"
    assert "learnin_rate (did you mean learning_rate?)" in problem.message
    assert "optim.lr (the config path of learning_rate: use the name)" in problem.message
    assert "declared: learning_rate, steps, precision" in problem.message
    assert problem.hint.startswith("did you mean learning_rate, learning_rate?")


def test_required_missing(recipe: Recipe) -> None:
    _, problems = validate_hyperparams({}, recipe, "1.0.0")
    assert [(p.field, p.code) for p in problems] == [("spec.hyperparams", "missing_hyperparameter")]
    assert "suites" in problems[0].message


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"steps": 8.0}, "spec.hyperparams.steps:hyperparameter_type"),
        ({"steps": True}, "spec.hyperparams.steps:hyperparameter_type"),
        ({"steps": "8"}, "spec.hyperparams.steps:hyperparameter_type"),
        ({"steps": 0}, "spec.hyperparams.steps:hyperparameter_range"),
        ({"steps": 1001}, "spec.hyperparams.steps:hyperparameter_range"),
        ({"learning_rate": 0}, "spec.hyperparams.learning_rate:hyperparameter_range"),
        ({"learning_rate": -0.5}, "spec.hyperparams.learning_rate:hyperparameter_range"),
        ({"learning_rate": True}, "spec.hyperparams.learning_rate:hyperparameter_type"),
        ({"learning_rate": "1e-6"}, "spec.hyperparams.learning_rate:hyperparameter_type"),
        ({"learning_rate": math.nan}, "spec.hyperparams.learning_rate:not_finite"),
        ({"learning_rate": math.inf}, "spec.hyperparams.learning_rate:not_finite"),
        ({"temperature": 2.5}, "spec.hyperparams.temperature:hyperparameter_range"),
        ({"flag": "true"}, "spec.hyperparams.flag:hyperparameter_type"),
        ({"flag": 1}, "spec.hyperparams.flag:hyperparameter_type"),
        ({"name_tag": 1}, "spec.hyperparams.name_tag:hyperparameter_type"),
        ({"name_tag": "c"}, "spec.hyperparams.name_tag:hyperparameter_choice"),
        ({"precision": "fp8"}, "spec.hyperparams.precision:hyperparameter_choice"),
        ({"mode": "1"}, "spec.hyperparams.mode:hyperparameter_choice"),
        ({"mode": None}, "spec.hyperparams.mode:hyperparameter_choice"),
        ({"suites": 3}, "spec.hyperparams.suites:hyperparameter_type"),
    ],
)
def test_value_checks(recipe: Recipe, values: dict[str, Any], expected: str) -> None:
    assert _check(recipe, values)[1] == [expected]


@pytest.mark.parametrize(
    "values",
    [{"steps": 1}, {"steps": 1000}, {"learning_rate": 1}, {"learning_rate": 1e-06}, {"temperature": 0},
     {"temperature": 2}, {"mode": 1.0}, {"mode": True}, {"mode": "auto"}, {"flag": False}, {"name_tag": "b"}],
)
def test_valid_values(recipe: Recipe, values: dict[str, Any]) -> None:
    out, problems = _check(recipe, values)
    assert problems == []
    key, value = next(iter(values.items()))
    assert out[key] == value and type(out[key]) is type(value)  # kept as given, never coerced


def test_enum_is_type_strict(recipe: Recipe) -> None:
    assert _check(recipe, {"mode": 1})[1] == []       # numbers compare numerically: 1 matches the choice 1
    assert _check(recipe, {"mode": False})[1] == ["spec.hyperparams.mode:hyperparameter_choice"]
    no_true = recipe.params["mode"].choices
    assert no_true is not None and True in no_true


def test_every_problem_at_once_in_rule_order(recipe: Recipe) -> None:
    _, problems = validate_hyperparams({"bogus": 1, "steps": 0, "precision": "x"}, recipe, "1.0.0")
    assert [p.field for p in problems] == ["spec.hyperparams", "spec.hyperparams.steps",
                                           "spec.hyperparams.precision", "spec.hyperparams"]


def test_names_or_paths(tmp_path: Path) -> None:
    found = catalog(tmp_path, manifest(hyperparam_keys="names_or_paths")).get("testfw/grpo")
    assert found is not None
    out, problems = validate_hyperparams({"optim.lr": 0.5, "train.steps": 3}, found, "1.0.0")
    assert problems == [] and out == {"learning_rate": 0.5, "steps": 3}
    out, problems = validate_hyperparams({"old.flag": True}, found, "0.9.0")  # path_overrides of the version
    assert problems == [] and out["flag"] is True
    _, problems = validate_hyperparams({"old.flag": True}, found, "1.0.0")
    assert [p.code for p in problems] == ["unknown_hyperparameter"]
    _, problems = validate_hyperparams({"learning_rate": 0.5, "optim.lr": 0.4}, found, "1.0.0")
    assert [(p.field, p.code) for p in problems] == [("spec.hyperparams", "duplicate_hyperparameter")]


def test_no_validate_keeps_undeclared_keys_after_declared(recipe: Recipe) -> None:
    out, problems = validate_hyperparams({"zzz": 1, "steps": 0, "learning_rate": "x"}, recipe, "1.0.0",
                                         validate=False)
    assert problems == []
    assert list(out) == ["learning_rate", "steps", "temperature", "zzz"]


@pytest.mark.parametrize(
    ("item", "value"),
    [
        ("lr=1e-6", 1e-06), ("flag=YES", True), ("flag=on", True), ("flag=Off", False), ("flag=no", False),
        ("n=007", 7), ("n=-12", -12), ("n=+3", 3), ("n=1_000", 1000), ("x=1.5", 1.5), ("x=.5", 0.5),
        ("x=2.", 2.0), ("x=1E3", 1000.0), ("x=-2.5e-3", -0.0025), ("s=hello world", "hello world"),
        ("s=1__0", "1__0"), ("s=0x10", "0x10"), ("s=", ""), ("  key  =  padded  ", "padded"), ("s=a=b", "a=b"),
        ("s=١٢", "١٢"),
    ],
)
def test_parse_set_typing(item: str, value: Any) -> None:
    values, problems = parse_set([item])
    assert problems == []
    assert list(values.values()) == [value]
    assert type(list(values.values())[0]) is type(value)


def test_parse_set_problems_and_repeats() -> None:
    values, problems = parse_set(["a=1", "noequals", "=3", "lr=nan", "x=-Infinity", "y=inf", "a=2"])
    assert values == {"a": 2}
    assert [(p.field, p.code) for p in problems] == [
        ("--set", "invalid_set"), ("--set", "invalid_set"), ("--set", "not_finite"), ("--set", "not_finite"),
        ("--set", "not_finite")]


def test_set_values_then_validate(recipe: Recipe) -> None:
    values, _ = parse_set(["suites=gsm8k", "steps=500", "learnin_rate=1e-6"])
    _, problems = validate_hyperparams(values, recipe, "1.0.0")
    assert [p.code for p in problems] == ["unknown_hyperparameter"]


def test_render_overrides(recipe: Recipe) -> None:
    values = {"learning_rate": 1e-06, "steps": 10, "flag": True, "name_tag": "a", "suites": "gsm8k"}
    assert render_overrides(values, recipe, "1.0.0") == [
        ("optim.lr", "1e-06"), ("train.steps", "10"), ("train.flag", "true"), ("suites", "gsm8k")]
    assert ("old.flag", "true") in render_overrides(values, recipe, "0.9.0")
    assert param_overrides({"flag": False, "undeclared": 1}, recipe, "1.0.0") == [("train.flag", False)]
    assert format_override(False) == "false" and format_override(None) == "null" and format_override(0.5) == "0.5"


def test_no_validate_reports_nothing_for_names_or_paths(tmp_path: Path) -> None:
    found = catalog(tmp_path, manifest(hyperparam_keys="names_or_paths")).get("testfw/grpo")
    assert found is not None
    out, problems = validate_hyperparams({"learning_rate": 0.5, "optim.lr": 0.4}, found, "1.0.0", validate=False)
    assert problems == [] and out["learning_rate"] == 0.5


def test_a_set_key_the_template_config_sets_is_named_a_config_setting_with_where_it_goes() -> None:
    sft = load_catalog(overlays=False).get("trl/sft")
    assert sft is not None
    _, problems = validate_hyperparams({"lora_alpha": 64, "adam_epsilon": 1e-06}, sft, "1.10.0")
    problem = problems[0]
    assert "lora_alpha (a setting of the config file, not a parameter)" in problem.message
    assert "did you mean" not in problem.message  # lora_alpha is no typo of lora_r
    assert "`sf methods trl/sft` lists them" in problem.hint
    assert "goes in the experiment's config.yaml (`lora_alpha: 64`)" in problem.hint
    _, problems = validate_hyperparams({"adam_epsilon": 1e-06}, sft, "1.10.0")
    assert "(`adam_epsilon: 1.0e-06`)" in problems[0].hint  # a float YAML reads back as a float


def test_bf16_is_a_parameter_of_every_trl_recipe() -> None:
    for recipe_id in ("trl/sft", "trl/dpo", "trl/grpo"):
        recipe = load_catalog(overlays=False).get(recipe_id)
        assert recipe is not None
        values, problems = parse_set(["bf16=false"])
        out, problems = validate_hyperparams(values, recipe, recipe.default_version)
        assert problems == [] and out["bf16"] is False
