"""Golden tests for `spec_to_env`: key order, emptiness, precedence and the recipe identity last."""

from __future__ import annotations

import json

import pytest

from starforge.contract import Binding, BindingError, parse_or_raise, spec_to_env
from tests.specs import minimal_spec, mutate, rich_spec

BINDING = Binding(
    run_id="r-0000000001",
    profile="h200",
    nemo_rl_dir="/opt/nemo-rl",
    pin_resource="accel_h200",
    num_nodes=1,
    gpus_per_node=8,
    storage_root="/srv/forge/",
    ingest_endpoint="http://127.0.0.1:8080/api/ingest",
    ingest_token="tok",
)


def test_minimal_golden() -> None:
    spec = parse_or_raise(minimal_spec()).with_owner("alice")
    env = spec_to_env(spec, BINDING)
    assert env == {
        "NEMO_RL_DIR": "/opt/nemo-rl",
        "CLUSTER_PROFILE": "h200",
        "RUN_USER": "alice",
        "NRL_SUBMIT_USER": "alice",
        "NRL_RUN_ID": "r-0000000001",
        "NRL_GIT_COMMIT": "3f2a9c1",
        "NRL_GIT_DIRTY": "0",
        "NRL_CONFIG_SHA": "0123456789ab",
        "NRL_PIN_RESOURCE": "accel_h200",
        "FORGE_CLUSTER_NUM_NODES": "1",
        "FORGE_CLUSTER_GPUS_PER_NODE": "8",
        "FORGE_STORAGE_ROOT": "/srv/forge",
        "FORGE_RUN_DIR": "/srv/forge/runs/alice/my-grpo/r-0000000001",
        "FORGE_OUT_DIR": "/srv/forge/runs/alice/my-grpo/r-0000000001/out",
        "STARFORGE_ENABLED": "1",
        "STARFORGE_ENDPOINT": "http://127.0.0.1:8080/api/ingest",
        "STARFORGE_RUN_ID": "r-0000000001",
        "STARFORGE_TOKEN": "tok",
        "FORGE_RECIPE": "nemo-rl/grpo",
        "FORGE_FRAMEWORK": "nemo-rl",
        "FORGE_FRAMEWORK_VERSION": "0.7.0",
        "FORGE_RUNTIME_ID": "nemo-rl-0.7.0",
        "FORGE_RECIPE_VERSION": "0.7.0",
        "FORGE_RECIPE_DIGEST": "sha256:c0b900db15a7a0649710d510164220b638b6947aa40c5c7212f9a4bf7d54805a",
        "FORGE_CORE_VERSION": "0.3.56",
    }
    assert list(env)[-1] == "FORGE_CORE_VERSION"


def test_rich_golden_parts() -> None:
    spec = parse_or_raise(rich_spec()).with_owner("alice")
    binding = Binding(
        run_id="r-1", profile="h200", nemo_rl_dir="/opt/nemo-rl", storage_root="/srv", shared_caches=True,
        docs_dir="/mnt/corpora/alice/handbook/v1", pin_resources={"h200": "accel_h200", "h100": "accel_h100"},
        primary_pool="actor", profile_env={"NCCL_DEBUG": "WARN", "RUN_USER": "mallory"},
        passthrough={"HTTP_PROXY": "http://proxy:3128", "EMPTY": ""},
        inline_secrets={"WANDB_API_KEY": "k", "FORGE_RECIPE": "evil", "bad-name": "x"}, hf_token="hf",
    )
    env = spec_to_env(spec, binding)
    assert env["NRL_GIT_DIRTY"] == "1"
    assert json.loads(env["FORGE_POOL_TOPOLOGY"]) == [
        {"name": "actor", "series": "h200", "nodes": 1, "gpus_per_node": 8, "pin_resource": "accel_h200",
         "roles": ["actor", "rollout"]},
        {"name": "teacher", "series": "h100", "nodes": 2, "gpus_per_node": 8, "pin_resource": "accel_h100",
         "roles": ["teacher"]},
    ]
    assert env["RUN_USER"] == "alice"  # profile env never overrides what is set
    assert env["NCCL_DEBUG"] == "WARN"
    assert env["FORGE_DATASET_OUT_DIR"] == "/srv/runs/alice/my-grpo/r-1/out/dataset"
    assert env["FORGE_DATA_CACHE"] == "/srv/cache/datasets" and env["HF_HOME"] == "/srv/cache/hf"
    assert env["DOCS_DIR"] == "/mnt/corpora/alice/handbook/v1"
    assert env["HTTP_PROXY"] == "http://proxy:3128" and "EMPTY" not in env
    assert env["WANDB_API_KEY"] == "k" and "bad-name" not in env
    assert env["FORGE_RECIPE"] == "nemo-rl/grpo"  # the recipe identity cannot be overridden
    assert env["HF_TOKEN"] == env["HUGGING_FACE_HUB_TOKEN"] == "hf"
    assert env["FORGE_RECIPE_PLUGINS"] == "maxrl"
    assert env["STARFORGE_ENABLED"] == "0"


def test_passthrough_overrides_identity_but_not_recipe() -> None:
    spec = parse_or_raise(minimal_spec()).with_owner("alice")
    binding = Binding(run_id="r-1", profile="h200", nemo_rl_dir="/n",
                      passthrough={"CLUSTER_PROFILE": "forced", "FORGE_RECIPE_DIGEST": "x"})
    env = spec_to_env(spec, binding)
    assert env["CLUSTER_PROFILE"] == "forced"
    assert env["FORGE_RECIPE_DIGEST"].startswith("sha256:c0b9")


def test_docs_dir_only_with_a_corpus() -> None:
    spec = parse_or_raise(minimal_spec()).with_owner("a")
    assert "DOCS_DIR" not in spec_to_env(spec, Binding(run_id="r", profile="p", nemo_rl_dir="/n", docs_dir="/d"))
    spec = parse_or_raise(mutate(minimal_spec(), "spec.data.corpus", "alice/h@v1")).with_owner("a")
    assert spec_to_env(spec, Binding(run_id="r", profile="p", nemo_rl_dir="/n", docs_dir="/d"))["DOCS_DIR"] == "/d"


def test_nemo_rl_needs_the_binding_checkout() -> None:
    spec = parse_or_raise(minimal_spec()).with_owner("a")
    with pytest.raises(BindingError) as err:
        spec_to_env(spec, Binding(run_id="r", profile="p"))
    assert err.value.field == "binding.nemo_rl_dir"
