"""Host paths in a spec: a cluster-path base model must lie under `model_roots`; data paths need a dataset.

A job in the sandbox sees no host path it is not given, so a path the console would not mount is refused here,
at its field, rather than failing inside the job.
"""

from __future__ import annotations

from .....contract import Problem, is_cluster_path
from ...jobs.model_paths import resolve_model_folder
from ..context import AdmissionContext

__all__ = ["check_cluster_paths"]


def check_cluster_paths(ctx: AdmissionContext) -> list[Problem]:
    """Refuse a cluster-path base model outside `model_roots`, and a training or validation path without a dataset."""
    problems: list[Problem] = []
    base = ctx.spec.spec.model.base
    if base and is_cluster_path(base):
        roots = ctx.settings.model_roots
        found = resolve_model_folder(base, roots, ctx.settings.state_dir)
        if not found.ok:
            hint = (f"use a hub model id (e.g. Qwen/Qwen3-8B) or a folder under {', '.join(roots)}" if roots else
                    "use a hub model id (e.g. Qwen/Qwen3-8B); to serve models from folders of the console machine, "
                    "its operator lists them as model_roots in the console configuration")
            problems.append(Problem("spec.model.base", "model_path_forbidden", found.refusal, hint,
                                    {"got": base, "allowed": list(roots)}))
    data = ctx.spec.spec.data
    for field, split in (("spec.data.train", data.train), ("spec.data.validation", data.validation)):
        if split is not None and split.path and not split.dataset:
            flag = "--train-dataset" if field.endswith("train") else "--val-dataset"
            problems.append(Problem(
                f"{field}.path", "data_path_unregistered",
                f"{split.path[:200]!r} names no dataset: jobs read registered datasets, never a host path",
                f"push the data with `sf dataset push PATH NAME@VERSION`, then pass {flag} OWNER/NAME@VERSION[:FILE]",
                {"got": split.path},
            ))
    return problems
