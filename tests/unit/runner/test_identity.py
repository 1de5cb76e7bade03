"""The recipe identity re-check: environment vs JobSpec, then JobSpec vs launch plan, variable by variable."""

from __future__ import annotations

from starforge.contract import parse_or_raise
from starforge.runner import check_identity, parse_plan
from starforge.wire import LaunchPlan

from .conftest import IDENTITY, SPEC, launch_plan


def _ok(doc: dict[str, object]) -> LaunchPlan:
    plan, problems = parse_plan(doc)
    assert problems == [] and plan is not None
    return plan


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


def test_every_identity_variable_is_checked_and_unset_is_shown() -> None:
    env = {k: v for k, v in IDENTITY.items() if k != "FORGE_RECIPE"} | {"FORGE_RUNTIME_ID": "other"}
    framework = launch_plan()["framework"] | {"kind": "trl"}
    mismatches = check_identity(env, SPEC, _ok(launch_plan(framework=framework)))

    assert [str(m) for m in mismatches] == [
        "FORGE_RECIPE: the environment has (unset) but the JobSpec has 'nemo-rl/grpo'",
        "FORGE_FRAMEWORK: the JobSpec has 'nemo-rl' but the launch plan has 'trl'",
        "FORGE_RUNTIME_ID: the environment has 'other' but the JobSpec has 'nemo-rl-0.7.0'",
    ]


def test_an_empty_runtime_id_may_be_unset() -> None:
    spec_doc = SPEC.to_dict()
    spec_doc["spec"]["framework"].pop("runtime_id")
    spec = parse_or_raise(spec_doc)
    framework = launch_plan()["framework"] | {"runtime_id": ""}
    env = {k: v for k, v in IDENTITY.items() if k != "FORGE_RUNTIME_ID"}
    assert check_identity(env, spec, _ok(launch_plan(framework=framework))) == []
