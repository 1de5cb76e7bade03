"""The built-in catalog (src/starforge/recipes/builtin) loads with `load_catalog()` and is valid.

This test depends on the content of the built-in tree, which is maintained separately; it is skipped while the tree
holds no recipe.
"""

from __future__ import annotations

import pytest

from starforge import __version__
from starforge.recipes import BUILTIN_CORE_REQUIREMENT, check_document, load_catalog
from starforge.recipes._env import BUILTIN_ROOT

from .trees import spec

HAS_BUILTIN = any(BUILTIN_ROOT.glob("*/*/recipe.yaml"))


@pytest.mark.skipif(not HAS_BUILTIN, reason="the built-in recipe tree is empty")
def test_the_builtin_catalog_is_valid() -> None:
    catalog = load_catalog(overlays=False)
    assert len(catalog) > 0
    payload = catalog.payload()
    assert payload["core"] == {"version": __version__, "requirement": BUILTIN_CORE_REQUIREMENT}
    assert [r["name"] for r in payload["recipes"]] == catalog.ids
    for recipe in catalog:
        assert recipe.entrypoint.value and recipe.default_version in recipe.framework_versions
        for param in recipe.params.values():
            assert param.type in ("int", "float", "bool", "str", "enum")
        assert recipe.digest().startswith("sha256:") and recipe.template_dir.is_dir()


@pytest.mark.skipif(not HAS_BUILTIN, reason="the built-in recipe tree is empty")
def test_a_builtin_spec_passes_the_catalog_stage() -> None:
    catalog = load_catalog(overlays=False)
    recipe = catalog.recipes[0]
    doc = spec(recipe, hyperparams={})
    doc["provenance"]["core_version"] = __version__
    problems = check_document(doc, catalog).problems
    assert not [p for p in problems if p.field.startswith(("spec.recipe", "spec.framework.kind",
                                                           "spec.framework.version", "spec.framework.runtime_id",
                                                           "provenance"))], problems
