"""The builtin recipe catalog as data: every manifest follows recipes-and-locks §2 and our stricter rules."""

from __future__ import annotations

import datetime
import math
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.specifiers import SpecifierSet

BUILTIN = Path(__file__).resolve().parents[3] / "src" / "starforge" / "recipes" / "builtin"
EXPECTED_IDS = {
    "custom/custom",
    "evalkit/benchmark",
    "nemo-rl/dpo",
    "nemo-rl/grpo",
    "nemo-rl/sft",
    "openrlhf/ppo",
    "tinyrl/grpo",
    "trl/dpo",
    "trl/grpo",
    "trl/sft",
    "verl/grpo",
}
REQUIRED_KEYS = (
    "name",
    "version",
    "framework",
    "entrypoint",
    "template",
    "adapter_options",
    "runtime",
    "lifecycle",
    "lifecycle_resources",
    "metrics",
    "artifacts",
)
SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
EXACT_VERSION = re.compile(r"^(?:\d+\.\d+\.\d+(?:[A-Za-z0-9.+-]*)?|[0-9a-f]{40})$")
CATEGORIES = {"", "supervised", "sft", "preference", "reward-model", "rl", "distillation", "evaluation", "custom"}
CONFIG_MODES = {"dot-overrides", "hydra-overrides", "trl-yaml", "cli-flags", "cli-args", "pytorch-yaml"}
PINNED = {"verl": "verl", "trl": "trl", "pytorch": "torch"}
PARAM_TYPES = {"int", "float", "bool", "str", "enum"}


def _manifest_files() -> list[Path]:
    return sorted(BUILTIN.glob("*/*/recipe.yaml"))


def _load(path: Path) -> dict[str, Any]:
    loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict), path
    return loaded


MANIFESTS = {f"{p.parent.parent.name}/{p.parent.name}": (p, _load(p)) for p in _manifest_files()}


def _ids() -> list[str]:
    return sorted(MANIFESTS)


def _canonical_problems(value: Any, field: str) -> list[str]:
    """Return where the loaded manifest holds something canonical JSON cannot (non-string keys, dates, NaN)."""
    if isinstance(value, dict):
        out = []
        for key, child in value.items():
            if not isinstance(key, str):
                out.append(f"{field}: key {key!r} is not a string")
            out += _canonical_problems(child, f"{field}.{key}")
        return out
    if isinstance(value, list):
        return [p for i, child in enumerate(value) for p in _canonical_problems(child, f"{field}[{i}]")]
    if isinstance(value, float) and not math.isfinite(value):
        return [f"{field}: {value} is not finite"]
    if isinstance(value, datetime.date | datetime.datetime):
        return [f"{field}: {value!r} is a date (quote it)"]
    if value is not None and not isinstance(value, str | int | float | bool):
        return [f"{field}: {type(value).__name__} is not JSON"]
    return []


def _value_problem(decl: dict[str, Any], value: Any) -> str:
    """Return why `value` fails the parameter declaration (recipes-and-locks §4.2 step 3), or ''."""
    kind = decl.get("type", "str")
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "int" and (isinstance(value, bool) or not isinstance(value, int)):
        return "not an int"
    if kind == "float" and (not is_number or not math.isfinite(value)):
        return "not a finite number"
    if kind == "bool" and not isinstance(value, bool):
        return "not a bool"
    if kind == "str" and not isinstance(value, str):
        return "not a string"
    choices = decl.get("choices")
    if choices is not None and not any(_strict_equal(value, choice) for choice in choices):
        return "not one of the choices"
    if kind in ("int", "float"):
        low, high = decl.get("min"), decl.get("max")
        if low is not None and (value < low or (decl.get("exclusive_min") and value == low)):
            return "below min"
        if high is not None and value > high:
            return "above max"
    return ""


def _strict_equal(a: Any, b: Any) -> bool:
    """Type-strict equality of §4.2: booleans only equal booleans, strings strings, numbers compare numerically."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and a == b


def _config_has(config: dict[str, Any], path: str) -> bool:
    if path in config:
        return True
    node: Any = config
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def test_the_catalog_holds_exactly_our_recipes() -> None:
    assert set(MANIFESTS) == EXPECTED_IDS


@pytest.mark.parametrize("rid", _ids())
def test_required_keys_and_identity(rid: str) -> None:
    path, manifest = MANIFESTS[rid]
    missing = [k for k in REQUIRED_KEYS if k not in manifest]
    assert missing == []
    assert manifest["name"] == path.parent.name
    assert manifest["framework"] == path.parent.parent.name
    assert SEGMENT.match(manifest["name"]) and SEGMENT.match(manifest["framework"])
    assert isinstance(manifest["version"], str) and manifest["version"]
    assert manifest.get("category", "") in CATEGORIES
    assert isinstance(manifest.get("title"), str) and isinstance(manifest.get("summary"), str)
    template = path.parent / manifest["template"]
    assert ".." not in Path(manifest["template"]).parts and template.is_dir()
    assert (template / "config.yaml").is_file() and (template / "README.md").is_file()
    assert SpecifierSet(manifest["requires"]["core"]) == SpecifierSet(">=0.4,<0.5")


@pytest.mark.parametrize("rid", _ids())
def test_manifest_is_canonical_json(rid: str) -> None:
    assert _canonical_problems(MANIFESTS[rid][1], "") == []


@pytest.mark.parametrize("rid", _ids())
def test_lifecycle_and_resources_have_the_same_keys(rid: str) -> None:
    manifest = MANIFESTS[rid][1]
    lifecycle, resources = manifest["lifecycle"], manifest["lifecycle_resources"]
    assert isinstance(lifecycle, dict) and isinstance(resources, dict)
    assert set(lifecycle) == set(resources)
    for action, entry in lifecycle.items():
        assert SEGMENT.match(action)
        assert entry["kind"] in ("module", "file", "experiment") and entry["value"]
        assert isinstance(resources[action], int) and not isinstance(resources[action], bool)
        assert resources[action] >= 0


@pytest.mark.parametrize("rid", _ids())
def test_entrypoint_and_adapter_options(rid: str) -> None:
    manifest = MANIFESTS[rid][1]
    entry = manifest["entrypoint"]
    assert entry["kind"] in ("module", "file", "experiment") and entry["value"]
    if entry["kind"] == "experiment":
        assert (MANIFESTS[rid][0].parent / manifest["template"] / entry["value"]).is_file()
    options = manifest["adapter_options"]
    assert options["observability"] == ("external" if rid == "custom/custom" else "platform")
    assert options.get("config_mode", "dot-overrides") in CONFIG_MODES


@pytest.mark.parametrize("rid", _ids())
def test_runtime_variants(rid: str) -> None:
    manifest = MANIFESTS[rid][1]
    runtime, framework = manifest["runtime"], manifest["framework"]
    versions = runtime["versions"]
    assert isinstance(versions, dict) and versions
    assert runtime["default_version"] in versions
    if framework == "custom":
        assert list(versions) == ["user-managed"] and "runtime_id" not in versions["user-managed"]
        return
    seen = set()
    for version, variant in versions.items():
        assert EXACT_VERSION.match(version), version
        assert variant["runtime_id"] == f"{framework}-{version}"
        assert variant["runtime_id"] not in seen
        seen.add(variant["runtime_id"])
        assert "image" not in variant
        assert variant.get("deployment_artifact") is True and "source" not in variant
        assert variant.get("status", "supported") in ("supported", "deprecated")
        if variant.get("status") == "deprecated":
            datetime.date.fromisoformat(variant["sunset"])
        if framework in PINNED:
            assert f"{PINNED[framework]}=={version}" in variant["requires"]


def test_some_recipe_offers_a_deprecated_runtime_with_a_sunset() -> None:
    deprecated = [
        (rid, v)
        for rid, (_, m) in MANIFESTS.items()
        for v, variant in m["runtime"]["versions"].items()
        if variant.get("status") == "deprecated" and variant.get("sunset")
    ]
    assert deprecated


@pytest.mark.parametrize("rid", _ids())
def test_params_follow_our_strict_rules(rid: str) -> None:
    path, manifest = MANIFESTS[rid]
    params = manifest.get("params") or {}
    config = yaml.safe_load((path.parent / manifest["template"] / "config.yaml").read_text(encoding="utf-8")) or {}
    paths = []
    for name, decl in params.items():
        assert SEGMENT.match(name)
        kind = decl.get("type", "str")
        assert kind in PARAM_TYPES, name
        if kind == "enum":
            assert isinstance(decl.get("choices"), list) and decl["choices"], name
        for bound in ("min", "max"):
            if bound in decl:
                assert kind in ("int", "float") and isinstance(decl[bound], int | float), name
                assert not isinstance(decl[bound], bool) and math.isfinite(decl[bound]), name
        if decl.get("default") is not None:
            assert _value_problem(decl, decl["default"]) == "", name
        if decl.get("path"):
            paths.append(decl["path"])
            assert _config_has(config, decl["path"]), f"{name}: {decl['path']} is not in the template config"
    assert len(paths) == len(set(paths)), "two parameters write the same config path"
    assert manifest.get("hyperparam_keys", "names") in ("names", "names_or_paths")


@pytest.mark.parametrize("rid", _ids())
def test_metrics_validation_artifacts_i18n(rid: str) -> None:
    manifest = MANIFESTS[rid][1]
    metrics = manifest["metrics"]
    assert isinstance(metrics["primary"], list) and metrics["primary"]
    for canonical, natives in (metrics.get("aliases") or {}).items():
        assert isinstance(canonical, str) and isinstance(natives, list)
    for semantics in (metrics.get("semantics") or {}).values():
        assert semantics["direction"] in ("higher", "lower", "neutral")
        assert semantics["display"] in ("ratio", "number")
    validation = manifest.get("validation") or {}
    sample_kind = validation.get("sample_kind", "none")
    assert sample_kind in ("conversation", "preference", "completion", "none")
    assert validation.get("reward_semantics", "none") in ("scalar", "binary", "margin", "none")
    if sample_kind == "none":
        assert validation.get("reward_semantics", "none") == "none"
    artifacts = manifest["artifacts"]
    assert artifacts["version"] == "forge/artifacts/v1"
    for key in ("checkpoints", "logs", "exports", "evaluations"):
        assert isinstance(artifacts[key], list)
        for glob in artifacts[key]:
            assert not glob.startswith("/") and ".." not in glob.split("/")
    for key in ("checkpoint", "log", "hf_export", "eval_report"):
        assert artifacts["formats"][key]
    params = manifest.get("params") or {}
    for locale in (manifest.get("i18n") or {}).values():
        assert set(locale) <= {"title", "summary", "params"}
        for name, text in (locale.get("params") or {}).items():
            assert name in params and set(text) <= {"doc", "group"}


def test_nemo_rl_grpo_admits_the_product_brief_example() -> None:
    manifest = MANIFESTS["nemo-rl/grpo"][1]
    assert manifest["version"] == "0.7.0"
    assert manifest["runtime"]["versions"]["0.7.0"]["runtime_id"] == "nemo-rl-0.7.0"
    assert manifest["hyperparam_keys"] == "names_or_paths"
    lr = manifest["params"]["learning_rate"]
    assert lr["path"] == "policy.optimizer.kwargs.lr"
    assert _value_problem(lr, 1e-6) == ""
    assert not [n for n, d in manifest["params"].items() if d.get("required") and d.get("default") is None]
    assert "trainer" in manifest["roles"]
    assert {"export", "eval"} <= set(manifest["lifecycle"])
    assert manifest["adapter_options"]["observability"] == "platform"


def test_tinyrl_grpo_runs_our_numpy_framework() -> None:
    manifest = MANIFESTS["tinyrl/grpo"][1]
    assert manifest["entrypoint"] == {"kind": "module", "value": "starforge.tinyrl.grpo"}
    assert manifest["adapter_options"] == {
        "config_mode": "dot-overrides",
        "observability": "platform",
        "launcher": "python-module",
        "init_from_key": "policy.init_from",
    }
    variant = manifest["runtime"]["versions"]["1.0.0"]
    assert variant["runtime_id"] == "tinyrl-1.0.0" and variant["requires"] == ["numpy>=1.24", "PyYAML>=6"]
    assert manifest["lifecycle"] == {"export": {"kind": "module", "value": "starforge.tinyrl.export"}}
    assert manifest["lifecycle_resources"] == {"export": 1}
    assert manifest["params"]["max_num_steps"]["default"] == 60
    assert manifest["artifacts"]["checkpoints"] == ["checkpoints/step_*"]
    assert manifest["artifacts"]["formats"]["checkpoint"] == "npz"


def test_evalkit_benchmark_requires_suites_and_fills_defaults() -> None:
    params = MANIFESTS["evalkit/benchmark"][1]["params"]
    assert params["suites"]["type"] == "str" and params["suites"]["required"] is True
    assert params["runner"]["default"] == "lm-eval"
    assert params["batch_size"]["default"] == "auto"


def test_the_catalog_loader_reads_the_builtin_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from starforge.recipes import load_catalog

    monkeypatch.setenv("FORGE_HOME", str(tmp_path))
    monkeypatch.delenv("FORGE_RECIPE_PATH", raising=False)
    catalog = load_catalog()
    assert {r.id for r in catalog.recipes} >= EXPECTED_IDS


@pytest.mark.parametrize("rid", _ids())
def test_bindings_name_job_inputs_and_config_paths_the_template_sets(rid: str) -> None:
    from starforge.wire import INPUTS

    path, manifest = MANIFESTS[rid]
    bindings = manifest["adapter_options"].get("bindings", {})
    assert isinstance(bindings, dict) and set(bindings) <= set(INPUTS)
    config = yaml.safe_load((path.parent / manifest["template"] / "config.yaml").read_text(encoding="utf-8")) or {}
    for name, target in bindings.items():
        assert isinstance(target, str) and target, name
        assert _config_has(config, target), f"{rid}: the template does not set {target} (bound to {name})"


def test_the_trl_recipes_take_the_model_data_and_output_folder_and_own_no_checkpoint_globs() -> None:
    for rid in ("trl/sft", "trl/grpo", "trl/dpo"):
        manifest = MANIFESTS[rid][1]
        assert manifest["adapter_options"]["bindings"] == {
            "model": "model_name_or_path", "train_data": "dataset_name", "validation_data": "dataset_name",
            "checkpoint_dir": "output_dir",
        }
        assert manifest["adapter_options"]["init_from_key"] == "model_name_or_path"
        assert manifest["artifacts"]["checkpoints"] == []  # the trainer callback registers them
    assert MANIFESTS["trl/dpo"][1]["validation"] == {"sample_kind": "preference", "reward_semantics": "margin"}
