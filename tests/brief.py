"""The product brief's example JobSpec, with its placeholders filled from a catalog."""

from __future__ import annotations

import copy
from typing import Any

from starforge import __version__

BRIEF: dict[str, Any] = {
    "apiVersion": "forge/v2",
    "kind": "TrainingJob",
    "metadata": {"name": "run-id-segment", "project": "my-lab", "owner": "", "labels": {}},
    "spec": {
        "recipe": {"name": "nemo-rl/grpo", "version": "…", "digest": "sha256:…"},
        "source": {"exp": "experiments/my-grpo"},
        "framework": {"kind": "nemo-rl", "version": "0.7.0", "runtime_id": "…", "image": "", "observability_url": ""},
        "resources": {"pools": [{"name": "train", "series": "h200", "nodes": 1, "gpus_per_node": 8}],
                      "roles": {"trainer": "train"}},
        "model": {"base": "", "init_from": "run/<id>/checkpoint"},
        "data": {"train": {"dataset": "alice/gsm8k-zh@v2", "path": "train.parquet"}, "corpus": "alice/handbook@v1"},
        "hyperparams": {"policy.optimizer.kwargs.lr": 1e-6},
        "lifecycle": {"on_success": ["export"]},
        "plugins": [{"id": "alice/opsd-patch", "version": "1.2.0", "digest": "sha256:…"}],
    },
    "provenance": {"git_commit": "…", "git_dirty": False, "config_sha": "…", "core_version": "0.3.2"},
}


def filled(entry: dict[str, Any], *, run_id: str = "r-0000000001", plugin_digest: str = "sha256:" + "a" * 64,
           core_version: str = __version__) -> dict[str, Any]:
    """Return the brief's example with real values: recipe version, digest and runtime id from a catalog entry,
    a run id, a plugin digest, a commit and config hash, and this client's core version."""
    doc = copy.deepcopy(BRIEF)
    doc["spec"]["recipe"].update(version=entry["version"], digest=entry["digest"])
    doc["spec"]["framework"]["runtime_id"] = entry["runtime"]["versions"]["0.7.0"]["runtime_id"]
    doc["spec"]["model"]["init_from"] = f"run/{run_id}/checkpoint"
    doc["spec"]["plugins"][0]["digest"] = plugin_digest
    doc["provenance"].update(git_commit="3f2a9c1", config_sha="0123456789ab", core_version=core_version)
    return doc
