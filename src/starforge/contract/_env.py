"""`spec_to_env`: the single mapping from an admitted JobSpec plus the platform binding to the job environment."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from ._grammar import is_cluster_path, is_model_ref
from ._model import DataSplit, JobSpec

__all__ = ["INGEST_ENDPOINT_VARIABLE", "INGEST_TOKEN_VARIABLE", "RECIPE_IDENTITY", "Binding", "BindingError", "spec_to_env"]

# the job's run token: a secret, never written into a rendered script or manifest (engines pass it another way)
INGEST_TOKEN_VARIABLE = "STARFORGE_TOKEN"
INGEST_ENDPOINT_VARIABLE = "STARFORGE_ENDPOINT"  # the ingest base URL (an `http+unix://` one: see wire.channel_endpoint)

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Inline secrets may not impersonate platform identity, ingest credentials or the recipe identity.
_RESERVED_PREFIXES = ("FORGE_", "STARFORGE_", "NRL_", "RUN_USER", "CLUSTER_PROFILE", "NEMO_RL_DIR")
# Section 8, the recipe identity: each variable and the `spec.spec` attribute it is written from, in writing order.
# `forge-launch` re-checks exactly these against the JobSpec and the launch plan (`starforge.wire`).
RECIPE_IDENTITY: tuple[tuple[str, str], ...] = (
    ("FORGE_RECIPE", "recipe.name"),
    ("FORGE_FRAMEWORK", "framework.kind"),
    ("FORGE_FRAMEWORK_VERSION", "framework.version"),
    ("FORGE_RUNTIME_ID", "framework.runtime_id"),
    ("FORGE_RECIPE_VERSION", "recipe.version"),
    ("FORGE_RECIPE_DIGEST", "recipe.digest"),
)


class BindingError(ValueError):
    """Raised when the console's binding cannot run this spec (a deployment configuration error)."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(f"{field}: {message}")


@dataclass(frozen=True, slots=True)
class Binding:
    """What the platform adds to a spec at launch: run identity, topology, storage, secrets and credentials."""

    run_id: str
    profile: str
    nemo_rl_dir: str = ""
    pin_resource: str = ""
    num_nodes: int | None = None
    gpus_per_node: int | None = None
    profile_overrides: tuple[str, ...] = ()
    pin_resources: Mapping[str, str] = field(default_factory=dict)
    primary_pool: str = ""
    profile_env: Mapping[str, str] = field(default_factory=dict)
    storage_root: str = ""
    shared_caches: bool = False
    docs_dir: str = ""
    model_dir: str = ""  # the job's read-only view of a base model's folder (a cluster path or a registered model)
    train_data_dir: str = ""  # the job's read-only view of the training dataset's folder
    val_data_dir: str = ""  # the job's read-only view of the validation dataset's folder
    passthrough: Mapping[str, str] = field(default_factory=dict)
    secrets_file: str = ""
    inline_secrets: Mapping[str, str] = field(default_factory=dict)
    hf_token: str = ""
    ingest_endpoint: str = ""
    ingest_token: str = ""
    judge_endpoint: str = ""
    judge_token: str = ""
    sandbox_endpoint: str = ""
    sandbox_token: str = ""
    sandbox_fusion_url: str = ""
    sandbox_fusion_concurrency: str = ""
    train_run_id: str = ""


def spec_to_env(spec: JobSpec, binding: Binding) -> dict[str, str]:
    """Return the job environment for an admitted, owner-stamped spec; empty values are removed at the end."""
    s = spec.spec
    if s.framework.kind == "nemo-rl" and not binding.nemo_rl_dir:
        raise BindingError("binding.nemo_rl_dir", "a nemo-rl job needs the deployment's NeMo-RL checkout")
    owner = spec.metadata.owner
    prov = spec.provenance
    env: dict[str, str] = {}
    # 1 identity
    env["NEMO_RL_DIR"] = binding.nemo_rl_dir
    env["CLUSTER_PROFILE"] = binding.profile
    env["RUN_USER"] = owner
    env["NRL_SUBMIT_USER"] = owner
    env["NRL_RUN_ID"] = binding.run_id
    env["NRL_GIT_COMMIT"] = prov.git_commit or "unknown"
    env["NRL_GIT_DIRTY"] = "1" if prov.git_dirty else "0"
    env["NRL_CONFIG_SHA"] = prov.config_sha or "none"
    # 2 scheduling
    env["NRL_PIN_RESOURCE"] = binding.pin_resource
    if binding.num_nodes is not None:
        env["FORGE_CLUSTER_NUM_NODES"] = str(binding.num_nodes)
    if binding.gpus_per_node is not None:
        env["FORGE_CLUSTER_GPUS_PER_NODE"] = str(binding.gpus_per_node)
    if binding.profile_overrides:
        env["FORGE_PROFILE_OVERRIDES"] = _json(list(binding.profile_overrides))
    if len(s.resources.pools) > 1:
        env["FORGE_POOL_TOPOLOGY"] = _json(_pool_topology(spec, binding))
    # 3 profile env: only where not already set
    for key, value in binding.profile_env.items():
        env.setdefault(key, value)
    # 4 storage
    if binding.storage_root:
        root = binding.storage_root.rstrip("/")
        exp_name = s.source.exp.rstrip("/").rsplit("/", 1)[-1]
        run_dir = f"{root}/runs/{owner}/{exp_name}/{binding.run_id}"
        env["FORGE_STORAGE_ROOT"] = root
        env["FORGE_RUN_DIR"] = run_dir
        env["FORGE_OUT_DIR"] = f"{run_dir}/out"
        if s.data.output_dataset:
            env["FORGE_DATASET_OUT_DIR"] = f"{run_dir}/out/dataset"
        if binding.shared_caches:
            env["FORGE_DATA_CACHE"] = f"{root}/cache/datasets"
            env["HF_HOME"] = f"{root}/cache/hf"
    if s.data.corpus:
        env["DOCS_DIR"] = binding.docs_dir
    if s.model.base:
        # a hub id travels as it is; a cluster path or a registered model only as the job's view of its folder
        folder = is_cluster_path(s.model.base) or is_model_ref(s.model.base)
        env["FORGE_MODEL"] = binding.model_dir if folder else s.model.base
    env["FORGE_TRAIN_DATA"] = _data_path(s.data.train, binding.train_data_dir)
    env["FORGE_VAL_DATA"] = _data_path(s.data.validation, binding.val_data_dir)
    # 5 passthrough: overrides earlier values, identity included
    for key, value in binding.passthrough.items():
        if value:
            env[key] = value
    # 6 secrets
    if binding.secrets_file:
        env["CLUSTER_SECRETS_FILE"] = binding.secrets_file
    else:
        for key, value in binding.inline_secrets.items():
            if _ENV_NAME.fullmatch(key) and not key.startswith(_RESERVED_PREFIXES):
                env[key] = value
    if binding.hf_token:
        env["HF_TOKEN"] = binding.hf_token
        env["HUGGING_FACE_HUB_TOKEN"] = binding.hf_token
    # 7 ingest
    env["STARFORGE_ENABLED"] = "1" if binding.ingest_endpoint and binding.ingest_token else "0"
    if binding.ingest_endpoint and binding.ingest_token:
        env[INGEST_ENDPOINT_VARIABLE] = binding.ingest_endpoint
        env["STARFORGE_RUN_ID"] = binding.run_id
        env[INGEST_TOKEN_VARIABLE] = binding.ingest_token
    if binding.judge_endpoint:
        env["STARFORGE_JUDGE_ENDPOINT"] = binding.judge_endpoint
        env["STARFORGE_JUDGE_TOKEN"] = binding.judge_token
    if binding.sandbox_endpoint:
        env["STARFORGE_SANDBOX_ENDPOINT"] = binding.sandbox_endpoint
        env["STARFORGE_SANDBOX_TOKEN"] = binding.sandbox_token
    if binding.sandbox_fusion_url:
        env["STARFORGE_SANDBOX_FUSION_URL"] = binding.sandbox_fusion_url
        env["STARFORGE_SANDBOX_FUSION_CONCURRENCY"] = binding.sandbox_fusion_concurrency
    env["NRL_TRAIN_RUN_ID"] = binding.train_run_id
    # 8 recipe identity: last, cannot be overridden
    for variable, attribute in RECIPE_IDENTITY:
        env[variable] = attrgetter(attribute)(s)
    env["FORGE_CORE_VERSION"] = prov.core_version
    env["FORGE_RECIPE_PLUGINS"] = ",".join(s.recipe.plugins)
    return {key: value for key, value in env.items() if value != ""}


def _data_path(split: DataSplit | None, folder: str) -> str:
    """Return the job's path of a split: the dataset's folder, joined with the split's `path` when it names one."""
    if split is None or not split.dataset or not folder:
        return ""
    return f"{folder.rstrip('/')}/{split.path}" if split.path else folder


def _pool_topology(spec: JobSpec, binding: Binding) -> list[dict[str, Any]]:
    resources = spec.spec.resources
    pools = list(resources.pools)
    primary = binding.primary_pool or pools[0].name
    pools.sort(key=lambda p: p.name != primary)
    return [
        {
            "name": p.name,
            "series": p.series,
            "nodes": p.nodes,
            "gpus_per_node": p.gpus_per_node,
            "pin_resource": binding.pin_resources.get(p.series or p.name, ""),
            "roles": [role for role, pool in resources.roles.items() if pool == p.name],
        }
        for p in pools
    ]


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
