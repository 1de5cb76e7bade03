"""Manifest loading (§2): every rule refuses with a field relative to the manifest, and the file is named."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from starforge.recipes import CatalogError, load_catalog

from .trees import manifest, tree, write_recipe


def _fields(tmp_path: Path, data: dict[str, Any] | str, framework: str = "testfw", name: str = "grpo") -> list[str]:
    write_recipe(tmp_path / framework / name, data)
    with pytest.raises(CatalogError) as info:
        load_catalog(tmp_path, overlays=False)
    assert all(str(tmp_path) in p.file for p in info.value.problems)
    return [p.field for p in info.value.problems]


def _variant(**changes: Any) -> dict[str, Any]:
    data = manifest()
    variant = data["runtime"]["versions"]["1.0.0"]
    for key, value in changes.items():
        if value is None:
            variant.pop(key, None)
        else:
            variant[key] = value
    return data


def _param(name: str = "learning_rate", **decl: Any) -> dict[str, Any]:
    data = manifest()
    data["params"][name] = decl
    return data


def test_a_valid_tree_loads(tmp_path: Path) -> None:
    catalog = load_catalog(tree(tmp_path), overlays=False)
    assert catalog.ids == ["testfw/grpo"]
    recipe = catalog.get("testfw/grpo")
    assert recipe is not None and list(recipe.params) == ["learning_rate", "steps", "precision", "flag", "name_tag"]
    assert recipe.requires_core == ">=0.1,<1" and recipe.observability == "platform"


@pytest.mark.parametrize(
    ("data", "field"),
    [
        (manifest(name="other"), "name"),
        (manifest(name="bad name"), "name"),
        (manifest(version=None), "version"),
        (manifest(version=1.0), "version"),
        (manifest(framework="verl2"), "framework"),
        (manifest(category="reinforcement"), "category"),
        (manifest(entrypoint={"kind": "script", "value": "x"}), "entrypoint.kind"),
        (manifest(entrypoint={"kind": "file", "value": "../x.py"}), "entrypoint.value"),
        (manifest(entrypoint={"kind": "experiment", "value": "run.py", "experiment_override": "x.py"}),
         "entrypoint.experiment_override"),
        (manifest(template="../template"), "template"),
        (manifest(adapter_options={"config_mode": "dot-overrides"}), "adapter_options.observability"),
        (manifest(adapter_options={"observability": "platform", "launcher": "mpirun"}), "adapter_options.launcher"),
        (manifest(requires={"core": ">=0.1,<<1"}), "requires.core"),
        (manifest(lifecycle_resources={"export": 1, "eval": 1}), "lifecycle_resources"),
        (manifest(lifecycle_resources={"export": True}), "lifecycle_resources.export"),
        (manifest(lifecycle_resources={"export": -1}), "lifecycle_resources.export"),
        (manifest(roles="actor"), "roles"),
        (manifest(hyperparam_keys="paths"), "hyperparam_keys"),
        (manifest(metrics={"primary": []}), "metrics.primary"),
        (manifest(validation={"sample_kind": "none", "reward_semantics": "scalar"}), "validation.reward_semantics"),
        (manifest(artifacts={"version": "forge/artifacts/v1"}), "artifacts.checkpoints"),
        (manifest(i18n={"zh": {"params": {"nope": {"doc": "x"}}}}), "i18n.zh.params.nope"),
        (manifest(i18n={"zh": {"tagline": "x"}}), "i18n.zh.tagline"),
        (manifest(contract_version="one"), "contract_version"),
    ],
)
def test_top_level_rules(tmp_path: Path, data: dict[str, Any], field: str) -> None:
    assert field in _fields(tmp_path, data)


def test_framework_must_equal_its_parent_directory(tmp_path: Path) -> None:
    assert _fields(tmp_path, manifest(framework="other"), framework="testfw") == ["framework"]


def test_non_string_keys_are_refused_where_they_are(tmp_path: Path) -> None:
    data = manifest()
    data["adapter_options"]["ON_PLACEHOLDER"] = 1
    text = yaml.safe_dump(data, sort_keys=False).replace("ON_PLACEHOLDER", "on")  # YAML 1.1 reads `on` as true
    assert _fields(tmp_path, text) == ["adapter_options"]


def test_yaml_errors_are_reported_not_raised(tmp_path: Path) -> None:
    assert _fields(tmp_path, "name: [unclosed\n") == ["<root>"]
    assert _fields(tmp_path / "b", "- a list\n") == ["<root>"]


@pytest.mark.parametrize(
    ("data", "field"),
    [
        (_variant(image="nvcr.io/x:1"), "runtime.versions.1.0.0.image"),
        (_variant(runtime_id=None), "runtime.versions.1.0.0.runtime_id"),
        (_variant(runtime_id="bad id"), "runtime.versions.1.0.0.runtime_id"),
        (_variant(runtime_id="testfw-0.9.0"), "runtime.versions.0.9.0.runtime_id"),  # the second use
        (_variant(deployment_artifact=None), "runtime.versions.1.0.0"),
        (_variant(source={"kind": "oci", "reference": "r/x:1"}), "runtime.versions.1.0.0.source"),
        (_variant(deployment_artifact=None, source={"kind": "sif", "reference": "/x.sif", "sha256": "a" * 64}),
         "runtime.versions.1.0.0.source.kind"),
        (_variant(deployment_artifact=None, source={"kind": "oci", "reference": "r/x@sha256:abc"}),
         "runtime.versions.1.0.0.source.reference"),
        (_variant(requires=["not a requirement!!"]), "runtime.versions.1.0.0.requires[0]"),
        (_variant(status="retired"), "runtime.versions.1.0.0.status"),
        (_variant(sunset="next year"), "runtime.versions.1.0.0.sunset"),
        (_variant(entrypoint={"kind": "module", "value": "not a module"}), "runtime.versions.1.0.0.entrypoint.value"),
        (_variant(colour="blue"), "runtime.versions.1.0.0.colour"),
    ],
)
def test_runtime_variant_rules(tmp_path: Path, data: dict[str, Any], field: str) -> None:
    assert field in _fields(tmp_path, data)


def test_version_keys_must_be_exact(tmp_path: Path) -> None:
    data = manifest()
    data["runtime"] = {"default_version": "latest", "versions": {"latest": {"runtime_id": "x", "deployment_artifact": True}}}
    assert _fields(tmp_path, data) == ["runtime.versions.latest"]


def test_default_version_must_be_a_variant(tmp_path: Path) -> None:
    data = manifest()
    data["runtime"]["default_version"] = "2.0.0"
    assert _fields(tmp_path, data) == ["runtime.default_version"]


def test_pinned_frameworks_need_their_exact_pin(tmp_path: Path) -> None:
    data = manifest(framework="verl")
    data["runtime"]["versions"]["1.0.0"]["requires"] = ["verl>=1.0"]
    data["runtime"]["versions"]["0.9.0"]["requires"] = ["verl==0.9.0"]
    assert _fields(tmp_path, data, framework="verl") == ["runtime.versions.1.0.0.requires"]


def test_custom_variants_are_free_form(tmp_path: Path) -> None:
    data = manifest(name="custom", framework="custom")
    data["runtime"] = {"default_version": "user-managed", "versions": {"user-managed": {"requires": []}}}
    write_recipe(tmp_path / "custom" / "custom", data)
    assert load_catalog(tmp_path, overlays=False).ids == ["custom/custom"]


def test_sif_and_enroot_artifacts(tmp_path: Path) -> None:
    data = manifest(name="custom", framework="custom")
    data["runtime"] = {"default_version": "a", "versions": {
        "a": {"source": {"kind": "sif", "reference": "/img/x.sif", "sha256": "a" * 64}},
        "b": {"source": {"kind": "enroot-sqsh", "reference": "/img/x.sqsh", "sha256": "b" * 64,
                         "source_digest": "sha256:" + "c" * 64, "architecture": "arm64", "ray_version": "2.55.1",
                         "python_executable": "python3", "requires_python": ">=3.10", "capabilities": ["rdma"]}},
    }}
    write_recipe(tmp_path / "custom" / "custom", data)
    assert load_catalog(tmp_path, overlays=False).ids == ["custom/custom"]
    data["runtime"]["versions"]["b"]["source"].update(architecture="riscv", ray_version="2.x")
    assert _fields(tmp_path, data, framework="custom", name="custom") == [
        "runtime.versions.b.source.architecture", "runtime.versions.b.source.ray_version"]


@pytest.mark.parametrize(
    ("decl", "field"),
    [
        ({"type": "double"}, "params.learning_rate.type"),
        ({"type": "enum"}, "params.learning_rate.choices"),
        ({"type": "enum", "choices": []}, "params.learning_rate.choices"),
        ({"choices": "a,b"}, "params.learning_rate.choices"),
        ({"type": "float", "min": float("nan")}, "params.learning_rate.min"),
        ({"type": "float", "max": float("inf")}, "params.learning_rate.max"),
        ({"type": "float", "min": "0"}, "params.learning_rate.min"),
        ({"type": "str", "min": 1}, "params.learning_rate.min"),
        ({"type": "int", "min": 5, "max": 1}, "params.learning_rate.max"),
        ({"type": "int", "default": 1.5}, "params.learning_rate.default"),
        ({"type": "int", "min": 1, "default": 0}, "params.learning_rate.default"),
        ({"type": "enum", "choices": [1, 2], "default": True}, "params.learning_rate.default"),
        ({"type": "bool", "required": "yes"}, "params.learning_rate.required"),
        ({"path_overrides": {"1.0.0": ""}}, "params.learning_rate.path_overrides"),
        ({"dflt": 1}, "params.learning_rate.dflt"),
        ({"type": "float", "needs_gpu": True}, "params.learning_rate.needs_gpu"),
        ({"type": "bool", "needs_gpu": "yes"}, "params.learning_rate.needs_gpu"),
    ],
)
def test_parameter_rules(tmp_path: Path, decl: dict[str, Any], field: str) -> None:
    assert field in _fields(tmp_path, _param(**decl))


def test_a_catalog_error_lists_every_problem_of_every_manifest(tmp_path: Path) -> None:
    bad = manifest(name="one", version=None)
    worse = manifest(name="two", category="x", roles=[1])
    good = manifest(name="three")
    tree(tmp_path, bad, worse, good)
    with pytest.raises(CatalogError) as info:
        load_catalog(tmp_path, overlays=False)
    found = [(Path(p.file).parent.name, p.field) for p in info.value.problems]
    assert found == [("one", "version"), ("two", "category"), ("two", "roles[0]")]
    assert "testfw/one/recipe.yaml: version: is required" in str(info.value)


def test_missing_template_is_refused(tmp_path: Path) -> None:
    write_recipe(tmp_path / "testfw" / "grpo", manifest(template="scaffold"))
    with pytest.raises(CatalogError) as info:
        load_catalog(tmp_path, overlays=False)
    assert [p.field for p in info.value.problems] == ["template"]


def test_skipped_and_ignored_directories(tmp_path: Path) -> None:
    tree(tmp_path)
    write_recipe(tmp_path / ".hidden" / "grpo", manifest(framework=".hidden"))
    write_recipe(tmp_path / "__pycache__" / "grpo", "not: [valid")
    (tmp_path / "testfw" / "notes").mkdir()
    (tmp_path / "README.md").write_text("x")
    assert load_catalog(tmp_path, overlays=False).ids == ["testfw/grpo"]


def test_dates_and_unicode_load(tmp_path: Path) -> None:
    data = manifest(title="演示")
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    text = text.replace("sunset: '2030-01-31'", "sunset: 2030-01-31")
    write_recipe(tmp_path / "testfw" / "grpo", text)
    recipe = load_catalog(tmp_path, overlays=False).get("testfw/grpo")
    assert recipe is not None and recipe.title == "演示"
    assert recipe.runtime.versions["0.9.0"].sunset == "2030-01-31"
    assert recipe.manifest["runtime"]["versions"]["0.9.0"]["sunset"].isoformat() == "2030-01-31"


def test_manifest_is_the_loaded_document(tmp_path: Path) -> None:
    data = manifest()
    recipe = load_catalog(tree(tmp_path, copy.deepcopy(data)), overlays=False).get("testfw/grpo")
    assert recipe is not None and recipe.manifest == data


def test_adapter_bindings_name_known_job_inputs_and_config_paths(tmp_path: Path) -> None:
    good = {"observability": "platform", "config_mode": "trl-yaml",
            "bindings": {"model": "model_name_or_path", "train_data": "dataset_name"}}
    write_recipe(tmp_path / "good" / "testfw" / "grpo", manifest(adapter_options=good))
    loaded = load_catalog(tmp_path / "good", overlays=False).get("testfw/grpo")
    assert loaded is not None and loaded.adapter_options["bindings"] == good["bindings"]
    bad = good | {"bindings": {"weights": "w", "model": "", "train_data": 3}}
    assert _fields(tmp_path / "bad", manifest(adapter_options=bad)) == [
        "adapter_options.bindings.weights", "adapter_options.bindings.model", "adapter_options.bindings.train_data",
    ]
    assert _fields(tmp_path / "list", manifest(adapter_options=good | {"bindings": ["model"]})) == [
        "adapter_options.bindings"
    ]


def test_a_bool_parameter_may_declare_that_true_needs_a_gpu(tmp_path: Path) -> None:
    write_recipe(tmp_path / "testfw" / "grpo", _param("bf16", type="bool", needs_gpu=True, default=True))
    recipe = load_catalog(tmp_path, overlays=False).get("testfw/grpo")
    assert recipe is not None and recipe.params["bf16"].needs_gpu and not recipe.params["steps"].needs_gpu
