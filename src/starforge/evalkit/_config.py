"""The benchmark job's settings from its config file, dotted overrides, `--key value` arguments and `extra_args`:
the `evalkit` section of our template, or the same keys at the top level (the official recipe's layout)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["EvalConfig", "load_config", "unquote"]

_KEYS = ("suites", "runner", "batch_size", "limit", "num_fewshot", "max_new_tokens", "seed", "repeat", "report",
         "extra_args")
_RUNNERS = ("lm-eval",)
_MAX_REPEAT = 20
_INT = re.compile(r"[+-]?\d+")
# `extra_args` flags the job understands (lm-eval's own spelling), mapped to our keys
_EXTRA = {"--num_fewshot": "num_fewshot", "--limit": "limit", "--batch_size": "batch_size", "--seed": "seed"}


@dataclass(frozen=True)
class EvalConfig:
    """What to evaluate and how: suites, harness, batching, examples per suite, few-shot count, generation budget
    (0: each task's own), base seed, repetitions, the model folder or id, its dtype and the report path."""

    suites: tuple[str, ...]
    runner: str = "lm-eval"
    batch_size: str = "auto"
    limit: int = 0
    num_fewshot: int | None = None
    max_new_tokens: int = 0
    seed: int = 1234
    repeat: int = 1
    model: str = ""
    dtype: str = "auto"
    report: str = "eval/report.json"

    def seeds(self) -> list[int]:
        """Return the seed of each repetition: the base seed, then one more for each later repetition."""
        return [self.seed + k for k in range(self.repeat)]


def unquote(text: str) -> str:
    """Return an override value without the quotes a Hydra-style override puts around it (`'a,b'` → `a,b`): inside
    them, a backslash run before a quote (or the end) is halved and an odd one escapes that quote."""
    text = text.strip()
    if len(text) < 2 or text[0] != text[-1] or text[0] not in "'\"":
        return text
    quote, inner, out, i = text[0], text[1:-1], [], 0
    while i < len(inner):
        if inner[i] != "\\":
            out.append(inner[i])
            i += 1
            continue
        j = i
        while j < len(inner) and inner[j] == "\\":
            j += 1
        run = j - i
        if j == len(inner) or inner[j] == quote:
            out.append("\\" * (run // 2))
            if run % 2 and j < len(inner):
                out.append(quote)
                j += 1
        else:
            out.append("\\" * run)
        i = j
    return "".join(out)


def _flags(args: Sequence[str]) -> tuple[list[tuple[str, str]], list[str]]:
    """Split `dotted.key=value` and `--key value`/`--key=value` arguments into (key, value) pairs and problems."""
    pairs: list[tuple[str, str]] = []
    problems: list[str] = []
    i = 0
    while i < len(args):
        item = args[i]
        if item.startswith("--"):
            key, sep, value = item[2:].partition("=")
            if not sep:
                if i + 1 >= len(args):
                    problems.append(f"{item} needs a value")
                    break
                i += 1
                value = args[i]
            pairs.append((key.replace("-", "_"), value))
        else:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                problems.append(f"{item!r} is not dotted.path=value")
            else:
                pairs.append((key.strip(), value))
        i += 1
    return pairs, problems


def _set(tree: dict[str, Any], key: str, value: str) -> None:
    parts = key.split(".")
    node = tree
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[parts[-1]] = unquote(value)


def _int(value: Any, key: str, low: int, high: int, problems: list[str]) -> int:
    text = str(value).strip()
    if isinstance(value, bool) or not _INT.fullmatch(text) or not low <= int(text) <= high:
        problems.append(f"{key} must be a whole number from {low} to {high}, not {value!r}")
        return low
    return int(text)


def _extra(text: str, values: dict[str, Any], problems: list[str]) -> None:
    try:
        words = shlex.split(text)
    except ValueError as exc:
        problems.append(f"extra_args cannot be read: {exc}")
        return
    pairs, found = _flags(words)
    problems += found
    for key, value in pairs:
        ours = _EXTRA.get(f"--{key}")
        if ours is None:
            problems.append(f"extra_args: --{key} is not supported; the job understands {', '.join(_EXTRA)}")
        else:
            values[ours] = value


def load_config(argv: Sequence[str], environ: Mapping[str, str]) -> tuple[EvalConfig | None, list[str]]:
    """Return the job's settings from `argv` (`--config FILE`, overrides) and `environ`, or None and the problems."""
    import yaml

    problems: list[str] = []
    tree: dict[str, Any] = {}
    args = list(argv)
    if "--config" in args:
        at = args.index("--config")
        path = Path(args[at + 1]) if at + 1 < len(args) else None
        del args[at:at + 2]
        try:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8")) if path else None
        except (OSError, yaml.YAMLError) as exc:
            return None, [f"--config: cannot read {path}: {exc}"]
        if loaded is not None and not isinstance(loaded, dict):
            return None, [f"--config: {path} must hold a mapping"]
        tree = loaded or {}
    pairs, problems = _flags(args)
    for key, value in pairs:
        _set(tree, key, value)
    found = tree.get("evalkit")
    section: dict[str, Any] = found if isinstance(found, dict) else {}
    values = {key: section[key] if key in section else tree[key] for key in _KEYS
              if key in section or (key in tree and not isinstance(tree[key], dict))}
    if values.get("extra_args"):
        _extra(str(values.pop("extra_args")), values, problems)
    found = tree.get("model")
    model_section: dict[str, Any] = found if isinstance(found, dict) else {}
    raw_suites = values.get("suites") or ""
    suites = raw_suites if isinstance(raw_suites, list) else str(raw_suites).split(",")
    names = tuple(dict.fromkeys(str(s).strip() for s in suites if str(s).strip()))
    if not names and not environ.get("FORGE_BENCHMARKS"):  # else: every suite the console mounted
        problems.append("suites is empty: name the suites to run, e.g. --set suites=basic-arithmetic,basic-choice")
    runner = str(values.get("runner") or "lm-eval")
    if runner not in _RUNNERS:
        problems.append(f"runner {runner!r} is not available in this job; use {' or '.join(_RUNNERS)}")
    fewshot = values.get("num_fewshot")
    model = (environ.get("FORGE_INIT_FROM") or str(model_section.get("path") or "")
             or environ.get("FORGE_MODEL", "")).strip()
    if not model:
        problems.append("no model: set spec.model.base or spec.model.init_from (or model.path in the config)")
    report = str(values.get("report") or "eval/report.json")
    if report.startswith("/") or ".." in Path(report).parts:
        problems.append(f"report {report!r} must be a path inside the run's output folder")
    config = EvalConfig(
        suites=names, runner=runner, batch_size=str(values.get("batch_size") or "auto"),
        limit=_int(values.get("limit") or 0, "limit", 0, 10_000_000, problems),
        num_fewshot=None if fewshot in (None, "") else _int(fewshot, "num_fewshot", 0, 64, problems),
        max_new_tokens=_int(values.get("max_new_tokens") or 0, "max_new_tokens", 0, 1_048_576, problems),
        seed=_int(values.get("seed", 1234), "seed", 0, 2**32 - 1, problems),
        repeat=_int(values.get("repeat") or 1, "repeat", 1, _MAX_REPEAT, problems),
        model=model, dtype=str(model_section.get("dtype") or "auto"), report=report)
    return (None, problems) if problems else (config, [])
