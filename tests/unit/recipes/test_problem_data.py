"""The recipe rules fill a problem's `data` with the facts they refused on, using only the documented keys."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from starforge.contract import DATA_KEYS, JobSpec, Problem, ProfileEntry, parse, resolve_profiles
from starforge.recipes import (
    Catalog,
    check_catalog,
    check_client_handshake,
    check_gates,
    load_catalog,
    validate_hyperparams,
)


@pytest.fixture(scope="module")
def builtin() -> Catalog:
    return load_catalog()


def _doc(catalog: Catalog, recipe_id: str = "tinyrl/grpo") -> dict[str, Any]:
    recipe = catalog.get(recipe_id)
    assert recipe is not None
    version = recipe.default_version
    return {
        "apiVersion": "forge/v2", "kind": "TrainingJob", "metadata": {"name": "toy"},
        "spec": {"recipe": {"name": recipe.id, "version": recipe.version, "digest": recipe.digest(catalog.scheme)},
                 "source": {"exp": "experiments/toy"},
                 "framework": {"kind": recipe.framework, "version": version,
                               "runtime_id": recipe.runtime_id(version)},
                 "resources": {"pools": [{"name": "all", "series": "cpu", "nodes": 1, "gpus_per_node": 1}]},
                 "hyperparams": {}},
        "provenance": {"core_version": catalog.core_version},
    }


def _spec(doc: dict[str, Any]) -> JobSpec:
    parsed = parse(copy.deepcopy(doc))
    assert parsed.spec is not None, parsed.problems
    return parsed.spec


def _documented(problem: Problem) -> Problem:
    assert problem.data, problem
    assert set(problem.data) <= set(DATA_KEYS), problem
    return problem


def _catalog_problem(catalog: Catalog, doc: dict[str, Any]) -> Problem:
    [problem] = check_catalog(_spec(doc), catalog)
    return _documented(problem)


def test_console_handshake_names_the_recipe_and_both_values(builtin: Catalog) -> None:
    recipe = builtin.get("tinyrl/grpo")
    assert recipe is not None
    doc = _doc(builtin)
    doc["spec"]["recipe"]["version"] = "0.9.0"
    assert _catalog_problem(builtin, doc).data == {"recipe": "tinyrl/grpo", "expected": recipe.version,
                                                   "got": "0.9.0"}
    doc = _doc(builtin)
    doc["spec"]["recipe"]["digest"] = "sha256:" + "0" * 64
    assert _catalog_problem(builtin, doc).data["expected"] == recipe.digest(builtin.scheme)
    doc = _doc(builtin)
    doc["spec"]["framework"]["version"] = "9.9.9"
    assert _catalog_problem(builtin, doc).data == {"recipe": "tinyrl/grpo", "expected": "1.0.0", "got": "9.9.9",
                                                   "allowed": ["1.0.0"]}
    doc = _doc(builtin)
    doc["spec"]["framework"]["runtime_id"] = "tinyrl-0.1"
    assert _catalog_problem(builtin, doc).data == {"recipe": "tinyrl/grpo", "expected": "tinyrl-1.0.0",
                                                   "got": "tinyrl-0.1"}
    [disabled] = check_catalog(_spec(_doc(builtin)), builtin.with_disabled(["tinyrl/grpo"]))
    assert _documented(disabled).data == {"recipe": "tinyrl/grpo"}


@pytest.mark.parametrize(("core", "too_old"), [("0.3.1", True), ("0.9.0", False)])
def test_core_refusals_carry_the_versions(builtin: Catalog, core: str, too_old: bool) -> None:
    doc = _doc(builtin)
    doc["provenance"]["core_version"] = core
    problem = _catalog_problem(builtin, doc)
    assert problem.code == "core_version_incompatible"
    assert problem.data["versions"] == {"needed": builtin.core_requirement, "have": core, "too_old": too_old,
                                        "catalog": builtin.core_version}


def test_client_handshake_fills_the_same_keys(builtin: Catalog) -> None:
    payload = builtin.payload()
    spec = _spec(_doc(builtin))
    version = builtin.core_version
    assert check_client_handshake(payload, spec, version) == []
    [old] = check_client_handshake(payload, spec, "0.3.1")
    assert _documented(old).data["versions"] == {"needed": payload["core"]["requirement"], "have": "0.3.1",
                                                 "too_old": True, "catalog": payload["core"]["version"]}
    doc = _doc(builtin)
    doc["spec"]["recipe"]["version"] = "0.9.0"
    [differs] = check_client_handshake(payload, _spec(doc), version)
    assert _documented(differs).data == {"recipe": "tinyrl/grpo", "expected": "1.0.0", "got": "0.9.0"}
    doc = _doc(builtin)
    doc["spec"]["framework"]["version"] = "9.9.9"
    [unsupported] = check_client_handshake(payload, _spec(doc), version)
    assert _documented(unsupported).data == {"recipe": "tinyrl/grpo", "got": "9.9.9", "allowed": ["1.0.0"]}
    doc = _doc(builtin)
    doc["spec"]["recipe"]["name"] = "tinyrl/nope"
    [unknown] = check_client_handshake(payload, _spec(doc), version)
    assert _documented(unknown).data == {"recipe": "tinyrl/nope"}


def test_hyperparameter_problems_name_the_parameter_and_its_declaration(builtin: Catalog) -> None:
    recipe = builtin.get("tinyrl/grpo")
    assert recipe is not None
    given = {"max_num_steps": 0, "learning_rate": 0.0, "optimizer": "rmsprop", "temperature": "hot",
             "kl_penalty": float("inf"), "grpo.max_num_step": 1}
    _, problems = validate_hyperparams(given, recipe, "1.0.0")
    by_code = {(p.code, p.field): _documented(p).data for p in problems}
    assert by_code[("unknown_hyperparameter", "spec.hyperparams")]["unknown"] == ["grpo.max_num_step"]
    assert by_code[("hyperparameter_range", "spec.hyperparams.max_num_steps")] == {
        "name": "max_num_steps", "got": 0, "range": {"min": 1, "max": 100000}}
    assert by_code[("hyperparameter_range", "spec.hyperparams.learning_rate")]["range"] == {
        "min": 0.0, "max": 10.0, "exclusive_min": True}
    assert by_code[("hyperparameter_choice", "spec.hyperparams.optimizer")] == {
        "name": "optimizer", "got": "rmsprop", "allowed": ["adam", "sgd"]}
    assert by_code[("hyperparameter_type", "spec.hyperparams.temperature")] == {
        "name": "temperature", "expected": "float", "got": "hot"}
    assert by_code[("not_finite", "spec.hyperparams.kl_penalty")] == {"name": "kl_penalty"}
    evalkit = builtin.get("evalkit/benchmark")
    assert evalkit is not None
    _, [missing] = validate_hyperparams({}, evalkit, evalkit.default_version)
    assert _documented(missing).data == {"recipe": "evalkit/benchmark", "name": "suites"}


def test_did_you_mean_is_a_mapping_from_each_unknown_name(builtin: Catalog) -> None:
    recipe = builtin.get("tinyrl/grpo")
    assert recipe is not None
    _, [problem] = validate_hyperparams({"max_num_step": 3, "zzz": 1}, recipe, "1.0.0")
    assert problem.data["suggestion"] == {"max_num_step": "max_num_steps"}
    assert problem.data["allowed"] == list(recipe.params)
    _, [far] = validate_hyperparams({"zzz": 1}, recipe, "1.0.0")
    assert "suggestion" not in far.data


def test_gates_name_the_recipe_and_what_it_declares(builtin: Catalog) -> None:
    recipe = builtin.get("tinyrl/grpo")
    assert recipe is not None
    doc = _doc(builtin)
    doc["spec"]["lifecycle"] = {"on_success": ["eval"]}
    doc["spec"]["resources"]["roles"] = {"critic": "all"}
    doc["spec"]["framework"]["observability_url"] = "https://wandb.example.com/x"
    _, problems, _ = check_gates(_spec(doc), recipe)
    data = {p.code: _documented(p).data for p in problems}
    assert data["lifecycle_action_unknown"] == {"recipe": "tinyrl/grpo", "unknown": ["eval"], "allowed": ["export"]}
    assert data["role_unknown"] == {"recipe": "tinyrl/grpo", "unknown": ["critic"], "allowed": ["trainer"]}
    assert data["observability_url_forbidden"] == {"recipe": "tinyrl/grpo"}
    custom = builtin.get("custom/custom")
    assert custom is not None
    _, [*_, image], _ = check_gates(_spec(_doc(builtin, "custom/custom")), custom)
    assert image.code == "image_required" and _documented(image).data == {"recipe": "custom/custom"}


def test_an_unknown_profile_lists_the_registry() -> None:
    registry = [ProfileEntry("h200", "h200", 1, 8), ProfileEntry("cpu", "cpu", 1, 1)]
    _, [problem] = resolve_profiles(["h100:8"], registry)
    assert _documented(problem).data == {"got": "h100", "allowed": ["cpu", "h200"]}
