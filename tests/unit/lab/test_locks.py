"""`recipe.lock.json`: formats v2-v4, the file form, expected bindings and every inspection state (§9-§10)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from starforge.lab import LABELS, expected_lock, inspect_lock, normalise_lock, read_lock, write_lock
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


@pytest.fixture
def exp(tmp_path: Path, recipe: Recipe) -> Path:
    root = lab(tmp_path / "lab")
    target = root / "experiments" / "x"
    shutil.copytree(recipe.template_dir, target)
    write_lock(target, expected_lock(recipe, "1.0.0", target, core_version="0.4.0"))
    return target


def _state(exp: Path, cat: Catalog, client: str = "0.4.0", requested: str | None = None) -> str:
    return inspect_lock(exp, cat, client, requested).state


def test_written_lock_form(exp: Path, recipe: Recipe) -> None:
    text = (exp / "recipe.lock.json").read_text(encoding="utf-8")
    data = json.loads(text)
    assert text == json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    assert not (exp / "recipe.lock.json.tmp").exists()
    assert data["apiVersion"] == "forge/recipe-lock/v4" and data["created_by"] == {"core_version": "0.4.0"}
    assert data["recipe"] == {"name": "testfw/grpo", "version": "1.0.0", "digest": recipe.digest(),
                              "manifest_digest": recipe.manifest_digest, "template_digest": recipe.template_digest}
    assert data["framework"] == {"kind": "testfw", "version": "1.0.0", "runtime_id": "testfw-1.0.0"}
    assert data["requires"] == {"core": ">=0.1,<1"}
    assert data["bindings"] == {"entrypoint": {"kind": "module", "value": "testfw.train"},
                                "params": {"learning_rate": {"path": "optim.lr", "type": "float"},
                                           "steps": {"path": "train.steps", "type": "int"}}}
    write_lock(exp, {"apiVersion": "forge/recipe-lock/v4", "recipe": {"name": "ünïcode"}})
    assert "ünïcode" in (exp / "recipe.lock.json").read_text(encoding="utf-8")


def test_bindings_follow_the_defaults_chain(exp: Path, recipe: Recipe) -> None:
    configs = exp.parent.parent / "configs"
    configs.mkdir()
    (configs / "base.yaml").write_text("train:\n  flag: null\n", encoding="utf-8")
    (exp / "config.yaml").write_text("defaults:\n  - ../../configs/base.yaml\nprecision: bf16\noptim.lr: 0.1\n")
    params = expected_lock(recipe, "1.0.0", exp)["bindings"]["params"]
    assert list(params) == ["flag", "learning_rate", "precision"]  # sorted; null counts as set; flat keys count
    assert expected_lock(recipe, "0.9.0", exp)["bindings"]["params"].get("flag") is None  # path_overrides: old.flag
    (exp / "config.yaml").write_text("defaults: ../../configs/missing\ntrain:\n  steps: 3\n")
    assert list(expected_lock(recipe, "1.0.0", exp)["bindings"]["params"]) == ["steps"]  # the file as written
    (exp / "config.yaml").write_text("train: [unclosed\n")
    assert expected_lock(recipe, "1.0.0", exp)["bindings"]["params"] == {}


def test_current(exp: Path, cat: Catalog) -> None:
    inspection = inspect_lock(exp, cat, "0.4.0")
    assert (inspection.state, inspection.admits, inspection.diffs, inspection.label) == ("current", True, [], "")
    assert inspection.admits_under(strict=True)


@pytest.mark.parametrize(
    ("content", "reason"),
    [(None, "no recipe.lock.json"), ("{not json", "not valid JSON"), ("[1]", "not a JSON object"),
     ('{"apiVersion": "forge/recipe-lock/v9"}', "unsupported apiVersion"),
     ('{"apiVersion": "forge/recipe-lock/v4", "recipe": {}}', "names no recipe"),
     ('{"apiVersion": "forge/recipe-lock/v4", "recipe": {"name": "testfw/gone"}}', "not in the local catalog")],
)
def test_malformed(exp: Path, cat: Catalog, content: str | None, reason: str) -> None:
    file = exp / "recipe.lock.json"
    if content is None:
        file.unlink()
    else:
        file.write_text(content)
    inspection = inspect_lock(exp, cat, "0.4.0")
    assert inspection.state == "malformed" and not inspection.admits and inspection.label == "unreadable"
    assert reason in inspection.message


def test_malformed_when_another_recipe_is_requested(exp: Path, cat: Catalog) -> None:
    assert _state(exp, cat, requested="testfw/grpo") == "current"
    assert _state(exp, cat, requested="testfw/sft") == "malformed"


def test_sdk_incompatible_names_the_range_and_the_client(exp: Path, cat: Catalog) -> None:
    inspection = inspect_lock(exp, cat, "1.2.0")
    assert inspection.state == "sdk_incompatible" and inspection.label == "sdk mismatch"
    assert "testfw/grpo@1.0.0 needs core >=0.1,<1; this sf is 1.2.0" in inspection.message


def test_runtime_removed(exp: Path, cat: Catalog) -> None:
    edit_lock(exp, framework__version="0.8.0")
    inspection = inspect_lock(exp, cat, "0.4.0")
    assert (inspection.state, inspection.label, inspection.admits) == ("runtime_removed", "runtime gone", False)
    assert "--accept-runtime-change" in inspection.message


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"bindings__params__learning_rate": {"path": "optimizer.lr", "type": "float"}}, "moved from optimizer.lr"),
        ({"bindings__params__steps": {"path": "train.steps", "type": "float"}}, "changed type from float"),
        ({"bindings__params__removed": {"path": "a.b", "type": "int"}}, "removed no longer exists"),
        ({"bindings__entrypoint": {"kind": "file", "value": "train.py"}}, "entrypoint changed"),
        ({"framework__runtime_id": "testfw-0.7.0"}, "framework.runtime_id is testfw-0.7.0"),
        ({"framework__kind": "verl"}, "framework.kind is verl"),
    ],
)
def test_incompatible(exp: Path, cat: Catalog, changes: dict[str, Any], reason: str) -> None:
    edit_lock(exp, **changes)
    inspection = inspect_lock(exp, cat, "0.4.0")
    assert inspection.state == "incompatible" and not inspection.admits, inspection
    assert reason in inspection.message and "sf recipe upgrade x" in inspection.message


def test_empty_recorded_values_are_unknowns_not_breaks(exp: Path, cat: Catalog) -> None:
    edit_lock(exp, framework__runtime_id="", bindings__params__steps={"path": "", "type": ""},
              bindings__entrypoint={"kind": "", "value": "x"})
    inspection = inspect_lock(exp, cat, "0.4.0")
    assert inspection.state == "compatible"
    assert [d[0] for d in inspection.diffs] == ["framework.runtime_id", "bindings.entrypoint", "bindings.params.steps"]


def test_upgrade_advised(exp: Path, cat: Catalog, recipe: Recipe) -> None:
    write_lock(exp, expected_lock(recipe, "0.9.0", exp))
    inspection = inspect_lock(exp, cat, "0.4.0")
    assert (inspection.state, inspection.label, inspection.admits) == ("upgrade_advised", "behind", True)
    assert "2030-01-31" in inspection.message and "--framework-version 1.0.0" in inspection.message
    assert not inspection.admits_under(strict=True) and inspection.strict_state == "recipe_stale"


def test_compatible_lists_diffs_in_order(exp: Path, cat: Catalog) -> None:
    edit_lock(exp, recipe__version="0.9.9", recipe__digest="sha256:" + "0" * 64, requires__core=">=0.1",
              bindings__params__steps=None)
    inspection = inspect_lock(exp, cat, "0.4.0")
    assert (inspection.state, inspection.label, inspection.admits) == ("compatible", "drifted", True)
    assert [d[0] for d in inspection.diffs] == ["recipe.version", "recipe.digest", "requires.core",
                                                "bindings.params.steps"]
    assert inspection.diffs[0] == ("recipe.version", "0.9.9", "1.0.0")
    assert inspection.diffs[3] == ("bindings.params.steps", "", "train.steps (int)")
    assert not inspection.admits_under(strict=True)


def test_v3_and_v2_locks(exp: Path, cat: Catalog, recipe: Recipe) -> None:
    lock = expected_lock(recipe, "1.0.0", exp)
    del lock["bindings"]
    lock["apiVersion"] = "forge/recipe-lock/v3"
    write_lock(exp, lock)
    inspection = inspect_lock(exp, cat, "0.4.0")
    assert inspection.state == "compatible" and [d[0] for d in inspection.diffs] == ["apiVersion"]
    write_lock(exp, {"apiVersion": "forge/recipe-lock/v2", "recipe": {
        "name": "testfw/grpo", "version": "1.0.0", "digest": recipe.digest(), "framework": "testfw",
        "framework_version": "1.0.0"}})
    inspection = inspect_lock(exp, cat, "0.4.0")
    assert inspection.state == "compatible"
    assert [d[0] for d in inspection.diffs] == ["apiVersion", "recipe.manifest_digest", "recipe.template_digest",
                                                "framework.runtime_id", "requires.core"]
    normalised = normalise_lock(read_lock(exp)[0] or {})
    assert normalised["framework.kind"] == "testfw" and normalised["bindings"] is None


def test_labels_cover_every_state() -> None:
    assert LABELS == {"current": "", "compatible": "drifted", "upgrade_advised": "behind",
                      "incompatible": "incompatible", "runtime_removed": "runtime gone",
                      "sdk_incompatible": "sdk mismatch", "malformed": "unreadable"}
