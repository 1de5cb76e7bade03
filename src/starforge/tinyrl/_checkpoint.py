"""Checkpoint files: `checkpoints/step_<N>/` holding `model.npz` (the weights), `meta.json` (step, reward, shape) and,
to resume training exactly, `trainer_state.npz` (reference weights, optimizer moments) with the optimizer's counters
and the random generator's state under `meta.json`'s `trainer` key. A checkpoint without them (format v1) can still
start a run (`FORGE_INIT_FROM`), not resume one.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "FORMAT",
    "Checkpoint",
    "CheckpointError",
    "TrainerState",
    "load_checkpoint",
    "resolve_checkpoint",
    "save_checkpoint",
]

FORMAT = "tinyrl/checkpoint/v2"
_STATE_FILE = "trainer_state.npz"
_OPTIMIZER_PREFIX = "optimizer."
_STEP_DIR = re.compile(r"step[_-](\d+)")


class CheckpointError(Exception):
    """Raised when a directory does not hold a readable tinyrl checkpoint."""


@dataclass(frozen=True)
class TrainerState:
    """What training needs beyond the weights to go on exactly: the reference policy, optimizer and RNG states."""

    reference: np.ndarray
    rng: dict[str, Any]  # `numpy.random.Generator.bit_generator.state`
    optimizer: dict[str, Any]  # the optimizer's scalars (`name`, Adam's `t`)
    optimizer_arrays: dict[str, np.ndarray] = field(default_factory=dict)  # Adam's `m` and `v`


@dataclass(frozen=True)
class Checkpoint:
    """A loaded checkpoint: where it was read from, its weights, its metadata and (v2) the trainer's state."""

    directory: Path
    weights: np.ndarray
    meta: dict[str, Any]
    state: TrainerState | None = None

    @property
    def step(self) -> int:
        """Return the training step the checkpoint was saved at."""
        return int(self.meta.get("step", 0))

    @property
    def reward(self) -> float:
        """Return the mean reward of the step the checkpoint was saved at."""
        return float(self.meta.get("reward", 0.0))


def save_checkpoint(
    out_dir: Path, step: int, weights: np.ndarray, meta: dict[str, Any], state: TrainerState | None = None
) -> Path:
    """Write `out_dir/checkpoints/step_<step>/` (weights, metadata, trainer state) atomically and return its path."""
    root = out_dir / "checkpoints"
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step_{step}"
    staging = root / f".tmp-step_{step}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    np.savez(staging / "model.npz", weights=weights)
    document = {"format": FORMAT, "step": step, **meta}
    if state is not None:
        arrays: dict[str, Any] = {f"{_OPTIMIZER_PREFIX}{name}": a for name, a in state.optimizer_arrays.items()}
        np.savez(staging / _STATE_FILE, reference=state.reference, **arrays)
        document["trainer"] = {"rng": state.rng, "optimizer": state.optimizer}
    (staging / "meta.json").write_text(json.dumps(document, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    if final.exists():
        shutil.rmtree(final)
    staging.rename(final)
    return final


def resolve_checkpoint(path: Path) -> Path:
    """Return the checkpoint directory `path` names: itself, or the latest `step_<N>` below it or its `checkpoints/`."""
    if (path / "model.npz").is_file():
        return path
    for parent in (path, path / "checkpoints"):
        steps = _step_dirs(parent)
        if steps:
            return steps[-1]
    if not path.exists():
        raise CheckpointError(f"{path} does not exist")
    raise CheckpointError(f"{path} holds no model.npz and no step_<N> checkpoint directory")


def load_checkpoint(path: Path) -> Checkpoint:
    """Return the checkpoint at `path` (resolved with `resolve_checkpoint`); raise CheckpointError if unreadable."""
    directory = resolve_checkpoint(path)
    try:
        with np.load(directory / "model.npz") as data:
            weights = np.array(data["weights"], dtype=float)
    except (OSError, KeyError, ValueError) as exc:
        raise CheckpointError(f"{directory / 'model.npz'} is not a tinyrl weight file: {exc}") from exc
    if weights.ndim != 2:
        raise CheckpointError(f"{directory / 'model.npz'} holds weights of shape {weights.shape}, expected 2-D")
    meta: dict[str, Any] = {}
    meta_file = directory / "meta.json"
    if meta_file.is_file():
        try:
            loaded = json.loads(meta_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CheckpointError(f"{meta_file} is not readable JSON: {exc}") from exc
        if not isinstance(loaded, dict):
            raise CheckpointError(f"{meta_file} must hold a JSON object")
        meta = loaded
    return Checkpoint(directory, weights, meta, _load_state(directory, meta))


def _load_state(directory: Path, meta: dict[str, Any]) -> TrainerState | None:
    trainer = meta.get("trainer")
    if trainer is None:
        return None  # a v1 checkpoint: weights only
    state_file = directory / _STATE_FILE
    if not isinstance(trainer, dict) or not isinstance(trainer.get("rng"), dict) \
            or not isinstance(trainer.get("optimizer"), dict):
        raise CheckpointError(f"{directory / 'meta.json'}: `trainer` must hold the `rng` and `optimizer` states")
    try:
        with np.load(state_file) as data:
            reference = np.array(data["reference"], dtype=float)
            arrays = {
                name.removeprefix(_OPTIMIZER_PREFIX): np.array(data[name], dtype=float)
                for name in data.files
                if name.startswith(_OPTIMIZER_PREFIX)
            }
    except (OSError, KeyError, ValueError) as exc:
        raise CheckpointError(f"{state_file} is not a tinyrl trainer state: {exc}") from exc
    return TrainerState(reference, trainer["rng"], trainer["optimizer"], arrays)


def _step_dirs(parent: Path) -> list[Path]:
    if not parent.is_dir():
        return []
    found = []
    for child in parent.iterdir():
        match = _STEP_DIR.fullmatch(child.name)
        if match and (child / "model.npz").is_file():
            found.append((int(match.group(1)), child))
    return [child for _, child in sorted(found)]
