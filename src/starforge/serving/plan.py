"""Which server a service runs and how: `transformers serve` on a CPU series, `vllm serve` on a GPU one.

`render_plan` is a pure function of the job's facts (the server, the model, the GPUs, the port), so the GPU plan is
tested without a GPU; `plan_from_env` reads those facts from the job's environment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["ServerPlan", "plan_from_env", "render_plan", "server_of"]

_SERVERS = {"serving/transformers": "transformers", "serving/vllm": "vllm"}


@dataclass(frozen=True)
class ServerPlan:
    """The server's command, its extra environment, the model id clients name, and where it answers."""

    server: str
    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    model_id: str = ""
    port: int = 0
    health_path: str = "/health"


def server_of(recipe: str) -> str:
    """Return the server of a serving recipe id (`serving/vllm` → vllm); ValueError for another recipe."""
    try:
        return _SERVERS[recipe]
    except KeyError:
        raise ValueError(f"{recipe!r} is not a serving recipe (known: {', '.join(sorted(_SERVERS))})") from None


def render_plan(server: str, *, model: str, port: int, gpus: int, bin_dir: str, local: bool) -> ServerPlan:
    """Return the plan of `server` serving `model` (a folder when `local`, else a hub id) on 127.0.0.1:`port`."""
    offline = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"} if local else {}
    argv: tuple[str, ...]
    if server == "transformers":
        argv = (str(Path(bin_dir) / "transformers"), "serve", model, "--host", "127.0.0.1", "--port", str(port),
                "--device", "cuda" if gpus else "cpu", "--log-level", "info")
        return ServerPlan(server, argv, offline, model, port, "/health")
    if server == "vllm":
        argv = (str(Path(bin_dir) / "vllm"), "serve", model, "--host", "127.0.0.1", "--port", str(port),
                "--served-model-name", model, "--tensor-parallel-size", str(max(1, gpus)),
                "--disable-log-requests")
        return ServerPlan(server, argv, offline, model, port, "/health")
    raise ValueError(f"unknown server {server!r} (transformers or vllm)")


def plan_from_env(env: Mapping[str, str], *, port: int, bin_dir: str) -> ServerPlan:
    """Return the plan of this job: its recipe (`FORGE_RECIPE`), its model (`FORGE_INIT_FROM`, a run's folder, else
    `FORGE_MODEL`, a folder or a hub id) and its GPUs per node; ValueError naming what is missing."""
    server = server_of(env.get("FORGE_RECIPE", ""))
    model = env.get("FORGE_INIT_FROM", "") or env.get("FORGE_MODEL", "")
    if not model:
        raise ValueError("the job names no model (FORGE_INIT_FROM or FORGE_MODEL)")
    gpus = int(env.get("FORGE_CLUSTER_GPUS_PER_NODE", "0") or 0) if server == "vllm" else 0
    local = model.startswith("/")
    if local and not os.path.isdir(model):
        raise ValueError(f"the model folder {model} is not there")
    return render_plan(server, model=model, port=port, gpus=gpus, bin_dir=bin_dir, local=local)
