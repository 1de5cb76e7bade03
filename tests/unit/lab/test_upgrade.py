"""`plan_upgrade` / `apply_upgrade` (§11): refusals, version choice, config validation, all-or-nothing, rollback."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from starforge.lab import UpgradeError, apply_upgrade, expected_lock, inspect_lock, plan_upgrade, write_lock
from starforge.recipes import Catalog, Recipe
from tests.unit.recipes.trees import catalog, edit_lock, lab, manifest


@pytest.fixture
def cat(tmp_path: Path) -> Catalog:
    """A one-recipe catalog tree (`testfw/grpo`) in a temporary directory."""
    return catalog(tmp_path / "tree", manifest())


@pytest.fixture
def recipe(cat: Catalog) -> Recipe:
    found = cat.get("testfw/grpo")
    assert found is not None
    return found


def _exp(tmp_path: Path, recipe: Recipe, name: str = "x") -> Path:
    root = lab(tmp_path / "lab")
    target = root / "experiments" / name
    shutil.copytree(recipe.template_dir, target)
    write_lock(target, expected_lock(recipe, "1.0.0", target))
    return target


def test_compatible_round_trip(tmp_path: Path, cat: Catalog, recipe: Recipe) -> None:
    exp = _exp(tmp_path, recipe)
    edit_lock(exp, recipe__version="0.1.0")
    before = (exp / "recipe.lock.json").read_bytes()
    plan = plan_upgrade(exp, cat, "0.4.0")
    assert plan.ok and plan.state == "compatible" and plan.changed
    assert plan.diffs == [("recipe.version", "0.1.0", "1.0.0")]
    assert (exp / "recipe.lock.json").read_bytes() == before  # planning writes nothing
    assert apply_upgrade([plan]) == [exp / "recipe.lock.json"]
    assert inspect_lock(exp, cat, "0.4.0").state == "current"
    again = plan_upgrade(exp, cat, "0.4.0")
    assert again.ok and again.diffs == [] and not again.changed and apply_upgrade([again]) == []


def test_incompatible_is_fixed(tmp_path: Path, cat: Catalog, recipe: Recipe) -> None:
    exp = _exp(tmp_path, recipe)
    edit_lock(exp, framework__runtime_id="testfw-0.5.0")
    plan = plan_upgrade(exp, cat, "0.4.0")
    assert plan.ok and plan.state == "incompatible"
    apply_upgrade([plan])
    assert inspect_lock(exp, cat, "0.4.0").state == "current"


def test_refusals(tmp_path: Path, cat: Catalog, recipe: Recipe) -> None:
    exp = _exp(tmp_path, recipe)
    assert plan_upgrade(exp, cat, "1.5.0").state == "sdk_incompatible"
    assert not plan_upgrade(exp, cat, "1.5.0").ok
    assert not plan_upgrade(exp, cat, "0.4.0", framework_version="2.0.0").ok
    (exp / "recipe.lock.json").write_text("garbage")
    plan = plan_upgrade(exp, cat, "0.4.0")
    assert (plan.ok, plan.state) == (False, "malformed")
    with pytest.raises(UpgradeError, match="nothing was written"):
        apply_upgrade([plan])
    assert (exp / "recipe.lock.json").read_text() == "garbage"


def test_runtime_removed(tmp_path: Path, cat: Catalog, recipe: Recipe) -> None:
    exp = _exp(tmp_path, recipe)
    edit_lock(exp, framework__version="0.8.0")
    assert not plan_upgrade(exp, cat, "0.4.0").ok
    accepted = plan_upgrade(exp, cat, "0.4.0", accept_runtime_change=True)
    assert accepted.ok and accepted.framework_version == "1.0.0"
    chosen = plan_upgrade(exp, cat, "0.4.0", framework_version="0.9.0")
    assert chosen.ok and chosen.framework_version == "0.9.0"
    apply_upgrade([chosen])
    assert inspect_lock(exp, cat, "0.4.0").state == "upgrade_advised"
    apply_upgrade([plan_upgrade(exp, cat, "0.4.0", framework_version="1.0.0")])
    assert inspect_lock(exp, cat, "0.4.0").state == "current"


def test_config_errors_refuse_cleanly(tmp_path: Path, cat: Catalog, recipe: Recipe) -> None:
    exp = _exp(tmp_path, recipe)
    edit_lock(exp, recipe__version="0.1.0")
    (exp / "config.yaml").write_text("optim:\n  lr: 0\ntrain:\n  steps: many\nprecision: fp8\n")
    before = (exp / "recipe.lock.json").read_bytes()
    plan = plan_upgrade(exp, cat, "0.4.0")
    assert (plan.ok, plan.state) == (False, "incompatible")
    assert [(p.field, p.code) for p in plan.problems] == [
        ("config.optim.lr", "hyperparameter_range"), ("config.train.steps", "hyperparameter_type"),
        ("config.precision", "hyperparameter_choice")]
    with pytest.raises(UpgradeError):
        apply_upgrade([plan])
    assert (exp / "recipe.lock.json").read_bytes() == before
    (exp / "config.yaml").write_text("optim:\n  lr: 5e-6\ntrain:\n  steps: null\n")  # YAML 1.1 string, null unset
    assert plan_upgrade(exp, cat, "0.4.0").ok


def test_all_or_nothing(tmp_path: Path, cat: Catalog, recipe: Recipe) -> None:
    good, bad = _exp(tmp_path, recipe, "good"), _exp(tmp_path, recipe, "bad")
    edit_lock(good, recipe__version="0.1.0")
    edit_lock(bad, framework__version="0.8.0")
    plans = [plan_upgrade(e, cat, "0.4.0") for e in (good, bad)]
    with pytest.raises(UpgradeError) as info:
        apply_upgrade(plans)
    assert [p.exp_dir for p in info.value.plans] == [bad]
    assert inspect_lock(good, cat, "0.4.0").state == "compatible"


def test_a_failed_write_rolls_back(tmp_path: Path, cat: Catalog, recipe: Recipe) -> None:
    first, second = _exp(tmp_path, recipe, "a"), _exp(tmp_path, recipe, "b")
    edit_lock(first, recipe__version="0.1.0")
    edit_lock(second, recipe__version="0.1.0")
    before = (first / "recipe.lock.json").read_bytes()
    (second / "recipe.lock.json.tmp").mkdir()  # the second write cannot create its temporary file
    plans = [plan_upgrade(e, cat, "0.4.0") for e in (first, second)]
    assert all(p.ok for p in plans)
    with pytest.raises(UpgradeError, match="restored"):
        apply_upgrade(plans)
    assert (first / "recipe.lock.json").read_bytes() == before


def test_a_legacy_method_file_gets_a_lock(tmp_path: Path, cat: Catalog, recipe: Recipe) -> None:
    exp = _exp(tmp_path, recipe)
    (exp / "recipe.lock.json").unlink()
    (exp / "method").write_text("testfw/grpo\n")
    inspection = inspect_lock(exp, cat, "0.4.0")
    assert inspection.state == "malformed" and "legacy method file names testfw/grpo" in inspection.message
    plan = plan_upgrade(exp, cat, "0.4.0")
    assert plan.ok and plan.framework_version == "1.0.0"
    apply_upgrade([plan])
    assert inspect_lock(exp, cat, "0.4.0").state == "current"
