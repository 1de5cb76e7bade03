"""The launch plan: every malformed field reported at once, argv rendering, and the recipe identity check."""

from __future__ import annotations

import json
import math
from pathlib import Path

from starforge.contract import CODES
from starforge.runner import (
    LaunchPlan,
    build_argv,
    check_identity,
    parse_plan,
    read_plan,
    render_value,
)

from .conftest import IDENTITY, SPEC, launch_plan

# Codes requested from the contract owners; remove from here once they are in `CODES`.
PENDING_CODES: set[str] = set()


def _ok(doc: dict[str, object]) -> LaunchPlan:
    plan, problems = parse_plan(doc)
    assert problems == [] and plan is not None
    return plan


def test_a_valid_plan_is_read(tmp_path: Path) -> None:
    path = tmp_path / "launch.json"
    path.write_text(json.dumps(launch_plan()))
    plan, problems = read_plan(path)

    assert problems == [] and plan is not None
    assert plan.run_id == "r-0123456789"
    assert plan.recipe.name == "nemo-rl/grpo" and plan.framework.runtime_id == "nemo-rl-0.7.0"
    assert plan.config.overrides[0].path == "grpo.max_num_steps" and plan.config.overrides[0].value == 40
    assert plan.env == {"PLAN_VAR": "from-plan"}
    assert plan.artifacts.groups()[0] == ("checkpoint", ("checkpoints/step_*",))
    assert plan.artifacts.formats["checkpoint"] == "npz"


def test_optional_sections_may_be_absent() -> None:
    doc = launch_plan()
    for key in ("entrypoint", "config", "env", "artifacts"):
        del doc[key]
    plan = _ok(doc)
    assert plan.config.overrides == () and plan.env == {} and plan.artifacts.groups()[0] == ("checkpoint", ())


def test_every_malformed_field_is_reported_at_once() -> None:
    doc = launch_plan(
        apiVersion="forge/launch/v9",
        run_id="r 1",
        recipe={"name": "grpo", "version": 7, "digest": "sha256:x"},
        framework={"kind": "nemo-rl"},
        argv=["{python}", 3],
        config={
            "mode": "dot-overrides",
            "overrides": [{"path": "a", "value": [1]}, {"value": math.inf}, "x"],
        },
        env={"OK": "1", "BAD-NAME": "x", "NUM": 1},
        artifacts={"checkpoints": ["/abs/*"], "logs": "logs", "exports": ["../up"], "formats": {"log": 1}},
    )
    plan, problems = parse_plan(doc)

    assert plan is None
    assert [(p.field, p.code) for p in problems] == [
        ("launch.apiVersion", "unsupported_api_version"),
        ("launch.run_id", "not_a_safe_segment"),
        ("launch.recipe.name", "invalid_recipe_id"),
        ("launch.recipe.version", "not_a_string"),
        ("launch.recipe.digest", "invalid_digest"),
        ("launch.framework.version", "missing_field"),
        ("launch.argv.1", "not_a_string"),
        ("launch.config.overrides.0.value", "hyperparameter_type"),
        ("launch.config.overrides.1.path", "missing_field"),
        ("launch.config.overrides.1.value", "not_finite"),
        ("launch.config.overrides.2", "not_an_object"),
        ("launch.env.BAD-NAME", "invalid_env_name"),
        ("launch.env.NUM", "not_a_string"),
        ("launch.artifacts.checkpoints.0", "path_not_relative"),
        ("launch.artifacts.logs", "not_a_list"),
        ("launch.artifacts.exports.0", "path_not_relative"),
        ("launch.artifacts.formats.log", "not_a_string"),
    ]


def test_required_sections_and_document_shape() -> None:
    assert [(p.field, p.code) for p in parse_plan([])[1]] == [("launch", "not_an_object")]
    problems = parse_plan({})[1]
    assert [p.field for p in problems] == [
        "launch.apiVersion",
        "launch.run_id",
        "launch.recipe",
        "launch.framework",
        "launch.argv",
    ]
    assert {p.code for p in problems} == {"missing_field"}
    assert [p.field for p in parse_plan(launch_plan(argv=[]))[1]] == ["launch.argv"]


def test_config_modes() -> None:
    overrides = [{"path": "a", "value": 1}]
    _ok(launch_plan(config={"mode": "hydra-overrides", "overrides": overrides}))
    _ok(launch_plan(config={"mode": "trl-yaml", "overrides": []}))  # nothing to apply: fine
    for config in (
        {"mode": "yaml-please"},
        {"mode": "trl-yaml", "overrides": overrides},
        {"overrides": overrides},
    ):
        assert [(p.field, p.code) for p in parse_plan(launch_plan(config=config))[1]] == [
            ("launch.config.mode", "unsupported_config_mode")
        ]


def test_missing_or_broken_files_are_problems(tmp_path: Path) -> None:
    assert [p.code for p in read_plan(tmp_path / "absent.json")[1]] == ["missing_field"]
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert [p.code for p in read_plan(broken)[1]] == ["invalid_json"]


def test_every_code_is_registered_or_requested() -> None:
    docs: list[object] = [
        [],
        {},
        launch_plan(
            apiVersion="x",
            run_id="a b",
            recipe={"name": "x", "version": "1", "digest": "d"},
            framework={"kind": "a b", "version": 1, "runtime_id": "c d"},
            argv="x",
            entrypoint=[],
            config={"mode": 1, "overrides": {}},
            env=[],
            artifacts=[],
        ),
        launch_plan(config={"mode": "nope"}, env={"1X": "a", "Y": "a\x00"}),
    ]
    codes = {p.code for doc in docs for p in parse_plan(doc)[1]}
    assert codes - set(CODES) <= PENDING_CODES


def test_argv_replaces_python_and_renders_overrides() -> None:
    plan = _ok(launch_plan())
    assert build_argv(plan, "/usr/bin/python3") == [
        "/usr/bin/python3",
        "job.py",
        "--config",
        "experiments/my-grpo/config.yaml",
        "grpo.max_num_steps=40",
        "grpo.val_at_start=true",
        "policy.lr=1e-06",
        "policy.name=tiny model",
    ]
    flags = _ok(launch_plan(config={"mode": "cli-args", "overrides": [{"path": "flag", "value": False}]}))
    assert build_argv(flags, "py")[-2:] == ["--flag", "false"]
    assert [render_value(v) for v in (True, False, 3, 0.5, 2e-05, "a b")] == [
        "true",
        "false",
        "3",
        "0.5",
        "2e-05",
        "a b",
    ]


def test_identity_agrees() -> None:
    assert check_identity(IDENTITY, SPEC, _ok(launch_plan())) == []


def test_identity_names_each_differing_variable_with_both_values() -> None:
    env = IDENTITY | {"FORGE_RECIPE_VERSION": "0.6.0"}
    plan = _ok(launch_plan(recipe=launch_plan()["recipe"] | {"version": "0.8.0"}))
    mismatches = check_identity(env, SPEC, plan)

    assert [str(m) for m in mismatches] == [
        "FORGE_RECIPE_VERSION: the environment has '0.6.0' but the JobSpec has '0.7.0'",
        "FORGE_RECIPE_VERSION: the JobSpec has '0.7.0' but the launch plan has '0.8.0'",
    ]


def test_an_empty_runtime_id_may_be_unset() -> None:
    spec_doc = SPEC.to_dict()
    spec_doc["spec"]["framework"].pop("runtime_id")
    from starforge.contract import parse_or_raise

    spec = parse_or_raise(spec_doc)
    framework = launch_plan()["framework"] | {"runtime_id": ""}
    env = {k: v for k, v in IDENTITY.items() if k != "FORGE_RUNTIME_ID"}
    assert check_identity(env, spec, _ok(launch_plan(framework=framework))) == []
