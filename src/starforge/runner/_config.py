"""The config-mode adapter: what a launch plan's `config` becomes on the framework's command line and on disk.

Precedence, lowest first: the experiment's config (`config.document`, or the file the framework reads itself),
the hyperparameters (`config.overrides`: the recipe defaults the experiment's config does not set, then what it
sets, then `--set`, resolved client-side), then the job inputs the recipe binds (`config.bindings`: the model and
data the JobSpec names, the output folders), each set at its config path.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from starforge.wire import (
    ARGPARSE,
    ASSIGN,
    CONFIG_ARGV,
    CONFIG_MODES,
    CONFIG_WRITTEN,
    DATA_SPLITS,
    INPUT_SPLITS,
    SPLITS_DIR,
    WRITTEN_CONFIG_FILE,
    ConfigPlan,
    input_value,
)

from ._hydra import hydra_value
from ._yaml import dump_yaml

__all__ = ["Adapted", "adapt_config", "merged_document", "render_items", "render_value", "set_path", "split_links"]

@dataclass(frozen=True, slots=True)
class Adapted:
    """What a plan's config adds to the child's argv, and what to create first (relative to the workdir).

    `files` maps a path to the text to write, `links` a path to the job-side location a symbolic link points to.
    """

    args: tuple[str, ...] = ()
    files: Mapping[str, str] = field(default_factory=dict)
    links: Mapping[str, str] = field(default_factory=dict)


def adapt_config(config: ConfigPlan, environ: Mapping[str, str]) -> Adapted:
    """Return the argv items, files and links that carry `config` to the framework, per its config mode."""
    mode = CONFIG_MODES.get(config.mode)
    if mode is None:
        return Adapted()  # parse_plan refuses overrides, documents and bindings without a known mode
    inputs, links = _inputs(config, environ, mode.data)
    if mode.config == CONFIG_WRITTEN:
        text = dump_yaml(merged_document(config, inputs))
        return Adapted(("--config", WRITTEN_CONFIG_FILE), {WRITTEN_CONFIG_FILE: text}, links)
    if mode.config == CONFIG_ARGV:
        items = _leaves(merged_document(config, inputs), "")
        return Adapted(tuple(render_items(items, mode.overrides)), {}, links)
    items = [(o.path, o.value) for o in config.overrides] + inputs
    return Adapted(tuple(render_items(items, mode.overrides)), {}, links)


def merged_document(config: ConfigPlan, inputs: list[tuple[str, Any]]) -> dict[str, Any]:
    """Return the experiment's config with the overrides, then the job inputs, set at their paths."""
    document: dict[str, Any] = copy.deepcopy(dict(config.document or {}))
    for override in config.overrides:
        set_path(document, override.path, override.value)
    for path, value in inputs:
        set_path(document, path, value)
    return document


def set_path(document: dict[str, Any], path: str, value: Any) -> None:
    """Set a dotted `path`: an existing top-level key spelled exactly `path` first, else nested mappings (created)."""
    if path in document or "." not in path:
        document[path] = value
        return
    node = document
    parts = path.split(".")
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[parts[-1]] = value


def render_items(items: list[tuple[str, Any]], style: str) -> list[str]:
    """Return `(path, value)` pairs as argv items: `path=value` (Hydra), `--path value`, or argparse style."""
    out: list[str] = []
    for path, value in items:
        if style == ASSIGN:
            out.append(f"{path}={hydra_value(value)}")
        elif style == ARGPARSE:
            out.extend(_argparse(path, value))
        else:
            out.extend([f"--{path}", render_value(value)])
    return out


def split_links(split: str, location: str) -> dict[str, str]:
    """Return the links that lay out a data input as split `split` of the dataset folder (link path → target).

    `datasets.load_dataset(folder)` finds splits by folder name (`train/…`, `test/…`) and picks the builder by file
    suffix, and it looks neither behind a linked folder nor at a mix of split files and split folders. So a file is
    linked as `<split>/<its name>` and each file of a folder as `<split>/<its path inside the folder>`.
    """
    if not os.path.isdir(location):
        return {f"{SPLITS_DIR}/{split}/{os.path.basename(location.rstrip('/'))}": location}
    links: dict[str, str] = {}
    for folder, dirs, files in os.walk(location):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith("."):
                continue
            inside = os.path.relpath(os.path.join(folder, name), location)
            links[f"{SPLITS_DIR}/{split}/{inside}"] = os.path.join(location, inside)
    return links


def _inputs(
    config: ConfigPlan, environ: Mapping[str, str], data: str
) -> tuple[list[tuple[str, Any]], dict[str, str]]:
    out: list[tuple[str, Any]] = []
    links: dict[str, str] = {}
    for binding in config.bindings:
        value = input_value(binding.input, environ)
        if value is None:
            continue  # the job was given no such input: the experiment's own setting stands
        split = INPUT_SPLITS.get(binding.input)
        if data == DATA_SPLITS and split is not None:
            links.update(split_links(split, value))
            out.append((binding.path, SPLITS_DIR))
        else:
            out.append((binding.path, value))
    return out, links


def _leaves(node: Mapping[str, Any], prefix: str) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in node.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.extend(_leaves(value, f"{path}."))
        else:
            out.append((path, value))
    return out


def _argparse(path: str, value: Any) -> list[str]:
    if value is None or value is False or value == {}:
        return []
    if value is True:
        return [f"--{path}"]
    if isinstance(value, list):
        return [f"--{path}", *(render_value(item) for item in value)] if value else []
    return [f"--{path}", render_value(value)]


def render_value(value: Any) -> str:
    """Return an override value as text: booleans as `true` / `false`, None as `null`, the rest in its plain form."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)
