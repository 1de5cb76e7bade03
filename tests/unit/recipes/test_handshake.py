"""The catalog handshake (§7): console-side H4-H8 at admission and client-side H1-H8 on crafted payloads."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from starforge.contract import JobSpec, parse
from starforge.recipes import (
    Catalog,
    catalog_digest,
    check_catalog,
    check_client_handshake,
    compare_server_entry,
)

from .trees import catalog, manifest, spec


@pytest.fixture
def cat(tmp_path: Path) -> Catalog:
    return catalog(tmp_path, manifest(), manifest(name="sft", requires={"core": ">=0.3.60"}))


def _spec(cat: Catalog, recipe_id: str = "testfw/grpo", core: str = "0.3.56", **changes: Any) -> JobSpec:
    recipe = cat.get(recipe_id)
    doc = spec(recipe, **changes)
    doc["provenance"]["core_version"] = core
    parsed = parse(doc)
    assert parsed.spec is not None, parsed.problems
    return parsed.spec


def _first(problems: list[Any]) -> str:
    assert len(problems) <= 1  # the console reports the first failure only
    return f"{problems[0].field}:{problems[0].code}" if problems else ""


def test_console_side_order(cat: Catalog) -> None:
    assert _first(check_catalog(_spec(cat), cat)) == ""
    assert _first(check_catalog(_spec(cat, recipe__name="testfw/nope"), cat)) == "spec.recipe.name:recipe_unknown"
    assert _first(check_catalog(_spec(cat, recipe__version="0.1.0", recipe__digest="sha256:" + "0" * 64), cat)) == \
        "spec.recipe.version:recipe_version_mismatch"
    assert _first(check_catalog(_spec(cat, recipe__digest="sha256:" + "0" * 64, framework__kind="x"), cat)) == \
        "spec.recipe.digest:recipe_digest_mismatch"
    assert _first(check_catalog(_spec(cat, framework__kind="verl", framework__version="9.9.9"), cat)) == \
        "spec.framework.kind:framework_kind_mismatch"
    assert _first(check_catalog(_spec(cat, framework__version="9.9.9"), cat)) == \
        "spec.framework.version:framework_version_unsupported"
    assert _first(check_catalog(_spec(cat, framework__runtime_id=...), cat)) == \
        "spec.framework.runtime_id:runtime_id_mismatch"
    assert _first(check_catalog(_spec(cat, framework__runtime_id="testfw-0.9.0"), cat)) == \
        "spec.framework.runtime_id:runtime_id_mismatch"
    assert _first(check_catalog(_spec(cat, core="0.3.38"), cat)) == "provenance.core_version:core_version_incompatible"


def test_a_disabled_recipe_is_unknown(cat: Catalog) -> None:
    problems = check_catalog(_spec(cat), cat.with_disabled(["testfw/grpo"]))
    assert _first(problems) == "spec.recipe.name:recipe_unknown" and "not enabled" in problems[0].message


def test_core_version_messages_name_both_versions(cat: Catalog) -> None:
    old = check_catalog(_spec(cat, core="0.3.38"), cat)[0]
    assert old.message == ("recipe testfw/grpo@1.0.0 on this console needs core >=0.3.56,<0.4 (catalog built for "
                           "0.3.56); this spec was built by core 0.3.38 — upgrade the sf client")
    assert "upgrade the sf client" in old.hint
    new = check_catalog(_spec(cat, core="0.4.1"), cat)[0]
    assert "0.4.1" in new.message and ">=0.3.56,<0.4" in new.message and "newer" in new.hint
    recipe_range = check_catalog(_spec(cat, "testfw/sft", core="0.3.57"), cat)[0]
    assert recipe_range.field == "provenance.core_version"
    assert "needs core >=0.3.60; this spec was built by core 0.3.57" in recipe_range.message
    assert check_catalog(_spec(cat, "testfw/sft", core="0.3.61rc1"), cat) == []  # pre-releases allowed


def _payload(cat: Catalog) -> dict[str, Any]:
    return copy.deepcopy(cat.payload())


def _seal(payload: dict[str, Any]) -> dict[str, Any]:
    payload["catalog_digest"] = catalog_digest(payload["recipes"])
    return payload


def _client(payload: Any, spec_: JobSpec, version: str = "0.3.56") -> str:
    problems = check_client_handshake(payload, spec_, version)
    assert len(problems) <= 1
    return f"{problems[0].field}:{problems[0].code}" if problems else ""


def test_client_accepts_a_matching_catalog(cat: Catalog) -> None:
    assert _client(_payload(cat), _spec(cat)) == ""


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda p: p.update(apiVersion="forge/recipe-catalog/v3"), "catalog:catalog_unsupported"),
        (lambda p: p.update(contract={"versions": ["forge/v2", "forge/v3"]}), "catalog:catalog_unsupported"),
        (lambda p: p.update(core={"version": "0.3.56"}), "catalog:core_version_incompatible"),
        (lambda p: p.update(core={"version": "0.3.60", "requirement": ">=0.3.60"}), "catalog:core_version_incompatible"),
        (lambda p: p.update(core={"version": "0.3.50", "requirement": ">=0.3.56"}), "catalog:core_version_incompatible"),
        (lambda p: p.update(catalog_digest="sha256:" + "0" * 64), "catalog:catalog_digest_mismatch"),
        (lambda p: p.update(recipes="nope"), "catalog:catalog_unsupported"),
    ],
)
def test_client_envelope_h1_h3(cat: Catalog, mutate: Any, expected: str) -> None:
    payload = _payload(cat)
    mutate(payload)
    assert _client(payload, _spec(cat)) == expected


def test_client_v1_demands_exact_versions(cat: Catalog) -> None:
    payload = _payload(cat)
    payload.update(apiVersion="forge/recipe-catalog/v1", core={"version": "0.3.56", "requirement": "==0.3.56"})
    assert _client(payload, _spec(cat)) == ""
    assert _client(payload, _spec(cat), "0.3.57") == "catalog:core_version_incompatible"


def test_client_h2_message_names_the_range_and_the_client(cat: Catalog) -> None:
    problems = check_client_handshake(_payload(cat), _spec(cat), "0.3.38")
    assert problems[0].field == "catalog" and ">=0.3.56,<0.4" in problems[0].message and "0.3.38" in problems[0].message


def test_client_h4_to_h8(cat: Catalog) -> None:
    payload = _payload(cat)
    assert _client(payload, _spec(cat, recipe__name="testfw/other")) == "spec.recipe.name:recipe_unknown"
    assert _client(payload, _spec(cat, framework__version="9.9.9")) == \
        "spec.framework.version:framework_version_unsupported"
    assert _client(payload, _spec(cat, framework__runtime_id="x")) == "spec.framework.runtime_id:runtime_id_mismatch"
    payload["recipes"][0]["core_requires"] = ">=0.3.57"
    assert _client(_seal(payload), _spec(cat)) == "provenance.core_version:core_version_incompatible"
    payload["recipes"][0]["runtime"]["versions"]["1.0.0"] = "testfw-1.0.0"  # not an object
    payload["recipes"][0]["core_requires"] = ""
    assert _client(_seal(payload), _spec(cat)) == "spec.framework.version:framework_version_unsupported"


def test_client_h5_lists_every_differing_key(cat: Catalog) -> None:
    payload = _payload(cat)
    entry = payload["recipes"][0]
    entry.update(version="2.0.0", digest="sha256:" + "1" * 64, adapter="other")
    problems = check_client_handshake(_seal(payload), _spec(cat), "0.3.56")
    assert [(p.field, p.code) for p in problems] == [("spec.recipe.version", "recipe_version_mismatch")]
    message = problems[0].message
    assert "version: server 2.0.0, cli 1.0.0" in message
    assert f"digest: server sha256:{'1' * 64}, cli {cat.get('testfw/grpo').digest()}" in message  # type: ignore[union-attr]
    assert "adapter: server other, cli testfw" in message and "framework:" not in message
    entry.update(version="1.0.0", digest=cat.get("testfw/grpo").digest(), adapter="testfw",  # type: ignore[union-attr]
                 framework="verl")
    assert _client(_seal(payload), _spec(cat)) == "spec.framework.kind:framework_kind_mismatch"


def test_client_rejects_a_non_object() -> None:
    problems = check_client_handshake(["not", "an", "object"], None, "0.3.56")  # type: ignore[arg-type]
    assert problems[0].field == "catalog"


def test_compare_server_entry(cat: Catalog) -> None:
    payload = cat.payload()
    recipe = cat.get("testfw/grpo")
    assert recipe is not None
    assert compare_server_entry(payload, recipe.id, recipe.version, recipe.digest())[0] == "current"
    status, message = compare_server_entry(payload, recipe.id, "9.0.0", recipe.digest())
    assert status == "differs" and "version: server 1.0.0, local 9.0.0" in message
    assert compare_server_entry(payload, "testfw/none", "1", "d")[0] == "not_enabled"
