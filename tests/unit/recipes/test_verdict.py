"""`check_document`: stage B, then C only if B passed, then D only if C passed; the accepted spec is normalised."""

from __future__ import annotations

from pathlib import Path

from starforge.recipes import check_document

from .trees import catalog, manifest, spec


def test_stages_run_in_order(tmp_path: Path) -> None:
    cat = catalog(tmp_path, manifest())
    recipe = cat.get("testfw/grpo")
    assert recipe is not None
    contract_broken = spec(recipe, recipe__version="9.9.9", hyperparams={"bogus": 1})
    contract_broken["kind"] = "Export"
    assert [p.field for p in check_document(contract_broken, cat).problems] == ["kind"]
    catalog_broken = spec(recipe, recipe__version="9.9.9", hyperparams={"bogus": 1})
    assert [p.field for p in check_document(catalog_broken, cat).problems] == ["spec.recipe.version"]
    gates_broken = spec(recipe, hyperparams={"bogus": 1}, lifecycle={"on_success": ["eval"]})
    verdict = check_document(gates_broken, cat)
    assert [p.field for p in verdict.problems] == ["spec.hyperparams", "spec.lifecycle.on_success"]
    assert verdict.spec is None and not verdict.ok


def test_an_accepted_spec_is_normalised_with_warnings(tmp_path: Path) -> None:
    cat = catalog(tmp_path, manifest())
    recipe = cat.get("testfw/grpo")
    assert recipe is not None
    doc = spec(recipe, framework__version="0.9.0", framework__runtime_id="testfw-0.9.0", hyperparams={"flag": True})
    doc["spec"]["extra"] = 1
    verdict = check_document(doc, cat)
    assert verdict.ok and verdict.spec is not None
    assert verdict.spec.spec.hyperparams == {"steps": 10, "flag": True}
    assert [w.code for w in verdict.warnings] == ["unknown_field", "runtime_deprecated"]


def test_no_validate_and_no_catalog(tmp_path: Path) -> None:
    cat = catalog(tmp_path, manifest())
    recipe = cat.get("testfw/grpo")
    assert recipe is not None
    doc = spec(recipe, hyperparams={"bogus": 1})
    assert check_document(doc, cat, validate=False).ok
    assert check_document(doc).ok  # the contract alone
