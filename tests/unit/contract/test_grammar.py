"""Name grammars: the examples of jobspec-contract.md §5 and §13."""

from __future__ import annotations

import pytest

from starforge.contract import parse, parse_init_from, parse_versioned_ref
from tests.specs import minimal_spec, mutate


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ("alice/handbook@v1", None),
        ("alice/handbook", None),
        ("  alice/handbook@v1  ", None),
        ("/mnt/shared/docs/handbook", "spec.data.corpus"),
        ("C:\\docs\\x", "spec.data.corpus"),
        ("handbook", "spec.data.corpus"),
        ("/alice/handbook", "spec.data.corpus"),
        ("alice//handbook", "spec.data.corpus"),
        ("alice/handbook/", "spec.data.corpus"),
        ("alice/handbook@", "spec.data.corpus.version"),
        ("alice/h@../../etc", "spec.data.corpus.version"),
        ("alice/h@v1@v2", "spec.data.corpus.version"),
        ("./docs", "spec.data.corpus.owner"),
        ("alice/-x", "spec.data.corpus.name"),
        ("alice/ h", "spec.data.corpus.name"),
        ("al\\ice/h", "spec.data.corpus.owner"),
    ],
)
def test_corpus_reference(value: str, field: str | None) -> None:
    parsed = parse(mutate(minimal_spec(), "spec.data.corpus", value))
    if field is None:
        assert parsed.ok, parsed.problems
        assert parsed.spec is not None and parsed.spec.spec.data.corpus == value.strip()
    else:
        assert [p.field for p in parsed.problems][:1] == [field]


def test_output_dataset_needs_a_version() -> None:
    parsed = parse(mutate(minimal_spec(), "spec.data.output_dataset", "alice/x"))
    assert [(p.field, p.code) for p in parsed.problems] == [("spec.data.output_dataset", "version_required")]


@pytest.mark.parametrize(
    ("value", "rendered"),
    [
        ("run/abc/checkpoint", "run/abc/checkpoint"),
        ("run/abc/ckpt@step= 7 ", "run/abc/ckpt@step=7"),
        ("run/abc/hf_export@step=0", "run/abc/hf_export@step=0"),
        ("run//abc/ckpt", "run/abc/ckpt"),
    ],
)
def test_init_from_accepts_and_renders(value: str, rendered: str) -> None:
    ref, problems = parse_init_from(value.strip(), "f")
    assert problems == [] and str(ref) == rendered


@pytest.mark.parametrize(
    "value",
    ["run/abc/ckpt@step=latest", "run/abc/ckpt@epoch=3", "run/abc/ckpt@STEP=1", "run/abc/ckpt@step=-1",
     "run/abc/ckpt@step=1@x", "run/abc/ckpt@step=²", "run/abc/ckpt@step=١", "job/abc/ckpt", "run/abc",
     "run/../ckpt", "run/abc/ckpt/x", "run/abc/ckpt@step="],
)
def test_init_from_refusals_are_clean(value: str) -> None:
    ref, problems = parse_init_from(value, "spec.model.init_from")
    assert ref is None and [p.code for p in problems] == ["invalid_init_from"]


@pytest.mark.parametrize(
    ("path", "value", "field", "code"),
    [
        ("spec.recipe.name", "nemo-rl/ grpo", "spec.recipe.name", "invalid_recipe_id"),
        ("spec.source.exp", "experiments/ my", "spec.source.exp", "invalid_exp_path"),
        ("spec.source.exp", "a//b", "spec.source.exp", "invalid_exp_path"),
        ("spec.source.entrypoint", 0, "spec.source.entrypoint", "entrypoint_forbidden"),
        ("spec.source.entrypoint", False, "spec.source.entrypoint", "entrypoint_forbidden"),
        ("provenance.git_dirty", "false", "provenance.git_dirty", "not_a_boolean"),
        ("provenance.git_commit", "3F2A9C1", "provenance.git_commit", "invalid_git_commit"),
        ("provenance.config_sha", "abc", "provenance.config_sha", "invalid_config_sha"),
        ("provenance.core_version", "not a version", "provenance.core_version", "invalid_version"),
        ("metadata.project", 5, "metadata.project", "not_a_string"),
        ("metadata.display_name", ["x"], "metadata.display_name", "not_a_string"),
        ("metadata.name", "a" * 256, "metadata.name", "name_too_long"),
        ("spec.recipe.digest", "sha256:abc", "spec.recipe.digest", "invalid_digest"),
        ("spec.hyperparams.learning_rate", float("nan"), "spec.hyperparams.learning_rate", "not_finite"),
        ("spec.hyperparams.learning_rate", float("inf"), "spec.hyperparams.learning_rate", "not_finite"),
        ("spec.resources.pools.0.nodes", None, "spec.resources.pools[0].nodes", "not_an_integer"),
        ("spec.resources.pools.0.nodes", "2", "spec.resources.pools[0].nodes", "not_an_integer"),
        ("spec.model.peft", {"dim": 0}, "spec.model.peft.dim", "not_positive"),
        ("spec.model.peft", {"alpha": 1.5}, "spec.model.peft.alpha", "not_an_integer"),
        ("spec.evaluation", {"suites": ["g"], "limit": False}, "spec.evaluation.limit", "not_an_integer"),
        ("spec.evaluation", {"suites": ["g"], "gates": [{"metric": "g/x", "min": 2, "max": 1}]},
         "spec.evaluation.gates[0].max", "min_greater_than_max"),
        ("spec.data.quality", {"max_duplicate_ratio": True}, "spec.data.quality.max_duplicate_ratio", "not_a_number"),
        ("spec.data.quality", {"max_duplicate_ratio": 1.5}, "spec.data.quality.max_duplicate_ratio", "out_of_range"),
        ("spec.resources.roles", {"actor": "nowhere"}, "spec.resources.roles", "unknown_pool"),
        ("metadata.labels", {"team": 3}, "metadata.labels.team", "not_a_string"),
    ],
)
def test_strict_rules(path: str, value: object, field: str, code: str) -> None:
    parsed = parse(mutate(minimal_spec(), path, value))
    assert (parsed.problems[0].field, parsed.problems[0].code) == (field, code), parsed.problems


def test_plugin_leaves_collide_case_insensitively() -> None:
    plugins = [
        {"id": "alice/OPSD", "version": "1", "digest": "sha256:" + "1" * 64},
        {"id": "bob/opsd", "version": "1", "digest": "sha256:" + "2" * 64},
    ]
    parsed = parse(mutate(minimal_spec(), "spec.plugins", plugins))
    assert [(p.field, p.code) for p in parsed.problems] == [("spec.plugins", "plugin_leaf_collision")]


def test_plugin_digest_is_strict() -> None:
    plugins = [{"id": "alice/x", "version": "1", "digest": "sha256:ABC"}]
    parsed = parse(mutate(minimal_spec(), "spec.plugins", plugins))
    assert [(p.field, p.code) for p in parsed.problems] == [("spec.plugins[0].digest", "invalid_digest")]


def test_versioned_ref_parts() -> None:
    ref, problems = parse_versioned_ref("alice/handbook@v1", "f")
    assert problems == [] and ref is not None and (ref.owner, ref.name, ref.version) == ("alice", "handbook", "v1")


def test_non_string_owner_is_a_warning_only() -> None:
    parsed = parse(mutate(minimal_spec(), "metadata.owner", {"x": 1}))
    assert parsed.ok
    assert [w.code for w in parsed.warnings] == ["owner_ignored"]
