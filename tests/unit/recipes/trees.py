"""Builders of small recipe trees, specs and labs for the recipes tests (written to temporary directories)."""

from __future__ import annotations

import copy
import json
import os
import time
from pathlib import Path
from typing import Any

import yaml

from starforge.recipes import Catalog, load_catalog

FRAMEWORK = "testfw"
_PAST = time.time() - 3600  # files older than the cache's racy window, so cached entries are stored


def manifest(name: str = "grpo", framework: str = FRAMEWORK, **changes: Any) -> dict[str, Any]:
    """Return a valid manifest; keyword arguments replace top-level keys (None deletes one)."""
    data: dict[str, Any] = {
        "name": name,
        "version": "1.0.0",
        "framework": framework,
        "title": "Test recipe",
        "summary": "A recipe for tests",
        "category": "rl",
        "template": "template",
        "entrypoint": {"kind": "module", "value": "testfw.train"},
        "adapter_options": {"observability": "platform", "config_mode": "dot-overrides"},
        "runtime": {
            "default_version": "1.0.0",
            "versions": {
                "1.0.0": {"runtime_id": f"{framework}-1.0.0", "deployment_artifact": True, "requires": []},
                "0.9.0": {"runtime_id": f"{framework}-0.9.0", "deployment_artifact": True,
                          "status": "deprecated", "sunset": "2030-01-31"},
            },
        },
        "requires": {"core": ">=0.1,<1"},
        "lifecycle": {"export": {"kind": "module", "value": "testfw.export"}},
        "lifecycle_resources": {"export": 1},
        "roles": ["actor", "rollout"],
        "params": {
            "learning_rate": {"type": "float", "min": 0, "exclusive_min": True, "path": "optim.lr",
                              "doc": "step size"},
            "steps": {"type": "int", "min": 1, "max": 1000, "path": "train.steps", "default": 10},
            "precision": {"type": "enum", "choices": ["bf16", "fp32"], "path": "precision"},
            "flag": {"type": "bool", "path": "train.flag", "path_overrides": {"0.9.0": "old.flag"}},
            "name_tag": {"path": "", "choices": ["a", "b"]},
        },
        "metrics": {"primary": ["train/loss"], "aliases": {"train/loss": ["loss"]}},
        "validation": {"sample_kind": "none", "reward_semantics": "none"},
        "artifacts": {
            "version": "forge/artifacts/v1", "checkpoints": ["checkpoints/*"], "logs": ["logs"],
            "exports": ["hf_export"], "evaluations": ["eval/report.json"],
            "formats": {"checkpoint": "npz", "log": "text", "hf_export": "huggingface", "eval_report": "json"},
        },
    }
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return data


def age(path: Path, when: float = _PAST) -> None:
    """Set every file and directory under `path` to `when`, by default an hour ago (outside the racy window)."""
    for current, dirs, files in os.walk(path):
        for item in [*dirs, *files]:
            os.utime(Path(current, item), (when, when))
    os.utime(path, (when, when))


def write_recipe(directory: Path, data: dict[str, Any] | str, template: dict[str, str] | None = None,
                 when: float = _PAST) -> Path:
    """Write `recipe.yaml` (a dict is dumped as YAML, text as is) and its template files into `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    text = data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    (directory / "recipe.yaml").write_text(text, encoding="utf-8")
    files = {"config.yaml": "optim:\n  lr: 0.001\ntrain:\n  steps: 5\n", "README.md": "# test\n"}
    files.update(template or {})
    for rel, content in files.items():
        target = directory / "template" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    age(directory, when)
    return directory / "recipe.yaml"


def tree(root: Path, *manifests: dict[str, Any]) -> Path:
    """Write a built-in layout tree `<root>/<framework>/<name>/` holding `manifests` (default: one test recipe)."""
    for data in manifests or (manifest(),):
        write_recipe(root / data["framework"] / data["name"], data)
    return root


def catalog(root: Path, *manifests: dict[str, Any], **options: Any) -> Catalog:
    """Write a tree and load it without overlays."""
    options.setdefault("overlays", False)
    return load_catalog(tree(root, *manifests), **options)


def spec(recipe: Any, **changes: Any) -> dict[str, Any]:
    """Return a JobSpec document for `recipe` at its default version; `changes` are dotted paths under `spec`."""
    version = recipe.default_version
    doc: dict[str, Any] = {
        "apiVersion": "forge/v2",
        "kind": "TrainingJob",
        "metadata": {"name": "exp", "project": "lab"},
        "spec": {
            "recipe": {"name": recipe.id, "version": recipe.version, "digest": recipe.digest()},
            "source": {"exp": "experiments/exp"},
            "framework": {"kind": recipe.framework, "version": version, "runtime_id": recipe.runtime_id(version)},
            "resources": {"pools": [{"name": "all", "nodes": 1, "gpus_per_node": 8}],
                          "roles": {r: "all" for r in recipe.roles}},
            "hyperparams": {"learning_rate": 0.01},
        },
        "provenance": {"core_version": "0.3.56"},
    }
    for path, value in changes.items():
        node = doc["spec"]
        parts = path.split("__")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        if value is ...:
            node.pop(parts[-1], None)
        else:
            node[parts[-1]] = copy.deepcopy(value)
    return doc


def lab(root: Path) -> Path:
    """Create a lab: `starforge.yaml` (forge/project/v1, name test) and `experiments/`."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "starforge.yaml").write_text("apiVersion: forge/project/v1\nname: test\n", encoding="utf-8")
    (root / "experiments").mkdir(exist_ok=True)
    return root


def edit_lock(exp_dir: Path, **changes: Any) -> None:
    """Rewrite keys of the experiment's lock: `section__key=value` (None deletes)."""
    file = exp_dir / "recipe.lock.json"
    data = json.loads(file.read_text(encoding="utf-8"))
    for path, value in changes.items():
        node = data
        parts = path.split("__")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        if value is None:
            node.pop(parts[-1], None)
        else:
            node[parts[-1]] = value
    file.write_text(json.dumps(data), encoding="utf-8")
