"""Run lm-eval (EleutherAI's harness, imported here only) on the model for the chosen suites, one call per pack with
the pack's folder as lm-eval's `include_path` and working directory (its task YAMLs name their data relative to it).

`call_arguments` says, in one place, how the job's settings map onto `lm_eval.simple_evaluate`'s keywords."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from typing import Any

from ._config import EvalConfig
from ._suites import Chosen

__all__ = ["CPU_AUTO_BATCH", "Harness", "batch_size", "call_arguments", "device", "harness_version",
           "sandbox_templates"]

# `batch_size: auto` on the CPU: lm-eval's probe looks for the largest batch that fits a GPU's memory; on the CPU
# nothing runs out, so it would only spend the time of a probe per pass
CPU_AUTO_BATCH = 8


def device() -> str:
    """Return the device lm-eval runs the model on: the first GPU when there is one, else the CPU."""
    import torch  # type: ignore[import-not-found,unused-ignore]

    return "cuda:0" if torch.cuda.is_available() else "cpu"


def harness_version() -> str:
    """Return the installed lm-eval's version."""
    from importlib.metadata import version

    return version("lm-eval")


def batch_size(setting: str, on: str) -> int | str:
    """Return the batch size lm-eval gets for `setting` on device `on`: a number as given, `auto` (or `auto:N`) on a
    GPU as given, `auto` on the CPU as CPU_AUTO_BATCH."""
    if setting.isdigit():
        return int(setting)
    if setting.startswith("auto") and on == "cpu":
        return CPU_AUTO_BATCH
    return setting


def call_arguments(config: EvalConfig, seed: int) -> dict[str, Any]:
    """Return the `simple_evaluate` keywords (besides model and tasks) of one repetition with base seed `seed`."""
    args: dict[str, Any] = {
        "limit": config.limit or None, "num_fewshot": config.num_fewshot, "log_samples": False,
        "random_seed": seed, "numpy_random_seed": seed, "torch_random_seed": seed, "fewshot_random_seed": seed,
    }
    if config.max_new_tokens:
        args["gen_kwargs"] = {"max_gen_toks": config.max_new_tokens}
    return args


@contextlib.contextmanager
def _cwd(path: str) -> Iterator[None]:
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def sandbox_templates() -> None:
    """Render the packs' prompt templates in Jinja's immutable sandbox: a template of a pack someone else published
    reads its document's fields, and can reach no Python object beyond them (lm-eval's own environment could)."""
    import lm_eval.utils  # type: ignore[import-not-found,unused-ignore]
    from jinja2 import BaseLoader, StrictUndefined
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    sandboxed = ImmutableSandboxedEnvironment(loader=BaseLoader, undefined=StrictUndefined, keep_trailing_newline=True)
    sandboxed.filters.update(lm_eval.utils.env.filters)  # lm-eval's own filters (regex_replace), same names
    lm_eval.utils.env = sandboxed


class Harness:
    """One model loaded by lm-eval's Hugging Face backend, evaluated on suites pack by pack, its templates sandboxed."""

    def __init__(self, config: EvalConfig) -> None:
        from lm_eval.models.huggingface import HFLM  # type: ignore[import-not-found,unused-ignore]

        sandbox_templates()
        self.config = config
        self.device = device()
        self.batch_size = batch_size(config.batch_size, self.device)
        self.model = HFLM(pretrained=config.model, dtype=config.dtype, batch_size=self.batch_size, device=self.device)

    def evaluate(self, chosen: Sequence[Chosen], seed: int) -> dict[str, dict[str, Any]]:
        """Return lm-eval's `results` for the tasks of `chosen`, per pack folder (each pack in its own call: two packs
        may name a task alike)."""
        from lm_eval import simple_evaluate  # type: ignore[import-not-found,unused-ignore]
        from lm_eval.tasks import TaskManager  # type: ignore[import-not-found,unused-ignore]

        merged: dict[str, dict[str, Any]] = {}
        for path in dict.fromkeys(c.path for c in chosen):
            tasks = list(dict.fromkeys(c.task for c in chosen if c.path == path))
            with _cwd(path):
                manager = TaskManager(include_path=path, include_defaults=False)
                out = simple_evaluate(model=self.model, tasks=tasks, task_manager=manager,
                                      **call_arguments(self.config, seed))
            if out is None:  # only the non-zero ranks of a distributed run get None
                continue
            merged[path] = dict(out.get("results") or {})
        return merged
