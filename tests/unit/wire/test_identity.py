"""The recipe identity is derived from `spec_to_env`: the variables it writes last, read from a spec or a plan."""

from __future__ import annotations

from starforge.contract import Binding, parse_or_raise, spec_to_env
from starforge.wire import (
    IDENTITY_VARIABLES,
    RECIPE_IDENTITY,
    LaunchPlan,
    PlanFramework,
    PlanRecipe,
    plan_identity,
    spec_identity,
)
from tests.specs import minimal_spec

from .test_plan import PLAN

SPEC = parse_or_raise(minimal_spec()).with_owner("alice")


def test_the_variables_are_the_ones_spec_to_env_writes_last_in_its_order() -> None:
    env = spec_to_env(SPEC, Binding(run_id="r-1", profile="p", nemo_rl_dir="/n"))
    written = [key for key in env if key in IDENTITY_VARIABLES]
    assert written == list(IDENTITY_VARIABLES)
    assert list(env)[-len(IDENTITY_VARIABLES) - 1 : -1] == list(IDENTITY_VARIABLES)  # then FORGE_CORE_VERSION
    assert tuple(variable for variable, _attribute in RECIPE_IDENTITY) == IDENTITY_VARIABLES
    assert set(IDENTITY_VARIABLES) == {
        "FORGE_RECIPE", "FORGE_RECIPE_VERSION", "FORGE_RECIPE_DIGEST",
        "FORGE_FRAMEWORK", "FORGE_FRAMEWORK_VERSION", "FORGE_RUNTIME_ID",
    }


def test_spec_identity_equals_what_spec_to_env_writes() -> None:
    env = spec_to_env(SPEC, Binding(run_id="r-1", profile="p", nemo_rl_dir="/n"))
    assert spec_identity(SPEC) == {name: env[name] for name in IDENTITY_VARIABLES}
    assert spec_identity(SPEC)["FORGE_RECIPE"] == "nemo-rl/grpo"


def test_an_empty_runtime_id_is_kept_empty_while_spec_to_env_drops_it() -> None:
    doc = minimal_spec()
    doc["spec"]["framework"].pop("runtime_id")
    spec = parse_or_raise(doc).with_owner("alice")
    assert spec_identity(spec)["FORGE_RUNTIME_ID"] == ""
    assert "FORGE_RUNTIME_ID" not in spec_to_env(spec, Binding(run_id="r-1", profile="p", nemo_rl_dir="/n"))


def test_plan_identity_reads_the_same_attributes_from_the_plan() -> None:
    assert plan_identity(PLAN) == spec_identity(SPEC)
    other = LaunchPlan(
        PLAN.run_id, PlanRecipe("a/b", "1", "sha256:" + "0" * 64), PlanFramework("k", "2", "rt"), PLAN.argv
    )
    assert plan_identity(other) == {
        "FORGE_RECIPE": "a/b",
        "FORGE_FRAMEWORK": "k",
        "FORGE_FRAMEWORK_VERSION": "2",
        "FORGE_RUNTIME_ID": "rt",
        "FORGE_RECIPE_VERSION": "1",
        "FORGE_RECIPE_DIGEST": "sha256:" + "0" * 64,
    }
