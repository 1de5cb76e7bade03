"""The Transformers callback that reports a trainer's logs as metrics, registers its checkpoints and model, and
checkpoints then stops the training when the console asks.

Ownership: for a job whose trainer runs with this callback, the callback registers every `checkpoint-<N>` (kind
`checkpoint`, with its step) when the trainer saves it, and the final model (kind `model`) when it is saved; the
recipe then lists no checkpoint globs, so `forge-launch`'s scan after exit never registers them a second time.
Only the world's process zero reports. `transformers` is imported when the callback is first built, never before.

Interruption: when the console asks the job to checkpoint and stop (SIGUSR1 or `$FORGE_PREEMPT_FILE`, read through
`starforge.runner.preempt`), the step that just ended is saved as `checkpoint-<N>` and training stops there; the
script's final `save_model` then writes nothing (the run is not finished). A later attempt resumes from
`$FORGE_RESUME_FROM` (see `_install`). In a distributed run the ranks agree at every step (one all-reduce of a
flag), so that they all save the same step and stop together.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starforge.runner import preempt, report
from starforge.wire import KIND_CHECKPOINT, KIND_MODEL

__all__ = ["MODEL_DIR", "ReportingState", "checkpoint_step", "metric_points", "model_dir", "starforge_callback"]

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


def checkpoint_step(folder: str | os.PathLike[str]) -> int | None:
    """Return the step a Transformers checkpoint folder was saved at (its `trainer_state.json`), or None."""
    try:
        state = json.loads((Path(folder) / "trainer_state.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    step = state.get("global_step") if isinstance(state, dict) else None
    return step if isinstance(step, int) and not isinstance(step, bool) else None


def _say(line: str) -> None:
    print(line, flush=True)


@dataclass
class ReportingState:
    """What the callback does, free of transformers: log metrics, register checkpoints once and the model once,
    stop at a step boundary when the console asks, and name the checkpoint a later attempt resumes from."""

    run: Any = None  # a `starforge.runner.report.Run`; the process's default run when None
    registered: set[str] = field(default_factory=set)
    watch: preempt.PreemptWatch = field(default_factory=preempt.default)
    environ: Mapping[str, str] | None = None  # where FORGE_RESUME_* are read; the process's environment when None
    say: Callable[[str], None] = _say
    interrupted_at: int | None = None  # the step saved and stopped at because the console asked
    resume_taken: bool = False  # FORGE_RESUME_FROM serves the process's first `train()` call only

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

    def on_step_end(self, step: int, *, main: bool = True, agree: Callable[[bool], bool] | None = None) -> bool:
        """Return True when the trainer must save `step` as a checkpoint and stop, because the console asked.

        `agree` (in a distributed run) turns this process's answer into every rank's: True when any rank was asked;
        it is called at every step, asked or not, since every rank must join it.
        """
        asked = self.watch.requested()
        if agree is not None:
            asked = agree(asked)
        if not asked:
            return False
        if self.interrupted_at is None:
            self.interrupted_at = step
            if main:
                self.say(f"[starforge] checkpoint at step {step}, stopping: the console asked")
        return True

    def skips_final_save(self, *, main: bool = True) -> bool:
        """Return True (saying why) when the script's final `save_model` must write nothing: the run was stopped."""
        if self.interrupted_at is None:
            return False
        if main:
            self.say(f"[starforge] the run stopped at step {self.interrupted_at} to checkpoint; "
                     "the final model is not saved (a later attempt resumes from that checkpoint)")
        return True

    def resume_from(self, *, main: bool = True) -> str | None:
        """Return the checkpoint folder the process's first `train()` resumes from (`$FORGE_RESUME_FROM`), or None."""
        if self.resume_taken:
            return None
        self.resume_taken = True
        point = preempt.resume_point(self.environ)
        if point is None:
            return None
        if not os.path.isdir(point.path):
            if main:
                self.say(f"[starforge] warning: FORGE_RESUME_FROM={point.path} is not a folder; "
                         "training starts from the beginning")
            return None
        if main:
            step = point.step if point.step is not None else checkpoint_step(point.path)
            name = f"checkpoint-{step}" if step is not None else point.path
            attempt = f" (attempt {point.attempt})" if point.attempt is not None else ""
            self.say(f"[starforge] resuming from {name}{attempt}")
        return point.path

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

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
            if self.reporting.on_step_end(state.global_step, main=state.is_world_process_zero, agree=_agreement(args)):
                control.should_save = True
                control.should_training_stop = True
            return control

        def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.reporting.on_save(args.output_dir, state.global_step, main=state.is_world_process_zero)

        def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.reporting.on_train_end(main=state.is_world_process_zero)

    return StarForgeCallback


def _agreement(args: Any) -> Callable[[bool], bool] | None:
    """Return how the ranks of a distributed run agree on a stop (an all-reduce MAX of a flag), or None alone."""
    dist = sys.modules.get("torch.distributed")  # never imported: no process group can exist
    if dist is None or not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() < 2:
        return None
    import torch  # type: ignore[import-not-found,unused-ignore]

    def agree(asked: bool) -> bool:
        flag = torch.tensor([1 if asked else 0], device=args.device)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        return bool(flag.item())

    return agree
