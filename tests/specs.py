"""Builders of realistic JobSpec documents for tests and benchmarks."""

from __future__ import annotations

import copy
from typing import Any

DIGEST = "sha256:" + "c0b900db15a7a0649710d510164220b638b6947aa40c5c7212f9a4bf7d54805a"


def minimal_spec() -> dict[str, Any]:
    """Return what `sf submit my-grpo --profile h200:8` builds for nemo-rl/grpo (official 0.3.56 catalog)."""
    return {
        "apiVersion": "forge/v2",
        "kind": "TrainingJob",
        "metadata": {"name": "my-grpo", "project": "my-lab"},
        "spec": {
            "recipe": {"name": "nemo-rl/grpo", "version": "0.7.0", "digest": DIGEST},
            "source": {"exp": "experiments/my-grpo"},
            "framework": {"kind": "nemo-rl", "version": "0.7.0", "runtime_id": "nemo-rl-0.7.0"},
            "resources": {
                "pools": [{"name": "all", "nodes": 1, "gpus_per_node": 8, "series": "h200"}],
                "roles": {"actor": "all", "reference": "all", "rollout": "all"},
            },
            "hyperparams": {"learning_rate": 1e-06, "max_num_steps": 500},
        },
        "provenance": {"core_version": "0.3.56", "git_commit": "3f2a9c1", "config_sha": "0123456789ab"},
    }


def rich_spec() -> dict[str, Any]:
    """Return a spec that uses nearly every field (the benchmark's realistic spec)."""
    doc = minimal_spec()
    doc["metadata"].update({"display_name": "GRPO on gsm8k-zh", "labels": {"team": "reasoning", "ticket": "RL-42"}})
    spec = doc["spec"]
    spec["recipe"]["plugins"] = ["maxrl"]
    spec["model"] = {"base": "Qwen/Qwen3-8B", "peft": {"kind": "lora", "dim": 16, "alpha": 32},
                     "init_from": "run/r-7f3k2m9q1x/checkpoint@step=200"}
    spec["data"] = {
        "train": {"dataset": "alice/gsm8k-zh@v2", "split": "train", "path": "train.parquet"},
        "validation": {"dataset": "alice/gsm8k-zh@v2", "split": "test", "path": "test.parquet"},
        "corpus": "alice/handbook@v1",
        "volumes": ["alice/docs", "team/tools"],
        "output_dataset": "alice/gsm8k-clean@v3",
        "environment": "alice/math-env@1.0",
        "quality": {"max_duplicate_ratio": 0.05, "overlap_with": "alice/gsm8k-test@v1", "max_overlap_ratio": 0.01},
    }
    spec["resources"] = {
        "pools": [
            {"name": "actor", "nodes": 1, "gpus_per_node": 8, "series": "h200"},
            {"name": "teacher", "nodes": 2, "gpus_per_node": 8, "series": "h100"},
        ],
        "roles": {"actor": "actor", "rollout": "actor", "teacher": "teacher"},
    }
    spec["hyperparams"] = {"learning_rate": 2e-06, "max_num_steps": 500, "precision": "bfloat16", "val_at_start": True}
    spec["lifecycle"] = {"on_success": ["export", "eval"]}
    spec["evaluation"] = {"suites": ["gsm8k", "math500"], "runner": "lm-eval", "limit": 500,
                          "gates": [{"metric": "gsm8k/exact_match", "min": 0.4, "max_regression": 0.02}]}
    spec["plugins"] = [
        {"id": "alice/opsd-patch", "version": "1.2.0", "digest": "sha256:" + "a" * 64},
        {"id": "bob/reward-fn", "version": "0.3.1", "digest": "sha256:" + "b" * 64},
    ]
    doc["provenance"]["git_dirty"] = True
    return doc


def mutate(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """Return a deep copy of `doc` with the dotted `path` set to `value` (`...` deletes the key)."""
    out = copy.deepcopy(doc)
    node: Any = out
    parts = path.split(".")
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    last = parts[-1]
    if value is ...:
        if isinstance(node, dict):
            node.pop(last, None)
    elif isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return out
