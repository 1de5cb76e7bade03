"""Load a tinyrl config: the YAML file, then `dotted.path=value` overrides, checked into a `TrainConfig`."""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any

__all__ = ["ConfigProblem", "TrainConfig", "load_config", "type_literal"]

_INT = re.compile(r"[+-]?\d+(?:_\d+)*")
_FLOAT = re.compile(r"[+-]?(?:\d+(?:_\d+)*\.?(?:\d+(?:_\d+)*)?|\.\d+(?:_\d+)*)(?:[eE][+-]?\d+)?")
_SEGMENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*")


@dataclass(frozen=True)
class ConfigProblem:
    """One thing wrong with the config: the dotted path it concerns and what is wrong."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


@dataclass(frozen=True)
class _Field:
    path: str
    kind: type
    default: Any
    minimum: float | None = None
    exclusive_min: bool = False
    maximum: float | None = None
    choices: tuple[Any, ...] = ()


# Every key tinyrl reads, in the order problems are reported. Other top-level sections (`eval`, `data`, …) belong
# to the platform and are left alone; unknown keys inside these sections are refused so that typos surface.
_FIELDS: tuple[_Field, ...] = (
    _Field("grpo.max_num_steps", int, 60, minimum=1),
    _Field("grpo.num_prompts_per_step", int, 64, minimum=1),
    _Field("grpo.num_generations_per_prompt", int, 8, minimum=2),
    _Field("grpo.normalize_rewards", bool, True),
    _Field("grpo.seed", int, 42, minimum=0),
    _Field("policy.init_scale", float, 0.01, minimum=0.0),
    _Field("policy.init_from", str, ""),
    _Field("policy.optimizer.name", str, "adam", choices=("adam", "sgd")),
    _Field("policy.optimizer.kwargs.lr", float, 0.3, minimum=0.0, exclusive_min=True),
    _Field("policy.generation.temperature", float, 1.0, minimum=0.0, exclusive_min=True, maximum=100.0),
    _Field("loss_fn.reference_policy_kl_penalty", float, 0.01, minimum=0.0),
    _Field("checkpointing.enabled", bool, True),
    _Field("checkpointing.save_period", int, 20, minimum=0),
    _Field("task.max_operand", int, 9, minimum=1, maximum=20),
)
_SECTIONS = tuple(dict.fromkeys(f.path.split(".")[0] for f in _FIELDS))


@dataclass(frozen=True)
class TrainConfig:
    """The checked settings of one tinyrl GRPO run, one attribute per setting in `_FIELDS` order."""

    max_num_steps: int
    num_prompts_per_step: int
    num_generations_per_prompt: int
    normalize_rewards: bool
    seed: int
    init_scale: float
    init_from: str
    optimizer: str
    learning_rate: float
    temperature: float
    kl_penalty: float
    checkpointing_enabled: bool
    save_period: int
    max_operand: int

    def flat(self) -> dict[str, Any]:
        """Return the settings keyed by their dotted config path (what is reported as hyperparameters)."""
        return dict(zip((f.path for f in _FIELDS), astuple(self), strict=True))


def type_literal(text: str) -> Any:
    """Return an override value typed like `sf --set`: booleans, then integers, then finite floats, else the string."""
    lowered = text.lower()
    if lowered in ("true", "yes", "on"):
        return True
    if lowered in ("false", "no", "off"):
        return False
    if _INT.fullmatch(text):
        return int(text.replace("_", ""))
    if _FLOAT.fullmatch(text) and any(c.isdigit() for c in text):
        return float(text.replace("_", ""))
    return text


def load_config(path: Path, overrides: Sequence[str] = ()) -> tuple[TrainConfig | None, list[ConfigProblem]]:
    """Return the checked config of the YAML file at `path` with `overrides` applied, or None and every problem."""
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        return None, [ConfigProblem("--config", f"cannot read {path}: {exc.strerror or exc}")]
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        return None, [ConfigProblem("--config", f"{path} is not valid YAML: {exc}")]
    if loaded is None:
        loaded = {}
    if not isinstance(loaded, dict):
        return None, [ConfigProblem("--config", f"{path} must hold a mapping, not {type(loaded).__name__}")]
    problems = _apply_overrides(loaded, overrides)
    problems += _unknown_keys(loaded)
    values: dict[str, Any] = {}
    for spec in _FIELDS:
        found, raw = _lookup(loaded, spec.path)
        value, problem = _check(spec, raw if found else spec.default)
        if problem:
            problems.append(ConfigProblem(spec.path, problem))
        values[spec.path] = value
    if problems:
        return None, problems
    return TrainConfig(*(values[f.path] for f in _FIELDS)), []


def _apply_overrides(tree: dict[str, Any], overrides: Sequence[str]) -> list[ConfigProblem]:
    problems: list[ConfigProblem] = []
    for item in overrides:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            problems.append(ConfigProblem(item, "an override must read dotted.path=value"))
            continue
        parts = key.split(".")
        if not all(_SEGMENT.fullmatch(p) for p in parts):
            problems.append(ConfigProblem(key, "an override path is dot-separated names (letters, digits, _ and -)"))
            continue
        node = tree
        for depth, part in enumerate(parts[:-1]):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                where = ".".join(parts[: depth + 1])
                problems.append(ConfigProblem(key, f"cannot set it: {where} is {child!r}, not a mapping"))
                break
            node = child
        else:
            node[parts[-1]] = type_literal(raw.strip())
    return problems


def _unknown_keys(tree: Mapping[str, Any]) -> list[ConfigProblem]:
    known = {f.path for f in _FIELDS}
    prefixes = {".".join(f.path.split(".")[:i]) for f in _FIELDS for i in range(1, f.path.count(".") + 1)}
    problems: list[ConfigProblem] = []

    def walk(node: Mapping[Any, Any], prefix: str) -> None:
        for key, value in node.items():
            path = f"{prefix}.{key}"
            if path in prefixes and isinstance(value, Mapping):
                walk(value, path)
            elif path in prefixes and value is not None:
                problems.append(ConfigProblem(path, f"must be a mapping, not {type(value).__name__}"))
            elif path not in known and path not in prefixes:
                close = difflib.get_close_matches(path, sorted(known), n=1)
                hint = f" (did you mean {close[0]}?)" if close else ""
                problems.append(ConfigProblem(path, f"unknown setting{hint}"))

    for section in _SECTIONS:
        value = tree.get(section)
        if isinstance(value, Mapping):
            walk(value, section)
        elif value is not None:
            problems.append(ConfigProblem(section, f"must be a mapping, not {type(value).__name__}"))
    return problems


def _lookup(tree: Mapping[str, Any], path: str) -> tuple[bool, Any]:
    node: Any = tree
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False, None
        node = node[part]
    return node is not None, node


def _check(spec: _Field, value: Any) -> tuple[Any, str]:
    if spec.kind is bool:
        return (value, "") if isinstance(value, bool) else (value, f"must be true or false, not {value!r}")
    if spec.kind is str:
        if not isinstance(value, str):
            return value, f"must be a string, not {value!r}"
    elif spec.kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            return value, f"must be an integer, not {value!r}"
    else:
        # PyYAML reads `1e-3` (no dot) as a string; accept such a literal for a float setting.
        if isinstance(value, str) and _FLOAT.fullmatch(value.strip()):
            value = float(value.strip().replace("_", ""))
        if isinstance(value, bool) or not isinstance(value, int | float):
            return value, f"must be a number, not {value!r}"
        value = float(value)
        if not math.isfinite(value):
            return value, f"must be a finite number, not {value!r}"
    if spec.choices and value not in spec.choices:
        return value, f"must be one of {', '.join(map(str, spec.choices))}, not {value!r}"
    if spec.minimum is not None and (value < spec.minimum or (spec.exclusive_min and value == spec.minimum)):
        bound = "greater than" if spec.exclusive_min else "at least"
        return value, f"must be {bound} {spec.minimum:g}, not {value!r}"
    if spec.maximum is not None and value > spec.maximum:
        return value, f"must be at most {spec.maximum:g}, not {value!r}"
    return value, ""
