"""Catalog loading: product order, lookup, overlays (first one wins), the payload, and lazy, cached loading."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from starforge import __version__
from starforge.recipes import (
    BUILTIN_CORE_REQUIREMENT,
    CatalogError,
    RecipeMemo,
    catalog_digest,
    load_catalog,
    open_catalog,
)
from starforge.recipes._env import cache_dir

from .trees import age, catalog, manifest, tree, write_recipe


def test_product_order(tmp_path: Path) -> None:
    ids = ["custom/custom", "zeta/a", "evalkit/benchmark", "pytorch/x", "openrlhf/grpo", "trl/grpo", "verl/grpo",
           "nemo-rl/opsd", "nemo-rl/new-method", "nemo-rl/grpo", "nemo-rl/sft", "nemo-rl/grpo-lora", "alpha/b"]
    manifests = []
    for recipe_id in ids:
        framework, name = recipe_id.split("/")
        data = manifest(name=name, framework=framework)
        if framework in ("verl", "trl", "pytorch"):
            pin = "torch" if framework == "pytorch" else framework
            for v, variant in data["runtime"]["versions"].items():
                variant["requires"] = [f"{pin}=={v}"]
        if framework == "custom":
            data["runtime"] = {"default_version": "user-managed", "versions": {"user-managed": {}}}
        manifests.append(data)
    loaded = catalog(tmp_path, *manifests)
    assert loaded.ids == [
        "nemo-rl/grpo", "nemo-rl/grpo-lora", "nemo-rl/sft", "nemo-rl/opsd", "nemo-rl/new-method", "verl/grpo",
        "trl/grpo", "openrlhf/grpo", "pytorch/x", "alpha/b", "evalkit/benchmark", "zeta/a", "custom/custom"]


def test_lookup(tmp_path: Path) -> None:
    loaded = catalog(tmp_path, manifest(), manifest(name="grpo", framework="other"), manifest(name="sft"))
    recipe, problems = loaded.lookup("  testfw/grpo ")
    assert recipe is not None and problems == []
    recipe, problems = loaded.lookup("grpo")
    assert recipe is None and problems[0].field == "spec.recipe.name"
    assert problems[0].code == "invalid_recipe_id" and "other/grpo, testfw/grpo" in problems[0].message
    recipe, problems = loaded.lookup("testfw/grpp", field="recipe")
    assert (problems[0].field, problems[0].code) == ("recipe", "recipe_unknown") and "testfw/grpo" in problems[0].hint
    assert loaded.lookup("a/b/c")[1][0].code == "invalid_recipe_id"
    assert loaded.get("testfw/nope") is None and "testfw/sft" in loaded and len(loaded) == 3


def test_overlays_add_recipes_and_never_replace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = tree(tmp_path / "base")
    first, second, home = tmp_path / "first", tmp_path / "second", tmp_path / "home"
    write_recipe(first / "alice" / "grpo", manifest(title="impostor"))             # same id as the base: ignored
    write_recipe(first / "alice" / "pack", manifest(name="pack", title="first"))
    write_recipe(second / "bob" / "pack", manifest(name="pack", title="second"))   # later root: ignored
    write_recipe(home / "recipes" / "carol" / "carol.tool", manifest(name="carol.tool", framework="other"))
    write_recipe(home / "recipes" / "dave" / "kit", manifest(name="dave.kit", framework="other"))  # <owner>.<dir>
    monkeypatch.setenv("FORGE_RECIPE_PATH", os.pathsep.join([str(first), str(tmp_path / "missing"), str(second)]))
    monkeypatch.setenv("FORGE_HOME", str(home))
    loaded = load_catalog(base)
    assert loaded.ids == ["other/carol.tool", "other/dave.kit", "testfw/grpo", "testfw/pack"]
    grpo, pack = loaded.get("testfw/grpo"), loaded.get("testfw/pack")
    assert grpo is not None and grpo.title == "Test recipe" and grpo.origin == "catalog"
    assert pack is not None and pack.title == "first" and pack.origin == "overlay"
    assert sorted(s.id for s in loaded.shadowed) == ["testfw/grpo", "testfw/pack"]
    assert load_catalog(base, overlays=False).ids == ["testfw/grpo"]


def test_overlay_names_must_match_their_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_recipe(tmp_path / "pack" / "alice" / "wrong", manifest(name="right"))
    monkeypatch.setenv("FORGE_RECIPE_PATH", str(tmp_path / "pack"))
    with pytest.raises(CatalogError) as info:
        load_catalog(tree(tmp_path / "base"))
    assert [p.field for p in info.value.problems] == ["name"]


def test_core_defaults(tmp_path: Path) -> None:
    root = tree(tmp_path)
    plain = load_catalog(root, overlays=False)
    assert (plain.core_version, plain.core_requirement) == ("0.3.56", ">=0.3.56,<0.4")
    old = load_catalog(root, scheme="manifest+template", overlays=False)
    assert (old.core_version, old.core_requirement) == ("0.3.38", ">=0.3.38,<0.3.56")
    given = load_catalog(root, overlays=False, core_version="1.2.3", core_requirement=">=1.2")
    assert given.payload()["core"] == {"version": "1.2.3", "requirement": ">=1.2"}
    with pytest.raises(ValueError, match="not a PEP 440 version"):
        load_catalog(root, overlays=False, core_version="one")
    with pytest.raises(ValueError, match="specifier"):
        load_catalog(root, overlays=False, core_requirement="=>1")
    with pytest.raises(ValueError, match="digest scheme"):
        load_catalog(root, scheme="md5")
    with pytest.raises(CatalogError, match="no recipe tree"):
        load_catalog(tmp_path / "nowhere")


def test_builtin_core_defaults() -> None:
    builtin = load_catalog(overlays=False)
    assert (builtin.core_version, builtin.core_requirement) == (__version__, BUILTIN_CORE_REQUIREMENT)


def test_payload_and_disabled_recipes(tmp_path: Path) -> None:
    loaded = catalog(tmp_path, manifest(), manifest(name="sft"))
    payload = loaded.payload()
    assert payload["apiVersion"] == "forge/recipe-catalog/v2" and payload["contract"] == {"versions": ["forge/v2"]}
    entry = payload["recipes"][0]
    assert entry["supported_framework_versions"] == ["1.0.0", "0.9.0"]
    assert entry["runtime"]["versions"]["0.9.0"] == {"runtime_id": "testfw-0.9.0"}
    assert entry["adapter"] == entry["framework"] == "testfw" and entry["core_requires"] == ">=0.1,<1"
    disabled = loaded.with_disabled(["testfw/sft"])
    assert [r["name"] for r in disabled.payload()["recipes"]] == ["testfw/grpo"]
    assert disabled.payload()["catalog_digest"] == catalog_digest(disabled.payload()["recipes"])
    assert not disabled.is_enabled("testfw/sft") and disabled.get("testfw/sft") is not None
    template = loaded.with_disabled([]).payload()
    assert template == payload
    both = load_catalog(tmp_path, scheme="manifest+template", overlays=False).payload()["recipes"][0]
    assert both["digest"] != entry["digest"] and both["template_digest"] == entry["template_digest"]


def test_warm_loads_parse_no_yaml_and_get_parses_one(tmp_path: Path) -> None:
    root = tree(tmp_path, manifest(), manifest(name="sft"))
    load_catalog(root, overlays=False)
    index = sorted(cache_dir().glob("index-*.json"))
    assert index and any(str(root.resolve()) in p.read_text() for p in index)
    # Replace the other recipe's YAML with garbage of the same size and mtime: an unchanged stat means it is not
    # read again, so a warm load, `get` of the first recipe and its params never touch it.
    other = root / "testfw" / "sft" / "recipe.yaml"
    st = other.stat()
    other.write_bytes(b"#" * st.st_size)
    os.utime(other, ns=(st.st_atime_ns, st.st_mtime_ns))
    warm = load_catalog(root, overlays=False)
    grpo = warm.get("testfw/grpo")
    assert grpo is not None and "steps" in grpo.params
    # A changed stat is noticed.
    other.write_text("name: [broken\n")
    age(other.parent)
    with pytest.raises(CatalogError):
        load_catalog(root, overlays=False)


def test_a_change_is_picked_up(tmp_path: Path) -> None:
    root = tree(tmp_path)
    first = load_catalog(root, overlays=False).get("testfw/grpo")
    assert first is not None
    before = first.template_digest
    write_recipe(root / "testfw" / "grpo", manifest(version="2.0.0"), template={"extra.txt": "x\n"},
                 when=time.time() - 60)
    second = load_catalog(root, overlays=False).get("testfw/grpo")
    assert first is not None and second is not None
    assert second.version == "2.0.0" and second.manifest_digest != first.manifest_digest
    assert second.template_digest != before


def test_the_cache_is_optional(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "home-is-a-file"
    blocked.write_text("")
    monkeypatch.setenv("FORGE_HOME", str(blocked))
    recipe = load_catalog(tree(tmp_path / "t"), overlays=False).get("testfw/grpo")
    assert recipe is not None and recipe.template_digest.startswith("sha256:")


def test_corrupt_cache_files_are_ignored(tmp_path: Path) -> None:
    root = tree(tmp_path / "t")
    expected = load_catalog(root, overlays=False).payload()
    for file in cache_dir().rglob("*.json"):
        file.write_text("{not json")
    assert load_catalog(root, overlays=False).payload() == expected  # a new memo: only the broken files to read
    for file in cache_dir().glob("bodies/*.json"):
        file.write_text(json.dumps({"name": "tampered"}))
    recipe = load_catalog(root, overlays=False).get("testfw/grpo")
    assert recipe is not None and recipe.manifest["name"] == "grpo"  # a body whose digest differs is not trusted


def test_what_loading_keeps_in_memory_is_the_callers_memo(tmp_path: Path) -> None:
    root = tree(tmp_path / "t")
    memo = RecipeMemo()
    first = load_catalog(root, overlays=False, memo=memo).get("testfw/grpo")
    assert first is not None and first.template_digest and memo.entries and memo.templates
    for file in cache_dir().rglob("*.json"):
        file.unlink()  # nothing on disk any more: a second load on the same memo needs none of it
    again = load_catalog(root, overlays=False, memo=memo).get("testfw/grpo")
    assert again is not None and again.template_digest == first.template_digest
    assert not list(cache_dir().glob("bodies/*.json"))  # nothing was computed again, so nothing was stored
    other = RecipeMemo()
    assert load_catalog(root, overlays=False, memo=other).get("testfw/grpo") is not None and other.entries


def test_open_catalog(tmp_path: Path) -> None:
    root = tree(tmp_path / "t")
    assert open_catalog(str(root), "manifest+template").scheme == "manifest+template"
    with pytest.raises(ValueError, match="digest scheme"):
        open_catalog(str(root), "sha1")
    with pytest.raises(ValueError, match="no recipe tree"):
        open_catalog(str(tmp_path / "missing"))
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match="no recipe tree"):
        open_catalog(tmp_path / "file")


def test_a_manifest_edited_after_loading_is_refused_when_read(tmp_path: Path) -> None:
    root = tree(tmp_path / "t")
    memo = RecipeMemo()
    recipe = load_catalog(root, overlays=False, memo=memo).get("testfw/grpo")
    assert recipe is not None
    memo.bodies.clear()  # what the loading kept in memory is gone, as in a later process
    for body in cache_dir().glob("bodies/*.json"):
        body.unlink()
    write_recipe(root / "testfw" / "grpo", manifest(title="edited"), when=time.time() - 30)
    with pytest.raises(CatalogError, match="changed since the catalog was loaded"):
        _ = recipe.params
