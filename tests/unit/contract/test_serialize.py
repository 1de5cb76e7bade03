"""Canonical emission: key order, empty-value omission, normalised values, warnings for unknown keys."""

from __future__ import annotations

import json

from starforge.contract import dumps, loads, parse
from tests.specs import minimal_spec, mutate, rich_spec


def _ok(doc: object):  # type: ignore[no-untyped-def]
    parsed = parse(doc)
    assert parsed.spec is not None, parsed.problems
    return parsed.spec


def test_minimal_spec_round_trips_byte_for_byte() -> None:
    doc = minimal_spec()
    assert _ok(doc).to_dict() == doc
    assert list(_ok(doc).to_dict()["spec"]) == ["recipe", "source", "framework", "resources", "hyperparams"]


def test_key_order_follows_the_reference() -> None:
    out = _ok(rich_spec()).to_dict()
    assert list(out) == ["apiVersion", "kind", "metadata", "spec", "provenance"]
    assert list(out["metadata"]) == ["name", "project", "display_name", "labels"]
    assert list(out["spec"]) == ["recipe", "source", "framework", "model", "data", "resources", "hyperparams",
                                 "lifecycle", "evaluation", "plugins"]
    assert list(out["spec"]["recipe"]) == ["name", "version", "digest", "plugins"]
    assert list(out["spec"]["model"]) == ["base", "peft", "init_from"]
    assert list(out["spec"]["data"]) == ["train", "validation", "corpus", "volumes", "output_dataset",
                                         "environment", "quality"]
    assert list(out["spec"]["data"]["quality"]) == ["max_duplicate_ratio", "overlap_with", "max_overlap_ratio"]
    assert list(out["spec"]["resources"]["pools"][0]) == ["name", "nodes", "gpus_per_node", "series"]
    assert list(out["spec"]["evaluation"]) == ["suites", "runner", "limit", "gates"]
    assert list(out["provenance"]) == ["core_version", "git_commit", "git_dirty", "config_sha"]


def test_empty_values_are_omitted() -> None:
    doc = minimal_spec()
    doc["metadata"].update({"owner": "", "labels": {}, "display_name": "  "})
    doc["spec"]["framework"].update({"image": "", "observability_url": None})
    doc["spec"]["model"] = {"base": "", "init_from": "   "}
    doc["spec"]["data"] = None
    doc["spec"]["lifecycle"] = {"on_success": []}
    doc["provenance"]["git_dirty"] = False
    out = _ok(doc).to_dict()
    assert out == minimal_spec()


def test_normalised_values_are_emitted() -> None:
    doc = mutate(minimal_spec(), "spec.model", {"init_from": " run/abc/ckpt@step= 7 "})
    doc["spec"]["source"]["exp"] = "experiments/my-grpo/"
    doc["spec"]["evaluation"] = {"suites": [" gsm8k ", "gsm8k", ""], "gates": [{"metric": "gsm8k/em", "min": 1}]}
    doc["spec"]["data"] = {"quality": {"max_duplicate_ratio": 1}}
    out = _ok(doc).to_dict()["spec"]
    assert out["model"] == {"init_from": "run/abc/ckpt@step=7"}
    assert out["source"] == {"exp": "experiments/my-grpo"}
    assert out["evaluation"] == {"suites": ["gsm8k"], "gates": [{"metric": "gsm8k/em", "min": 1.0}]}
    assert json.dumps(out["data"]) == '{"quality": {"max_duplicate_ratio": 1.0}}'


def test_floats_use_the_shortest_round_trip_form() -> None:
    text = dumps(_ok(minimal_spec()), indent=None)
    assert '"learning_rate":1e-06' in text


def test_unknown_and_repeated_keys_are_warnings() -> None:
    text = json.dumps(minimal_spec())
    text = text.replace('"project": "my-lab"', '"project": "x", "project": "my-lab", "color": "blue"', 1)
    text = text.replace('"source": {', '"source": {"extra": 1, ', 1)
    parsed = parse(loads(text))
    assert parsed.ok
    assert [(w.field, w.code) for w in parsed.warnings] == [
        ("metadata.project", "duplicate_key"),
        ("metadata.color", "unknown_field"),
        ("spec.source.extra", "unknown_field"),
    ]
    assert parsed.spec is not None and parsed.spec.metadata.project == "my-lab"


def test_duplicate_volume_collapses_with_a_warning() -> None:
    parsed = parse(mutate(minimal_spec(), "spec.data.volumes", ["alice/docs", "alice/docs"]))
    assert parsed.spec is not None and parsed.spec.spec.data.volumes == ("alice/docs",)
    assert [w.code for w in parsed.warnings] == ["duplicate_volume"]


def test_nan_from_json_text_is_refused_at_its_field() -> None:
    text = json.dumps(minimal_spec()).replace("1e-06", "NaN")
    parsed = parse(loads(text))
    assert [(p.field, p.code) for p in parsed.problems] == [("spec.hyperparams.learning_rate", "not_finite")]


def test_every_problem_is_collected_in_one_pass() -> None:
    doc = minimal_spec()
    doc["apiVersion"] = "forge/v1"
    doc["spec"]["source"]["entrypoint"] = "python train.py"
    doc["spec"]["resources"]["pools"] = []
    doc["provenance"]["git_dirty"] = "no"
    fields = [p.field for p in parse(doc).problems]
    assert fields == ["apiVersion", "spec.source.entrypoint", "spec.resources.pools", "provenance.git_dirty"]
