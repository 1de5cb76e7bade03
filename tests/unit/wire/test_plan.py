"""The launch plan on the wire: the typed plan round-trips through `to_dict`/`parse_plan`, and every refusal is
reported at once, at its field path."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from starforge.contract import CODES
from starforge.wire import (
    PLAN_VERSION,
    ArtifactGlobs,
    ConfigPlan,
    Entrypoint,
    LaunchPlan,
    Override,
    PlanFramework,
    PlanRecipe,
    parse_plan,
    read_plan,
)

DIGEST = "sha256:" + "c0b900db15a7a0649710d510164220b638b6947aa40c5c7212f9a4bf7d54805a"

PLAN = LaunchPlan(
    run_id="r-0123456789",
    recipe=PlanRecipe("nemo-rl/grpo", "0.7.0", DIGEST),
    framework=PlanFramework("nemo-rl", "0.7.0", "nemo-rl-0.7.0"),
    argv=("{python}", "job.py", "--config", "experiments/my-grpo/config.yaml"),
    action="",
    entrypoint=Entrypoint("experiment", "job.py"),
    config=ConfigPlan(
        "dot-overrides",
        "experiments/my-grpo/config.yaml",
        (
            Override("grpo.max_num_steps", 40),
            Override("grpo.val_at_start", True),
            Override("policy.lr", 1e-06),
            Override("policy.name", "tiny model"),
        ),
    ),
    env={"FORGE_INIT_FROM": "/forge/inputs/init_from"},
    artifacts=ArtifactGlobs(
        checkpoints=("checkpoints/step_*",),
        logs=("logs",),
        exports=("hf_export",),
        evaluations=("eval/report.json",),
        formats={"checkpoint": "npz", "log": "text", "hf_export": "huggingface", "eval_report": "json"},
        version="forge/artifacts/v1",
    ),
)


def doc(**changes: Any) -> dict[str, Any]:
    """Return the document of PLAN with top-level keys replaced by `changes`."""
    return PLAN.to_dict() | changes


def problems_of(document: Any) -> list[tuple[str, str]]:
    plan, problems = parse_plan(document)
    assert plan is None
    return [(p.field, p.code) for p in problems]


def test_the_version_is_forge_launch_v1() -> None:
    assert PLAN_VERSION == "forge/launch/v1"


def test_to_dict_writes_the_documented_shape_in_its_key_order() -> None:
    document = PLAN.to_dict()
    assert list(document) == [
        "apiVersion", "run_id", "action", "recipe", "framework", "entrypoint", "argv", "config", "env", "artifacts",
    ]
    assert document["apiVersion"] == "forge/launch/v1"
    assert document["recipe"] == {"name": "nemo-rl/grpo", "version": "0.7.0", "digest": DIGEST}
    assert document["framework"] == {"kind": "nemo-rl", "version": "0.7.0", "runtime_id": "nemo-rl-0.7.0"}
    assert document["config"]["overrides"][1] == {"path": "grpo.val_at_start", "value": True}
    assert list(document["artifacts"]) == ["version", "checkpoints", "logs", "exports", "evaluations", "formats"]
    assert "version" not in ArtifactGlobs().to_dict()  # carried only when the recipe gives one


def test_round_trip_through_json_gives_the_same_plan() -> None:
    plan, problems = parse_plan(json.loads(json.dumps(PLAN.to_dict())))
    assert problems == [] and plan == PLAN
    assert plan.to_dict() == PLAN.to_dict()


def test_round_trip_of_a_lifecycle_action_and_of_the_defaults() -> None:
    minimal = LaunchPlan("r-1", PLAN.recipe, PlanFramework("tinyrl", "1.0.0"), ("{python}", "-m", "m"), action="export")
    plan, problems = parse_plan(minimal.to_dict())
    assert problems == [] and plan == minimal


def test_read_plan_reads_the_file_the_console_writes(tmp_path: Path) -> None:
    path = tmp_path / "launch.json"
    path.write_text(json.dumps(PLAN.to_dict(), indent=2) + "\n", encoding="utf-8")
    assert read_plan(path) == (PLAN, [])


def test_optional_sections_may_be_absent() -> None:
    document = doc()
    for key in ("action", "entrypoint", "config", "env", "artifacts"):
        del document[key]
    plan, problems = parse_plan(document)
    assert problems == [] and plan is not None
    assert plan.action == "" and plan.config == ConfigPlan() and plan.env == {}
    assert plan.artifacts.groups()[0] == ("checkpoint", ())


def test_artifact_groups_are_registered_checkpoints_first_logs_last() -> None:
    assert [kind for kind, _globs in PLAN.artifacts.groups()] == ["checkpoint", "hf_export", "eval_report", "log"]
    assert PLAN.artifacts.groups()[0] == ("checkpoint", ("checkpoints/step_*",))


def test_every_malformed_field_is_reported_at_once_in_document_order() -> None:
    document = doc(
        apiVersion="forge/launch/v9",
        run_id="r 1",
        action=7,
        recipe={"name": "grpo", "version": 7, "digest": "sha256:x"},
        framework={"kind": "nemo-rl"},
        entrypoint={"kind": 1, "value": []},
        argv=["{python}", 3],
        config={
            "mode": "dot-overrides",
            "path": 2,
            "overrides": [{"path": "a", "value": [1]}, {"value": math.inf}, "x"],
        },
        env={"OK": "1", "BAD-NAME": "x", "NUM": 1, "NUL": "a\x00b"},
        artifacts={
            "version": 1,
            "checkpoints": ["/abs/*"],
            "logs": "logs",
            "exports": ["../up"],
            "evaluations": [""],
            "formats": {"log": 1},
        },
    )
    assert problems_of(document) == [
        ("launch.apiVersion", "unsupported_api_version"),
        ("launch.run_id", "not_a_safe_segment"),
        ("launch.action", "not_a_string"),
        ("launch.recipe.name", "invalid_recipe_id"),
        ("launch.recipe.version", "not_a_string"),
        ("launch.recipe.digest", "invalid_digest"),
        ("launch.framework.version", "missing_field"),
        ("launch.entrypoint.kind", "not_a_string"),
        ("launch.entrypoint.value", "not_a_string"),
        ("launch.argv.1", "not_a_string"),
        ("launch.config.path", "not_a_string"),
        ("launch.config.overrides.0.value", "hyperparameter_type"),
        ("launch.config.overrides.1.path", "missing_field"),
        ("launch.config.overrides.1.value", "not_finite"),
        ("launch.config.overrides.2", "not_an_object"),
        ("launch.env.BAD-NAME", "invalid_env_name"),
        ("launch.env.NUM", "not_a_string"),
        ("launch.env.NUL", "not_a_string"),
        ("launch.artifacts.version", "not_a_string"),
        ("launch.artifacts.checkpoints.0", "path_not_relative"),
        ("launch.artifacts.logs", "not_a_list"),
        ("launch.artifacts.exports.0", "path_not_relative"),
        ("launch.artifacts.evaluations.0", "path_not_relative"),
        ("launch.artifacts.formats.log", "not_a_string"),
    ]


def test_required_sections_and_document_shape() -> None:
    assert problems_of([]) == [("launch", "not_an_object")]
    assert problems_of(None) == [("launch", "missing_field")]
    assert problems_of({}) == [
        ("launch.apiVersion", "missing_field"),
        ("launch.run_id", "missing_field"),
        ("launch.recipe", "missing_field"),
        ("launch.framework", "missing_field"),
        ("launch.argv", "missing_field"),
    ]
    assert problems_of(doc(argv=[])) == [("launch.argv", "missing_field")]
    assert problems_of(doc(argv="x")) == [("launch.argv", "not_a_list")]
    assert problems_of(doc(run_id="")) == [("launch.run_id", "missing_field")]


@pytest.mark.parametrize(
    ("section", "value", "expected"),
    [
        ("recipe", [], [("launch.recipe", "not_an_object")]),
        ("recipe", {}, [("launch.recipe.name", "missing_field"), ("launch.recipe.version", "missing_field"),
                        ("launch.recipe.digest", "missing_field")]),
        ("framework", "x", [("launch.framework", "not_an_object")]),
        ("framework", {"kind": "a b", "version": "1", "runtime_id": "c d"},
         [("launch.framework.kind", "not_a_safe_segment"), ("launch.framework.runtime_id", "not_a_safe_segment")]),
        ("entrypoint", [], [("launch.entrypoint", "not_an_object")]),
        ("config", [], [("launch.config", "not_an_object")]),
        ("config", {"mode": 1}, [("launch.config.mode", "not_a_string")]),
        ("config", {"overrides": {}}, [("launch.config.overrides", "not_a_list")]),
        ("config", {"mode": "cli-args", "overrides": [{"path": "a"}]},
         [("launch.config.overrides.0.value", "missing_field")]),
        ("env", [], [("launch.env", "not_an_object")]),
        ("env", {"1X": "a"}, [("launch.env.1X", "invalid_env_name")]),
        ("artifacts", [], [("launch.artifacts", "not_an_object")]),
        ("artifacts", {"formats": []}, [("launch.artifacts.formats", "not_an_object")]),
        ("artifacts", {"logs": [1]}, [("launch.artifacts.logs.0", "not_a_string")]),
    ],
)
def test_each_refusal_at_its_field_path(section: str, value: Any, expected: list[tuple[str, str]]) -> None:
    assert problems_of(doc(**{section: value})) == expected


def test_config_modes() -> None:
    overrides = [{"path": "a", "value": 1}]
    for mode in ("dot-overrides", "hydra-overrides", "cli-flags", "cli-args", "trl-yaml", "pytorch-yaml"):
        assert parse_plan(doc(config={"mode": mode, "overrides": overrides}))[1] == []  # every mode carries them
    for config in (
        {"mode": "yaml-please"},
        {"overrides": overrides},  # overrides with no mode to apply them
        {"bindings": [{"input": "model", "path": "model_name_or_path"}]},
        {"document": {"a": 1}},
    ):
        assert problems_of(doc(config=config)) == [("launch.config.mode", "unsupported_config_mode")]
    _plan, problems = parse_plan(doc(config={"overrides": overrides}))
    assert problems[0].hint.startswith("name one of dot-overrides, hydra-overrides")


def test_config_document_and_bindings_round_trip_and_are_checked() -> None:
    config = {
        "mode": "trl-yaml", "path": "experiments/x/config.yaml", "overrides": [],
        "document": {"model_name_or_path": "m", "datasets": [{"path": "json", "split": "train"}], "n": None},
        "bindings": [{"input": "model", "path": "model_name_or_path"}, {"input": "train_data", "path": "dataset_name"}],
    }
    plan, problems = parse_plan(doc(config=config))
    assert problems == [] and plan is not None
    assert plan.config.to_dict() == config
    bad = config | {
        "document": {"x": [1, {"y": float("nan")}]},
        "bindings": [{"input": "weights", "path": "p"}, {"input": "model"}, "model"],
    }
    assert problems_of(doc(config=bad)) == [
        ("launch.config.document.x.1.y", "not_finite"),
        ("launch.config.bindings.0.input", "unknown_input"),
        ("launch.config.bindings.1.path", "missing_field"),
        ("launch.config.bindings.2", "not_an_object"),
    ]


def test_missing_or_broken_files_are_problems(tmp_path: Path) -> None:
    assert [(p.field, p.code) for p in read_plan(tmp_path / "absent.json")[1]] == [("launch", "missing_field")]
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert [p.code for p in read_plan(broken)[1]] == ["invalid_json"]
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe{")
    assert [p.code for p in read_plan(binary)[1]] == ["invalid_json"]
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000)
    assert [p.code for p in read_plan(deep)[1]] == ["invalid_json"]
    assert [p.code for p in read_plan(tmp_path)[1]] == ["invalid_json"]  # a directory


def test_every_code_is_registered() -> None:
    documents: list[Any] = [
        [],
        {},
        doc(
            apiVersion="x",
            run_id="a b",
            action=1,
            recipe={"name": "x", "version": "1", "digest": "d"},
            framework={"kind": "a b", "version": 1, "runtime_id": "c d"},
            argv="x",
            entrypoint=[],
            config={"mode": 1, "overrides": {}},
            env=[],
            artifacts=[],
        ),
        doc(config={"mode": "nope", "overrides": [{"value": math.nan}, {"path": "p", "value": {}}]},
            env={"1X": "a", "Y": "a\x00"}, artifacts={"logs": ["/x"], "formats": {"log": 1}}),
    ]
    codes = {p.code for document in documents for p in parse_plan(document)[1]}
    assert codes and codes <= set(CODES)
