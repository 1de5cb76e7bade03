"""Product order of recipes (§1): framework rank, then the NeMo-RL method order, then the id."""

from __future__ import annotations

__all__ = ["product_key"]

_FRAMEWORK_RANK = {"nemo-rl": 0, "verl": 1, "trl": 2, "openrlhf": 3, "pytorch": 4, "evalkit": 5, "custom": 6}
_OTHER_FRAMEWORK = 5
_NEMO_RL_ORDER = ("grpo", "grpo-lora", "ppo", "sft", "dpo", "rm", "distillation", "maxrl", "opsd")


def product_key(recipe_id: str) -> tuple[int, int, str]:
    """Return the sort key of `recipe_id` in product order (unlisted NeMo-RL methods follow the listed ones)."""
    framework, _, name = recipe_id.partition("/")
    rank = _FRAMEWORK_RANK.get(framework, _OTHER_FRAMEWORK)
    method = 0
    if framework == "nemo-rl":
        method = _NEMO_RL_ORDER.index(name) if name in _NEMO_RL_ORDER else len(_NEMO_RL_ORDER)
    return rank, method, recipe_id
