"""`sf new`, `sf validate` and `sf ls` as library calls on real temporary labs: create, check and list."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from starforge.lab import (
    client_catalog,
    create_experiment,
    default_method,
    expected_lock,
    init_lab,
    inspect_lock,
    list_experiments,
    read_lock,
    validate_experiment,
)
from starforge.recipes import Catalog
from tests.unit.lab.conftest import commit
from tests.unit.recipes.trees import manifest, tree


@pytest.fixture
def lab(tmp_path: Path) -> Path:
    return init_lab(tmp_path / "lab", name="unit-lab")


def test_new_copies_the_template_and_writes_the_expected_lock(lab: Path, builtin: Catalog) -> None:
    made = create_experiment(lab, "my-grpo", builtin, method="nemo-rl/grpo")
    assert made.problems == [] and made.path == lab / "experiments" / "my-grpo"
    assert (made.exp, made.recipe, made.framework_version) == ("experiments/my-grpo", "nemo-rl/grpo", "0.7.0")
    recipe = builtin.get("nemo-rl/grpo")
    assert recipe is not None
    template = sorted(p.relative_to(recipe.template_dir).as_posix() for p in recipe.template_dir.rglob("*")
                      if p.is_file())
    files = sorted(p.relative_to(made.path).as_posix() for p in made.path.rglob("*") if p.is_file())
    assert files == sorted([*template, "recipe.lock.json"])
    lock, _ = read_lock(made.path)
    assert lock == expected_lock(recipe, "0.7.0", made.path)
    assert lock is not None and lock["bindings"]["params"]  # the template's config sets the parameters' paths
    assert (made.path / "recipe.lock.json").read_text().endswith("}\n")
    assert inspect_lock(made.path, builtin).state == "current"
    assert oct(made.path.stat().st_mode & 0o777) == oct(0o777 & ~_umask())
    assert not [p for p in made.path.parent.iterdir() if p.name.startswith(".") and p.is_dir()]


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def test_new_refuses_bad_names_existing_experiments_and_unknown_recipes(lab: Path, builtin: Catalog) -> None:
    assert create_experiment(lab, "toy", builtin, method="tinyrl/grpo").path is not None
    cases = {
        ("toy", "tinyrl/grpo", ""): [("name", "experiment_exists")],
        ("bad name", "tinyrl/grpo", ""): [("name", "not_a_safe_segment")],
        ("other/x", "tinyrl/grpo", ""): [("name", "not_a_safe_segment")],
        ("x", "grpo", ""): [("--method", "invalid_recipe_id")],
        ("x", "tinyrl/grpoo", ""): [("--method", "recipe_unknown")],
        ("x", "tinyrl/grpo", "9.9"): [("--framework-version", "framework_version_unsupported")],
    }
    for (name, method, version), expected in cases.items():
        made = create_experiment(lab, name, builtin, method=method, framework_version=version)
        assert made.path is None and [(p.field, p.code) for p in made.problems] == expected, name
        assert all(p.hint for p in made.problems)
    assert not (lab / "experiments" / "x").exists()
    assert create_experiment(lab, "smoke/quick", builtin, method="tinyrl/grpo").exp == "smoke/quick"


def test_new_from_another_experiment(lab: Path, builtin: Catalog) -> None:
    source = create_experiment(lab, "base", builtin, method="tinyrl/grpo").path
    assert source is not None
    (source / "config.yaml").write_text("grpo:\n  max_num_steps: 7\n")
    (source / "notes.md").write_text("mine\n")
    (source / ".env").write_text("TOKEN=x\n")
    (source / "__pycache__").mkdir()
    (source / "__pycache__" / "x.pyc").write_bytes(b"")
    made = create_experiment(lab, "variant", builtin, source="base")
    assert made.problems == [] and made.path is not None and made.recipe == "tinyrl/grpo"
    assert made.source == "experiments/base"
    assert (made.path / "config.yaml").read_text() == "grpo:\n  max_num_steps: 7\n"
    assert (made.path / "notes.md").exists()
    assert not (made.path / ".env").exists() and not (made.path / "__pycache__").exists()
    assert inspect_lock(made.path, builtin).state == "current"
    conflict = create_experiment(lab, "v2", builtin, source="base", method="nemo-rl/grpo")
    assert [(p.field, p.code) for p in conflict.problems] == [("--method", "recipe_unknown")]
    unknown = create_experiment(lab, "v3", builtin, source="missing")
    assert [(p.field, p.code) for p in unknown.problems] == [("--from", "experiment_unknown")]


def test_a_failed_copy_leaves_nothing_behind(lab: Path, builtin: Catalog) -> None:
    source = create_experiment(lab, "base", builtin, method="tinyrl/grpo").path
    assert source is not None
    (source / "dangling").symlink_to(lab / "does-not-exist")
    with pytest.raises(OSError):
        create_experiment(lab, "copy", builtin, source="base")
    assert sorted(p.name for p in (lab / "experiments").iterdir()) == [".gitkeep", "base"]


def test_the_default_method(lab: Path, builtin: Catalog, tmp_path: Path) -> None:
    assert default_method(lab, builtin) == builtin.recipes[0].id == "nemo-rl/grpo"
    assert create_experiment(lab, "one", builtin, method="tinyrl/grpo").path is not None
    assert default_method(lab, builtin) == "tinyrl/grpo"  # the recipe the lab's experiments share
    made = create_experiment(lab, "two", builtin)
    assert made.recipe == "tinyrl/grpo"
    assert create_experiment(lab, "three", builtin, method="nemo-rl/sft").path is not None
    assert default_method(lab, builtin) == "nemo-rl/grpo"  # several recipes: back to the catalog's first


def test_validate_reports_the_state_and_the_defaults(lab: Path, builtin: Catalog) -> None:
    create_experiment(lab, "toy", builtin, method="tinyrl/grpo")
    result = validate_experiment(lab, "toy", builtin)
    assert result.ok and result.state == "current" and result.label == ""
    assert (result.exp, result.recipe, result.framework_version) == ("experiments/toy", "tinyrl/grpo", "1.0.0")
    assert result.hyperparams == {"max_num_steps": 60}
    assert json.loads(json.dumps(result.to_dict()))["ok"] is True


def test_validate_finds_config_values_out_of_range_and_broken_yaml(lab: Path, builtin: Catalog) -> None:
    exp = create_experiment(lab, "toy", builtin, method="tinyrl/grpo").path
    assert exp is not None
    text = (exp / "config.yaml").read_text()
    (exp / "config.yaml").write_text(text.replace("max_num_steps: 60", "max_num_steps: 0"))
    result = validate_experiment(lab, "toy", builtin)
    assert [(p.field, p.code) for p in result.problems] == [("config.grpo.max_num_steps", "hyperparameter_range")]
    (exp / "config.yaml").write_text("grpo: [unclosed\n")
    broken = validate_experiment(lab, "toy", builtin)
    assert [(p.field, p.code) for p in broken.problems] == [("config.yaml", "config_invalid")]


def test_validate_refuses_a_lost_lock_and_a_missing_experiment(lab: Path, builtin: Catalog) -> None:
    exp = create_experiment(lab, "toy", builtin, method="tinyrl/grpo").path
    assert exp is not None
    (exp / "recipe.lock.json").unlink()
    lost = validate_experiment(lab, "toy", builtin)
    assert lost.state == "malformed" and lost.label == "unreadable"
    assert [(p.field, p.code) for p in lost.problems] == [("recipe.lock.json", "lock_unreadable")]
    missing = validate_experiment(lab, "nope", builtin)
    assert missing.state == "" and [(p.field, p.code) for p in missing.problems] == [("exp", "experiment_unknown")]


def test_validate_reports_a_required_parameter_without_default(tmp_path: Path) -> None:
    params = {"steps": {"type": "int", "path": "train.steps", "required": True}}
    catalog = client_catalog(tree(tmp_path / "tree", manifest(params=params)))
    root = init_lab(tmp_path / "lab", name="unit-lab")
    create_experiment(root, "exp", catalog, method="testfw/grpo")
    result = validate_experiment(root, "exp", catalog)
    assert [(p.field, p.code) for p in result.problems] == [("spec.hyperparams", "missing_hyperparameter")]
    assert "--set steps=" in result.problems[0].hint


def test_ls_lists_experiments_with_their_lock_labels(lab: Path, builtin: Catalog) -> None:
    assert list_experiments(lab, builtin) == []
    for name, method in (("b-exp", "nemo-rl/grpo"), ("a-exp", "tinyrl/grpo"), ("smoke/quick", "tinyrl/grpo")):
        create_experiment(lab, name, builtin, method=method)
    lock = lab / "experiments" / "b-exp" / "recipe.lock.json"
    data = json.loads(lock.read_text())
    data["recipe"]["version"] = "0.6.0"
    lock.write_text(json.dumps(data))
    (lab / "experiments" / "no-lock").mkdir()
    rows = [(r.name, r.recipe, r.framework_version, r.label, r.admits) for r in list_experiments(lab, builtin)]
    assert rows == [
        ("a-exp", "tinyrl/grpo", "1.0.0", "", True),
        ("b-exp", "nemo-rl/grpo", "0.7.0", "drifted", True),
        ("no-lock", "", "", "unreadable", False),
        ("smoke/quick", "tinyrl/grpo", "1.0.0", "", True),
    ]
    commit(lab)
