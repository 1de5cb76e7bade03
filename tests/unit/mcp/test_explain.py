"""explain_rejection's core: every problem gets its cause from the codes table and a concrete, applicable fix."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from starforge import DISTRIBUTION
from starforge.contract import CODES, Problem, parse
from starforge.mcp import ExplainContext, explain, problems_of
from starforge.recipes import check_catalog, load_catalog, validate_hyperparams


@pytest.fixture(scope="module")
def catalog() -> dict[str, Any]:
    return load_catalog().payload()


@pytest.fixture(scope="module")
def grpo_params() -> dict[str, Any]:
    recipe = load_catalog().get("tinyrl/grpo")
    assert recipe is not None
    return dict(recipe.params)


def _spec(catalog: dict[str, Any], **changes: Any) -> dict[str, Any]:
    entry = next(r for r in catalog["recipes"] if r["name"] == "tinyrl/grpo")
    spec = {
        "apiVersion": "forge/v2", "kind": "TrainingJob", "metadata": {"name": "toy"},
        "spec": {"recipe": {"name": "tinyrl/grpo", "version": entry["version"], "digest": entry["digest"]},
                 "source": {"exp": "experiments/toy"},
                 "framework": {"kind": "tinyrl", "version": "1.0.0", "runtime_id": "tinyrl-1.0.0"},
                 "resources": {"pools": [{"name": "all", "series": "cpu", "nodes": 1, "gpus_per_node": 1}]},
                 "hyperparams": {}},
        "provenance": {"core_version": "0.4.0"},
    }
    for path, value in changes.items():
        node = spec
        *parents, leaf = path.split("__")
        for key in parents:
            node = node[key]
        node[leaf] = value
    return copy.deepcopy(spec)


def test_problems_are_read_from_every_shape_of_rejection() -> None:
    wire = {"field": "spec.recipe.digest", "code": "recipe_digest_mismatch", "message": "m", "hint": "h"}
    assert problems_of([wire]) == [Problem("spec.recipe.digest", "recipe_digest_mismatch", "m", "h")]
    assert problems_of({"detail": "The JobSpec was rejected\n- x: y", "problems": [wire]})[0].code == "recipe_digest_mismatch"
    assert problems_of({"ok": False, "problems": [wire], "warnings": []})[0].field == "spec.recipe.digest"
    assert problems_of({"errors": [wire]})[0].hint == "h"
    assert problems_of({"error": {"problems": [wire]}})[0].message == "m"
    from_text = problems_of({"detail": "The JobSpec was rejected\n- spec.resources.pools: no pool"})
    assert from_text == [Problem("spec.resources.pools", "unknown", "no pool")]
    assert problems_of({}) == [] and problems_of(None) == []
    [with_data] = problems_of({"problems": [{**wire, "data": {"recipe": "tinyrl/grpo"}}]})
    assert with_data.data == {"recipe": "tinyrl/grpo"}


def test_a_handshake_mismatch_points_at_recipe_upgrade_and_patches_the_published_identity(
        catalog: dict[str, Any]) -> None:
    entry = next(r for r in catalog["recipes"] if r["name"] == "tinyrl/grpo")
    spec = _spec(catalog, spec__recipe__version="0.9.0")
    spec["spec"]["recipe"]["digest"] = "sha256:" + "0" * 64
    problem = Problem("spec.recipe.version", "recipe_version_mismatch",
                      "recipe tinyrl/grpo is version 1.0.0 on this console; the spec has 0.9.0", "upgrade the sf client")
    [item] = explain([problem], ExplainContext(spec=spec, catalog=catalog, profile="cpu"))
    assert item.cause == CODES["recipe_version_mismatch"]
    assert "sf recipe upgrade toy" in item.fix
    assert item.commands == ("sf recipe status toy --server", "sf recipe upgrade toy", "sf submit toy --profile cpu")
    patches = {p.target: p.value for p in item.patches}
    assert patches == {"spec.recipe.version": entry["version"], "spec.recipe.digest": entry["digest"]}
    assert item.to_dict()["patches"][0] == {"target": "spec.recipe.version", "op": "set", "value": entry["version"]}


def test_without_a_spec_the_recipe_comes_from_the_problems_data(catalog: dict[str, Any]) -> None:
    entry = next(r for r in catalog["recipes"] if r["name"] == "tinyrl/grpo")
    problem = Problem("spec.recipe.digest", "recipe_digest_mismatch", "recipe x/y has digest …", "",
                      {"recipe": "tinyrl/grpo", "expected": entry["digest"], "got": "sha256:" + "0" * 64})
    [item] = explain([problem], ExplainContext(catalog=catalog))
    assert {p.target: p.value for p in item.patches}["spec.recipe.digest"] == entry["digest"]
    assert "publishes tinyrl/grpo" in item.fix


def test_a_spec_ahead_of_the_console_is_told_so(catalog: dict[str, Any]) -> None:
    spec = _spec(catalog, spec__recipe__version="9.0.0")
    [item] = explain([Problem("spec.recipe.version", "recipe_version_mismatch", "m")],
                     ExplainContext(spec=spec, catalog=catalog))
    assert "newer than the console's" in item.fix


def _core_problem(catalog: dict[str, Any], core_version: str) -> Problem:
    spec = parse(_spec(catalog, provenance__core_version=core_version)).spec
    assert spec is not None
    [problem] = check_catalog(spec, load_catalog())
    return problem


def test_an_old_client_is_told_both_versions(catalog: dict[str, Any]) -> None:
    problem = _core_problem(catalog, "0.3.1")
    assert problem.data["versions"] == {"needed": ">=0.4,<0.5", "have": "0.3.1", "too_old": True,
                                        "catalog": load_catalog().core_version}
    [item] = explain([Problem.from_dict(problem.to_dict())])
    assert item.fix.startswith("upgrade sf: this client is 0.3.1, the catalog needs >=0.4,<0.5")
    assert item.commands[0] == f'pip install -U "{DISTRIBUTION}>=0.4,<0.5"'


def test_a_client_newer_than_the_catalog_is_not_told_to_upgrade(catalog: dict[str, Any]) -> None:
    [item] = explain([_core_problem(catalog, "0.9.0")])
    assert item.fix.startswith("this client is 0.9.0, newer than the console's catalog (>=0.4,<0.5)")


def test_without_versions_data_the_spec_and_client_versions_are_used() -> None:
    problem = Problem("recipe.lock.json", "core_version_incompatible", "needs core >=9 but this client is 0.1",
                      "upgrade sf")
    [item] = explain([problem], ExplainContext(client_version="0.4.2"))
    assert item.fix.startswith("upgrade sf: this client is 0.4.2, the catalog needs a newer client")
    assert item.commands[0] == f"pip install -U {DISTRIBUTION}"


def test_a_refused_registry_gets_an_image_from_an_allowed_one(catalog: dict[str, Any]) -> None:
    allowed = ["nvcr.io", "registry.internal:5000"]
    for image, expected in (("docker.io/team/t:1", "nvcr.io/team/t:1"), ("team/t:1", "nvcr.io/team/t:1"),
                            ("ghcr.io:443/a/b@sha256:" + "1" * 64, "nvcr.io/a/b@sha256:" + "1" * 64)):
        spec = _spec(catalog)
        spec["spec"]["framework"]["image"] = image
        problem = Problem("spec.framework.image", "image_not_allowed", "prose nobody reads", "hint: a, b",
                          {"got": image, "registry": "docker.io", "allowed": allowed})
        [item] = explain([problem], ExplainContext(spec=spec, profile="cpu"))
        assert [p.to_dict() for p in item.patches] == [{"target": "spec.framework.image", "op": "set", "value": expected}]
        assert item.commands == (f"sf submit toy --image {expected} --profile cpu",)
        assert "nvcr.io, registry.internal:5000" in item.fix and "registry docker.io is not allowed" in item.fix
    no_spec = Problem("spec.framework.image", "image_not_allowed", "m", "", {"got": "team/t:1", "allowed": allowed})
    assert explain([no_spec])[0].patches[0].value == "nvcr.io/team/t:1"


def test_an_image_refusal_without_data_or_with_no_registry_allowed() -> None:
    [unknown] = explain([Problem("spec.framework.image", "image_not_allowed", "m", "allowed: nvcr.io")])
    assert unknown.patches == () and "nvcr.io" not in unknown.fix.split("(console hint")[0]
    [none] = explain([Problem("spec.framework.image", "image_not_allowed", "m", "", {"allowed": []})])
    assert none.patches[0].to_dict() == {"target": "spec.framework.image", "op": "remove"}


def test_an_unknown_profile_is_replaced_by_a_registered_one(catalog: dict[str, Any]) -> None:
    problem = Problem("X-Forge-Meta.profile", "profile_unknown", "profile 'gpu-xl' is not registered",
                      "registered profiles: cpu, h200", {"got": "gpu-xl", "allowed": ["cpu", "h200"]})
    [item] = explain([problem], ExplainContext(spec=_spec(catalog), profile="gpu-xl"))
    assert [p.to_dict() for p in item.patches] == [{"target": "profile", "op": "set", "value": "cpu"}]
    assert item.commands == ("sf submit toy --profile cpu",)
    prose_only = Problem("X-Forge-Meta.profile", "profile_unknown", "m", "registered profiles: cpu, h200")
    assert explain([prose_only])[0].patches == ()
    series = Problem("spec.resources.pools[0].series", "series_unknown", "m", "", {"got": "b300", "allowed": ["h200"]})
    assert explain([series])[0].patches[0].to_dict() == {"target": "spec.resources.pools[0].series", "op": "set",
                                                         "value": "h200"}


def test_quota_fixes_name_the_numbers() -> None:
    exceeded = Problem("spec.resources.pools", "quota_exceeded", "m", "", {"requested": 16, "limit": 8})
    exhausted = Problem("quota", "quota_exhausted", "m", "", {"used": 12.5, "limit": 12.0})
    first, second = explain([exceeded, exhausted])
    assert "this job asks for 16 GPUs; your cap is 8 at once" in first.fix
    assert "(12.5 of 12 GPU hours today)" in second.fix


def test_hyperparameters_are_brought_within_their_declaration(catalog: dict[str, Any],
                                                              grpo_params: dict[str, Any]) -> None:
    cases = [("hyperparameter_range", "max_num_steps", 0, 1), ("hyperparameter_range", "max_num_steps", 10**9, 100000),
             ("hyperparameter_choice", "optimizer", "rmsprop", "adam"),
             ("hyperparameter_type", "max_num_steps", "many", 60)]
    for code, name, given, fixed in cases:
        spec = _spec(catalog)
        spec["spec"]["hyperparams"] = {name: given}
        problem = Problem(f"spec.hyperparams.{name}", code, f"{name}={given} is wrong", "use a valid value")
        [item] = explain([problem], ExplainContext(spec=spec, params=grpo_params, profile="cpu"))
        assert [p.to_dict() for p in item.patches] == [
            {"target": f"spec.hyperparams.{name}", "op": "set", "value": fixed}], (code, name)
        assert item.commands == (f"sf submit toy --set {name}={fixed} --profile cpu",)
        assert f"{name} is declared as" in item.fix


def test_unknown_hyperparameters_are_renamed_to_the_suggestion_or_removed(catalog: dict[str, Any],
                                                                        grpo_params: dict[str, Any]) -> None:
    recipe = load_catalog().get("tinyrl/grpo")
    assert recipe is not None
    spec = _spec(catalog)
    spec["spec"]["hyperparams"] = {"max_num_step": 3, "zzz_unrelated": 1, "seed": 1}
    _, [problem] = validate_hyperparams(spec["spec"]["hyperparams"], recipe, "1.0.0")
    assert problem.data["unknown"] == ["max_num_step", "zzz_unrelated"]
    assert problem.data["suggestion"] == {"max_num_step": "max_num_steps"}
    assert problem.data["recipe"] == "tinyrl/grpo" and "max_num_steps" in problem.data["allowed"]
    [item] = explain([problem], ExplainContext(spec=spec))
    assert [p.to_dict() for p in item.patches] == [
        {"target": "spec.hyperparams.max_num_steps", "op": "set", "value": 3},
        {"target": "spec.hyperparams.max_num_step", "op": "remove"},
        {"target": "spec.hyperparams.zzz_unrelated", "op": "remove"}]
    assert item.fix.startswith("rename max_num_step to max_num_steps;")
    prose_only = Problem("spec.hyperparams", "unknown_hyperparameter", "unknown hyperparameter max_num_step", "")
    [old] = explain([prose_only], ExplainContext(spec=spec, params=grpo_params))
    assert [p.target for p in old.patches] == ["spec.hyperparams.max_num_step", "spec.hyperparams.zzz_unrelated"]


def test_a_missing_hyperparameter_is_named_by_data_not_by_the_message() -> None:
    [named] = explain([Problem("spec.hyperparams", "missing_hyperparameter", "prose", "", {"name": "lr"})])
    assert named.fix == "set the required parameter lr" and named.commands == ("sf submit <exp> --set lr=<value> "
                                                                                 "--profile <profile>",)
    [unnamed] = explain([Problem("spec.hyperparams", "missing_hyperparameter", "lr is required by x/y")])
    assert "lr" not in unnamed.fix.split("(console hint")[0] and unnamed.commands == ("sf methods <recipe>",)


def test_removals_warnings_and_unknown_codes() -> None:
    [forbidden] = explain([Problem("spec.framework.observability_url", "observability_url_forbidden", "m")])
    assert forbidden.patches[0].to_dict() == {"target": "spec.framework.observability_url", "op": "remove"}
    [warning] = explain([Problem("metadata.owner", "owner_ignored", "ignored")])
    assert warning.severity == "warning" and warning.cause == "metadata.owner is set by the console"
    [odd] = explain([Problem("x", "brand_new_code", "something new", "do the thing")])
    assert "not in the table" in odd.cause and odd.fix == "do the thing" and odd.patches == ()
    [dirty] = explain([Problem("provenance.git_dirty", "git_dirty", "uncommitted changes")])
    assert "uncommitted" in dirty.cause and "allow_dirty" in dirty.fix


def test_every_problem_is_explained_in_order_with_placeholders_when_names_are_unknown() -> None:
    problems = [Problem("spec.source.entrypoint", "entrypoint_forbidden", "m"),
                Problem("spec.framework.image", "image_required", "custom/custom runs your own image")]
    first, second = explain(problems)
    assert first.patches[0].target == "spec.source.entrypoint" and "custom/custom" in first.fix
    assert second.commands == ("sf submit <exp> --image <registry>/<team>/<image>:<tag> --profile <profile>",)
