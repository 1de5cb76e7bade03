"""Recipe settings that need a GPU: the one rule refusing them for a job with a series that has none.

A recipe marks a bool parameter `needs_gpu: true` when a `true` value cannot run without GPUs (TRL's `bf16`, which
transformers refuses on a CPU, or `use_vllm`). The console's admission applies the rule with the series it knows to
have no GPUs (`runtimes.cpu_series`); the lab applies the same function before upload with the series the console's
profile registry marks `kind: cpu`, and `sf validate` names the settings. The choice is to refuse, never to adapt:
the job would run with a setting other than the one its config says.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from starforge.contract import Problem

if TYPE_CHECKING:
    from ._recipe import Recipe

__all__ = ["gpu_problems", "gpu_settings"]


def gpu_settings(values: Mapping[str, Any], recipe: Recipe) -> list[str]:
    """Return the names of the `needs_gpu` parameters that `values` (validated hyperparameters) turn on."""
    return [name for name, param in recipe.params.items() if param.needs_gpu and values.get(name) is True]


def gpu_problems(values: Mapping[str, Any], recipe: Recipe, cpu_series: Sequence[str],
                 framework_version: str = "") -> list[Problem]:
    """Return one `needs_gpu` problem per setting of `gpu_settings` when the job has series without GPUs."""
    series = list(dict.fromkeys(cpu_series))
    if not series:
        return []
    where = ", ".join(repr(s) for s in series)
    problems = []
    for name in gpu_settings(values, recipe):
        param = recipe.params[name]
        path = param.path_for(framework_version or recipe.default_version) or name
        default = " (true is its default when the experiment's config leaves it out)" if param.default is True else ""
        problems.append(Problem(
            f"spec.hyperparams.{name}", "needs_gpu",
            f"{name}: true needs a GPU, and series {where} {'has' if len(series) == 1 else 'have'} none{default}",
            f"on a CPU series pass --set {name}=false (or write `{path}: false` in the experiment's config.yaml); "
            "or choose a profile whose series has GPUs",
            {"recipe": recipe.id, "name": name, "got": True, "expected": False}))
    return problems
