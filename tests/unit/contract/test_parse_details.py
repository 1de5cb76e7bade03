"""Details of `parse` its fast paths must keep: problem order inside an object, key warnings, defaults."""

from __future__ import annotations

import json
from typing import Any

import pytest

from starforge.contract import is_pep440, loads, parse
from tests.specs import minimal_spec, mutate, rich_spec


def _problems(doc: Any) -> list[tuple[str, str]]:
    return [(p.field, p.code) for p in parse(doc).problems]


def test_a_repeated_known_key_is_still_a_warning() -> None:
    text = json.dumps(minimal_spec()).replace('"source": {', '"source": {"exp": "old", ', 1)
    parsed = parse(loads(text))
    assert [(w.field, w.code) for w in parsed.warnings] == [("spec.source.exp", "duplicate_key")]
    assert parsed.spec is not None and parsed.spec.spec.source.exp == "experiments/my-grpo"


@pytest.mark.parametrize("via_json", [False, True])
def test_a_nested_non_finite_hyperparameter_is_reported_at_its_path(via_json: bool) -> None:
    doc = mutate(minimal_spec(), "spec.hyperparams.schedule", {"warmup": [1.0, float("inf")]})
    if via_json:
        doc = loads(json.dumps(doc))
    assert _problems(doc) == [("spec.hyperparams.schedule.warmup[1]", "not_finite")]


def test_problems_inside_an_object_follow_field_order() -> None:
    doc = mutate(minimal_spec(), "spec.framework", {"kind": "nemo rl", "runtime_id": "x y"})
    assert _problems(doc) == [
        ("spec.framework.kind", "not_a_safe_segment"),
        ("spec.framework.version", "missing_field"),
        ("spec.framework.runtime_id", "not_a_safe_segment"),
    ]


def test_quality_types_are_checked_before_ranges() -> None:
    doc = mutate(minimal_spec(), "spec.data.quality", {"max_duplicate_ratio": 2, "max_overlap_ratio": "x"})
    assert _problems(doc) == [
        ("spec.data.quality.max_overlap_ratio", "not_a_number"),
        ("spec.data.quality.max_duplicate_ratio", "out_of_range"),
    ]


def test_gate_relations_are_checked_in_order() -> None:
    gate = {"metric": "g/x", "min": 2, "max": 1, "max_regression": -1}
    doc = mutate(minimal_spec(), "spec.evaluation", {"suites": ["g"], "gates": [gate]})
    assert _problems(doc) == [
        ("spec.evaluation.gates[0].max_regression", "out_of_range"),
        ("spec.evaluation.gates[0].max", "min_greater_than_max"),
    ]


def test_null_root_keys_count_as_missing() -> None:
    doc = minimal_spec()
    doc["apiVersion"] = None
    del doc["kind"]
    assert _problems(doc) == [("apiVersion", "missing_field"), ("kind", "missing_field")]


def test_pool_counts_default_to_one_only_when_absent() -> None:
    parsed = parse(mutate(minimal_spec(), "spec.resources.pools", [{"name": "all"}]))
    assert parsed.spec is not None
    assert [(p.nodes, p.gpus_per_node) for p in parsed.spec.spec.resources.pools] == [(1, 1)]
    doc = mutate(minimal_spec(), "spec.resources.pools", [{"name": "all", "gpus_per_node": None}])
    assert _problems(doc) == [("spec.resources.pools[0].gpus_per_node", "not_an_integer")]


def test_volumes_from_two_owners_with_one_name_collide() -> None:
    doc = mutate(minimal_spec(), "spec.data.volumes", ["alice/docs", "bob/tools", "bob/docs"])
    assert _problems(doc) == [("spec.data.volumes", "volume_name_collision")]
    parsed = parse(mutate(minimal_spec(), "spec.data.volumes", ["alice/docs", "bob/tools", " alice/docs"]))
    assert parsed.spec is not None and parsed.spec.spec.data.volumes == ("alice/docs", "bob/tools")


def test_a_duplicate_plugin_is_reported_before_a_leaf_collision() -> None:
    plugins = rich_spec()["spec"]["plugins"]
    doc = mutate(rich_spec(), "spec.plugins", [*plugins, {**plugins[0], "id": "carol/Reward-Fn"}, plugins[0]])
    assert _problems(doc) == [("spec.plugins", "duplicate_plugin")]


@pytest.mark.parametrize(
    ("value", "field"),
    [
        (" alice/x@v1 ", None),
        (" alice/x ", "spec.data.output_dataset"),
        ("alice/x@", "spec.data.output_dataset.version"),
    ],
)
def test_output_dataset_is_trimmed_and_needs_a_version(value: str, field: str | None) -> None:
    parsed = parse(mutate(minimal_spec(), "spec.data.output_dataset", value))
    if field is None:
        assert parsed.spec is not None and parsed.spec.spec.data.output_dataset == value.strip()
    else:
        assert [p.field for p in parsed.problems] == [field]


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("0.3.56", True),
        ("1", True),
        ("v1.0", True),
        ("1!2.0", True),
        ("1.0rc1", True),
        ("1.0.post1.dev2", True),
        ("1.0+local.7", True),
        ("1.0-1", True),
        ("", False),
        (".1", False),
        ("1.", False),
        ("1..2", False),
        ("0.3.56 ", False),
        ("١.٢", False),
        ("not a version", False),
    ],
)
def test_pep440_versions(value: str, valid: bool) -> None:
    assert is_pep440(value) is valid
