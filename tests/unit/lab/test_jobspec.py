"""`build_jobspec` on real temporary labs (git, the built-in catalog, recipe trees); no console."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from starforge import __version__
from starforge.contract import CODES, dumps
from starforge.lab import (
    SubmitOptions,
    build_jobspec,
    client_catalog,
    create_experiment,
    init_lab,
)
from starforge.recipes import Catalog, check_document
from tests.unit.lab.conftest import REGISTRY, commit, git
from tests.unit.recipes.trees import manifest, tree


@pytest.fixture
def lab(tmp_path: Path, builtin: Catalog) -> Path:
    """A committed lab `unit-lab` with `toy` (tinyrl/grpo) and `big` (nemo-rl/grpo)."""
    root = init_lab(tmp_path / "lab", name="unit-lab")
    for name, method in (("toy", "tinyrl/grpo"), ("big", "nemo-rl/grpo")):
        assert create_experiment(root, name, builtin, method=method).path is not None
    commit(root, "experiments")
    return root


def build(lab: Path, catalog: Catalog, exp: str = "toy", *profiles: str, **options: object):  # type: ignore[no-untyped-def]
    opts = SubmitOptions(profiles=profiles or ("cpu:1",), **options)  # type: ignore[arg-type]
    return build_jobspec(lab, exp, opts, profiles=REGISTRY, catalog=catalog)


def known_codes(problems: list) -> bool:  # type: ignore[type-arg]
    return all(p.code in CODES for p in problems)


def test_the_canonical_spec_of_a_clean_experiment(lab: Path, builtin: Catalog) -> None:
    built = build(lab, builtin, "toy", "cpu:1", sets=("max_num_steps=20",))
    assert built.ok, built.problems
    recipe = builtin.get("tinyrl/grpo")
    assert recipe is not None
    commit_id = git(lab, "rev-parse", "--short", "HEAD")
    assert built.spec == {
        "apiVersion": "forge/v2",
        "kind": "TrainingJob",
        "metadata": {"name": "toy", "project": "unit-lab"},
        "spec": {
            "recipe": {"name": "tinyrl/grpo", "version": recipe.version, "digest": recipe.digest()},
            "source": {"exp": "experiments/toy"},
            "framework": {"kind": "tinyrl", "version": "1.0.0", "runtime_id": "tinyrl-1.0.0"},
            "resources": {"pools": [{"name": "all", "nodes": 1, "gpus_per_node": 1, "series": "cpu"}],
                          "roles": {"trainer": "all"}},
            "hyperparams": {"max_num_steps": 20},
        },
        "provenance": {"core_version": __version__, "git_commit": commit_id,
                       "config_sha": built.provenance.config_sha},
    }
    assert built.profile == "cpu" and built.exp == "experiments/toy" and not built.warnings
    assert built.job is not None and json.loads(dumps(built.job)) == built.spec
    again = check_document(built.spec, builtin)  # the local verdict is the console's static verdict
    assert again.ok and again.spec is not None and again.spec.to_dict() == built.spec


def test_defaults_are_sent_and_set_values_are_typed_in_declaration_order(lab: Path, builtin: Catalog) -> None:
    built = build(lab, builtin, "toy", sets=("seed=1_000", "optimizer=sgd", "learning_rate=1e-1",
                                             "max_num_steps=007", "seed=5"))
    assert built.ok, built.problems
    assert built.spec is not None
    assert list(built.spec["spec"]["hyperparams"].items()) == [
        ("max_num_steps", 7), ("learning_rate", 0.1), ("optimizer", "sgd"), ("seed", 5)]
    plain = build(lab, builtin, "toy")
    assert plain.spec is not None and plain.spec["spec"]["hyperparams"] == {"max_num_steps": 60}


def test_an_unknown_set_key_is_refused_with_a_did_you_mean(lab: Path, builtin: Catalog) -> None:
    built = build(lab, builtin, "big", "h200:8", sets=("learnin_rate=1e-6",))
    assert built.spec is None and built.job is None
    [problem] = built.problems
    assert (problem.field, problem.code) == ("spec.hyperparams", "unknown_hyperparameter")
    assert "did you mean learning_rate" in problem.message and "learning_rate" in problem.hint
    unchecked = build(lab, builtin, "big", "h200:8", sets=("learnin_rate=1e-6",), validate=False)
    assert unchecked.ok and unchecked.spec is not None
    assert unchecked.spec["spec"]["hyperparams"] == {"learnin_rate": 1e-6}


@pytest.mark.parametrize(("expression", "shape"), [("h200", (1, 8)), ("h200:4", (1, 4)), ("h200:16", (2, 8))])
def test_profile_expressions(lab: Path, builtin: Catalog, expression: str, shape: tuple[int, int]) -> None:
    built = build(lab, builtin, "big", expression)
    assert built.ok, built.problems
    assert built.spec is not None and built.profile == "h200"
    resources = built.spec["spec"]["resources"]
    assert resources["pools"] == [{"name": "all", "nodes": shape[0], "gpus_per_node": shape[1], "series": "h200"}]
    assert resources["roles"] == dict.fromkeys(["actor", "reference", "rollout", "trainer"], "all")


def test_an_impossible_gpu_count_is_refused_with_the_other_problems(lab: Path, builtin: Catalog) -> None:
    built = build(lab, builtin, "big", "h200:12", sets=("learnin_rate=1",), then=("bogus",))
    assert built.spec is None and built.profile == "h200"
    fields = [(p.field, p.code) for p in built.problems]
    assert fields == [("profile", "invalid_profile"), ("spec.hyperparams", "unknown_hyperparameter"),
                      ("spec.lifecycle.on_success", "lifecycle_action_unknown")]
    assert "h200:8 or h200:16" in built.problems[0].hint
    assert all(p.hint for p in built.problems) and known_codes(built.problems)


def test_role_prefixed_profiles_make_several_pools(tmp_path: Path) -> None:
    roles = ["actor", "rollout", "teacher"]
    catalog = client_catalog(tree(tmp_path / "tree", manifest(name="distill", roles=roles)))
    root = init_lab(tmp_path / "lab", name="unit-lab")
    assert create_experiment(root, "distill", catalog, method="testfw/distill").path is not None
    commit(root)
    built = build_jobspec(root, "distill", SubmitOptions(profiles=("actor,rollout=h200:8", "teacher=h100:16")),
                          profiles=REGISTRY, catalog=catalog)
    assert built.ok, built.problems
    assert built.spec is not None and built.profile == "h200"
    assert built.spec["spec"]["resources"] == {
        "pools": [{"name": "actor", "nodes": 1, "gpus_per_node": 8, "series": "h200"},
                  {"name": "teacher", "nodes": 2, "gpus_per_node": 8, "series": "h100"}],
        "roles": {"actor": "actor", "rollout": "actor", "teacher": "teacher"},
    }
    assert built.job is not None and built.job.total_gpus == 24
    unmapped = build_jobspec(root, "distill", SubmitOptions(profiles=("actor=h200:8", "teacher=h100:8")),
                             profiles=REGISTRY, catalog=catalog)
    assert [(p.field, p.code) for p in unmapped.problems] == [("spec.resources.roles.rollout", "role_unmapped")]


def test_a_dirty_tree_is_refused_unless_allowed(lab: Path, builtin: Catalog) -> None:
    with (lab / "experiments" / "toy" / "config.yaml").open("a") as handle:
        handle.write("# tweak\n")
    refused = build(lab, builtin, "toy")
    [problem] = refused.problems
    assert (problem.field, problem.code) == ("provenance.git_dirty", "git_dirty")
    assert "--allow-dirty" in problem.hint and "commit" in problem.hint
    allowed = build(lab, builtin, "toy", allow_dirty=True)
    assert allowed.ok and allowed.spec is not None
    assert allowed.spec["provenance"]["git_dirty"] is True
    assert [w.code for w in allowed.warnings] == ["git_dirty_allowed"]


def test_a_lab_without_git_is_refused(tmp_path: Path, builtin: Catalog) -> None:
    root = init_lab(tmp_path / "nogit", name="plain", git=False)
    assert create_experiment(root, "toy", builtin, method="tinyrl/grpo").path is not None
    built = build(root, builtin, "toy")
    assert [(p.field, p.code) for p in built.problems] == [("provenance.git_commit", "git_unavailable")]


def _edit_lock(exp_dir: Path, section: str, key: str, value: str) -> None:
    file = exp_dir / "recipe.lock.json"
    data = json.loads(file.read_text())
    data[section][key] = value
    file.write_text(json.dumps(data))


def test_the_lock_gate(lab: Path, builtin: Catalog) -> None:
    toy = lab / "experiments" / "toy"
    _edit_lock(toy, "recipe", "version", "0.9.0")  # an older bundle: admitted with an advisory
    commit(lab, "drift")
    drifted = build(lab, builtin, "toy")
    assert drifted.ok, drifted.problems
    assert [(w.field, w.code) for w in drifted.warnings] == [("recipe.lock.json", "lock_drifted")]
    assert drifted.spec is not None and drifted.spec["spec"]["recipe"]["version"] == "1.0.0"  # from the catalog
    _edit_lock(toy, "framework", "runtime_id", "tinyrl-0.1")  # an identity change: refused
    commit(lab, "break")
    refused = build(lab, builtin, "toy")
    assert [(p.field, p.code) for p in refused.problems] == [("recipe.lock.json", "lock_incompatible")]
    assert "sf recipe upgrade toy" in refused.problems[0].hint
    (toy / "recipe.lock.json").unlink()
    commit(lab, "lost")
    lost = build(lab, builtin, "toy", sets=("x=nan",))
    assert [(p.field, p.code) for p in lost.problems] == [("recipe.lock.json", "lock_unreadable"),
                                                          ("--set", "not_finite")]
    assert known_codes(lost.problems)


def test_framework_version_must_match_the_lock(lab: Path, builtin: Catalog) -> None:
    built = build(lab, builtin, "toy", framework_version="2.0.0")
    assert [(p.field, p.code) for p in built.problems] == [("--framework-version", "framework_version_unsupported")]
    assert "sf recipe upgrade toy --framework-version 2.0.0" in built.problems[0].hint
    assert build(lab, builtin, "toy", framework_version="1.0.0").ok


def test_optional_fields_are_filled(lab: Path, builtin: Catalog) -> None:
    exp = lab / "experiments" / "big"
    (exp / "plugins.lock.json").write_text(json.dumps({"apiVersion": "forge/plugins-lock/v1", "plugins": [
        {"id": "alice/opsd-patch", "version": "1.2.0", "digest": "sha256:" + "a" * 64}]}))
    with (exp / "config.yaml").open("a") as handle:
        handle.write("eval:\n  suites: [gsm8k]\n")
    commit(lab, "plugins")
    built = build(lab, builtin, "big", "h200:8", image="nvcr.io/nvidia/nemo-rl:v0.7.0",
                  init_from="run/r-0123456789/checkpoint@step=40", corpus="alice/handbook@v1",
                  train_dataset="alice/gsm8k-zh@v2", plugins=("alice/opsd-patch@1.2.0",), then=("export", "eval"))
    assert built.ok, built.problems
    assert built.spec is not None
    spec = built.spec["spec"]
    assert spec["framework"]["image"] == "nvcr.io/nvidia/nemo-rl:v0.7.0"
    assert spec["model"] == {"init_from": "run/r-0123456789/checkpoint@step=40"}
    assert spec["data"] == {"train": {"dataset": "alice/gsm8k-zh@v2"}, "corpus": "alice/handbook@v1"}
    assert spec["lifecycle"] == {"on_success": ["export", "eval"]}
    assert spec["evaluation"] == {"suites": ["gsm8k"]}
    assert spec["plugins"] == [{"id": "alice/opsd-patch", "version": "1.2.0", "digest": "sha256:" + "a" * 64}]
    wrong = build(lab, builtin, "big", "h200:8", plugins=("alice/opsd-patch@2.0.0", "bob/other@1"))
    assert [(p.field, p.code) for p in wrong.problems] == [("--plugin", "plugin_unknown"),
                                                           ("--plugin", "plugin_unknown")]


def test_platform_observability_refuses_a_url(lab: Path, builtin: Catalog) -> None:
    built = build(lab, builtin, "toy", observability_url="https://wandb.example.com/x", image="a b")
    assert [(p.field, p.code) for p in built.problems] == [
        ("spec.framework.observability_url", "observability_url_forbidden"),
        ("spec.framework.image.reference", "invalid_image_reference")]


def test_an_unknown_experiment_and_a_bad_project(lab: Path, builtin: Catalog) -> None:
    missing = build(lab, builtin, "nope")
    assert [(p.field, p.code) for p in missing.problems] == [("exp", "experiment_unknown")]
    assert missing.provenance is None and missing.exp == ""
    (lab / "starforge.yaml").write_text("apiVersion: forge/project/v1\nname: bad name\n")
    commit(lab, "rename")
    bad = build(lab, builtin, "toy")
    assert [(p.field, p.code) for p in bad.problems] == [("metadata.project", "invalid_project")]


def test_experiments_are_named_several_ways(lab: Path, builtin: Catalog) -> None:
    for name in ("toy", "experiments/toy", "experiments/toy/", str(lab / "experiments" / "toy")):
        built = build(lab, builtin, name)
        assert built.ok and built.exp == "experiments/toy", name


def test_the_spec_never_depends_on_the_working_directory(lab: Path, builtin: Catalog,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    first = build(lab, builtin, "toy")
    monkeypatch.chdir(lab / "experiments" / "big")
    assert build(lab, builtin, "toy").spec == first.spec


def test_model_base_fills_spec_model_and_satisfies_r5(lab: Path, builtin: Catalog) -> None:
    assert create_experiment(lab, "vg", builtin, method="verl/grpo").path is not None
    commit(lab, "verl experiment")
    missing = build(lab, builtin, "vg", "h200:8")
    assert "spec.model.base" in [p.field for p in missing.problems]
    built = build(lab, builtin, "vg", "h200:8", model="Qwen/Qwen3-0.6B")
    fields = [p.field for p in built.problems]
    assert "spec.model.base" not in fields and fields[0] == "spec.data.train.path"  # R5's next requirement
    with_data = build(lab, builtin, "vg", "h200:8", model="Qwen/Qwen3-0.6B", train_dataset="alice/gsm8k@v1")
    assert "spec.model.base" not in [p.field for p in with_data.problems]
