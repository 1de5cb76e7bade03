"""The Transformers callback that reports a trainer's logs as metrics and registers its checkpoints and model.

Ownership: for a job whose trainer runs with this callback, the callback registers every `checkpoint-<N>` (kind
`checkpoint`, with its step) when the trainer saves it, and the final model (kind `model`) when it is saved; the
recipe then lists no checkpoint globs, so `forge-launch`'s scan after exit never registers them a second time.
Only the world's process zero reports. `transformers` is imported when the callback is first built, never before.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starforge.runner import report
from starforge.wire import KIND_CHECKPOINT, KIND_MODEL

__all__ = ["MODEL_DIR", "ReportingState", "metric_points", "model_dir", "starforge_callback"]

MODEL_DIR = "model"  # the final model's folder inside FORGE_OUT_DIR
# a trainer's log key -> its StarForge metric name (the names the trl recipes declare as primary)
_RENAMED = {
    "loss": "train/loss",
    "learning_rate": "train/learning_rate",
    "grad_norm": "train/grad_norm",
    "eval_loss": "eval/loss",
}
# summary keys a trainer logs once at the end (`train_runtime`, …): not training curves
_SUMMARY = re.compile(r"(?:train|eval)_(?:runtime|samples_per_second|steps_per_second)|total_flos|train_loss")
_CHECKPOINT = re.compile(r"checkpoint-([0-9]+)")


def metric_points(logs: Mapping[str, Any]) -> dict[str, float]:
    """Return a trainer's `logs` as StarForge metrics: loss, learning rate, grad norm, eval loss, then the rest.

    `loss` → `train/loss`, `eval_loss` → `eval/loss`, any other `eval_<x>` → `eval/<x>`, an unprefixed key `k` →
    `train/k`; a key that already has a `/` prefix keeps it (`rewards/chosen` → `train/rewards/chosen`). Values that
    are not finite numbers, booleans, the epoch counter and the end-of-training summary are left out.
    """
    out: dict[str, float] = {}
    for key, raw in logs.items():
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or key == "epoch" or _SUMMARY.fullmatch(key):
            continue
        value = float(raw)
        if not math.isfinite(value):
            continue
        if key in _RENAMED:
            name = _RENAMED[key]
        elif key.startswith("eval_"):
            name = f"eval/{key[5:]}"
        elif key.startswith(("train/", "eval/")):
            name = key
        else:
            name = f"train/{key}"
        out[name] = value
    return out


def model_dir(environ: Mapping[str, str] | None = None) -> Path | None:
    """Return `<FORGE_OUT_DIR>/model`, where a job's final model is saved, or None outside a StarForge job."""
    env = os.environ if environ is None else environ
    out = env.get("FORGE_OUT_DIR", "")
    return Path(out) / MODEL_DIR if out else None


@dataclass
class ReportingState:
    """What the callback does, free of transformers: log metrics, register checkpoints once and the model once."""

    run: Any = None  # a `starforge.runner.report.Run`; the process's default run when None
    registered: set[str] = field(default_factory=set)

    def _run(self) -> Any:
        return self.run if self.run is not None else report.current()

    def on_log(self, logs: Mapping[str, Any] | None, step: int, *, main: bool = True) -> None:
        """Report one trainer log at `step` (only from the main process)."""
        if not main or not logs:
            return
        points = metric_points(logs)
        if points:
            self._run().log(points, step=step)

    def on_save(self, output_dir: str, step: int, *, main: bool = True) -> None:
        """Register the checkpoint the trainer just wrote (`<output_dir>/checkpoint-<step>`), once."""
        if not main:
            return
        folder = Path(output_dir) / f"checkpoint-{step}"
        if folder.is_dir():
            self.register(KIND_CHECKPOINT, folder, step=step, format="safetensors")

    def register(self, kind: str, folder: Path, *, step: int | None = None, format: str = "") -> None:
        """Register `folder` as an artifact of `kind` unless this process already did."""
        key = f"{kind}:{os.path.abspath(folder)}"
        if key in self.registered:
            return
        self.registered.add(key)
        if step is None and kind == KIND_CHECKPOINT:
            match = _CHECKPOINT.fullmatch(folder.name)
            step = int(match.group(1)) if match else None
        self._run().artifact(kind, folder, step=step, format=format)

    def on_model_saved(self, folder: str | os.PathLike[str], step: int, *, main: bool = True) -> None:
        """Register the final model saved in `folder` (kind `model`, at the last step), then send what waits."""
        if not main:
            return
        self.register(KIND_MODEL, Path(folder), step=step, format="huggingface")
        self._run().flush()

    def on_train_end(self, *, main: bool = True) -> None:
        """Send everything buffered, so the metrics reach the console before the script goes on."""
        if main:
            self._run().flush()


_CLASS: Any = None


def starforge_callback(state: ReportingState | None = None) -> Any:
    """Return a new `transformers.TrainerCallback` reporting through `state` (importing transformers now)."""
    global _CLASS
    if _CLASS is None:
        _CLASS = _build_class()
    return _CLASS(state or ReportingState())


def _build_class() -> Any:
    from transformers import TrainerCallback  # type: ignore[import-not-found,unused-ignore]

    class StarForgeCallback(TrainerCallback):  # type: ignore[misc,unused-ignore]
        """Report a Trainer's logs as StarForge metrics and register its checkpoints (see the module docstring)."""

        def __init__(self, reporting: ReportingState) -> None:
            self.reporting = reporting

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
            self.reporting.on_log(logs, state.global_step, main=state.is_world_process_zero)

        def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.reporting.on_save(args.output_dir, state.global_step, main=state.is_world_process_zero)

        def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.reporting.on_train_end(main=state.is_world_process_zero)

    return StarForgeCallback
