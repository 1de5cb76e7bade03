"""Export a checkpoint as a Hugging Face–style directory: `config.json`, `model.npz` and a README model card."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from starforge.tinyrl._checkpoint import Checkpoint
from starforge.tinyrl._policy import LinearSoftmaxPolicy
from starforge.tinyrl._task import AdditionTask

__all__ = ["MODEL_TYPE", "greedy_accuracy", "write_export"]

MODEL_TYPE = "tinyrl-linear-softmax"


def greedy_accuracy(weights: np.ndarray, task: AdditionTask) -> float:
    """Return the share of all the task's prompts whose most likely answer is right."""
    grid = np.array([(a, b) for a in range(task.n_operands) for b in range(task.n_operands)])
    chosen = LinearSoftmaxPolicy(weights).greedy(task.features(grid))
    return float((chosen == task.answers(grid)).mean())


def write_export(checkpoint: Checkpoint, out_dir: Path) -> list[Path]:
    """Write `out_dir/hf_export/` from `checkpoint`, replacing an older export, and return the files written."""
    task_meta = checkpoint.meta.get("task") or {}
    policy_meta = checkpoint.meta.get("policy") or {}
    task = AdditionTask(int(task_meta.get("max_operand", 9)))
    if checkpoint.weights.shape != (task.n_features, task.n_actions):
        raise ValueError(
            f"{checkpoint.directory}: weights of shape {checkpoint.weights.shape} do not fit the addition task "
            f"with max_operand={task.max_operand}"
        )
    accuracy = greedy_accuracy(checkpoint.weights, task)
    config: dict[str, Any] = {
        "architectures": ["LinearSoftmaxPolicy"],
        "model_type": MODEL_TYPE,
        "n_features": task.n_features,
        "n_actions": task.n_actions,
        "temperature": float(policy_meta.get("temperature", 1.0)),
        "task": {"name": "addition", "max_operand": task.max_operand},
        "source": {"checkpoint": str(checkpoint.directory), "step": checkpoint.step, "reward": checkpoint.reward},
        "eval": {"greedy_accuracy": accuracy},
    }
    target = out_dir / "hf_export"
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    files = [target / "config.json", target / "model.npz", target / "README.md"]
    files[0].write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    np.savez(files[1], weights=checkpoint.weights)
    files[2].write_text(_model_card(config), encoding="utf-8")
    return files


def _model_card(config: dict[str, Any]) -> str:
    top = 2 * config["task"]["max_operand"]
    source = config["source"]
    return f"""# tinyrl addition policy

A linear softmax policy trained with GRPO by `starforge.tinyrl` to answer "a+b=?" for operands
0..{config["task"]["max_operand"]}, choosing among the answers 0..{top}.

- Source checkpoint: step {source["step"]}, mean sampled reward {source["reward"]:.3f}
- Greedy accuracy over every prompt: {config["eval"]["greedy_accuracy"]:.3f}

## Files

- `config.json`: shape, task and provenance.
- `model.npz`: one array, `weights`, of shape ({config["n_features"]}, {config["n_actions"]}). Row `a * {config["task"]["max_operand"] + 1} + b`
  holds the logits of prompt `a+b`; the last row is a bias added to every prompt.

## Use

```python
import numpy as np
weights = np.load("model.npz")["weights"]
a, b = 3, 4
logits = weights[a * {config["task"]["max_operand"] + 1} + b] + weights[-1]
print(int(logits.argmax()))  # the policy's answer
```
"""
