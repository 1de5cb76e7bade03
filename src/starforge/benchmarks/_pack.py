"""Read and validate a benchmark pack folder: `plugin.yaml` (`kind: benchmark`, `suites`), lm-eval task YAMLs and
their local data files; a pack that names a hub dataset, holds code or reaches outside its folder is refused."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from ..contract import Problem, is_safe_segment
from ..safeyaml import YamlRefused, load_yaml_bounded

__all__ = [
    "ALLOWED_SUFFIXES",
    "KIND",
    "LOCAL_BUILDERS",
    "MANIFEST",
    "Pack",
    "PackRefused",
    "SuiteSpec",
    "read_pack",
]

KIND = "benchmark"
MANIFEST = "plugin.yaml"
# the `datasets` builders that read files: any other dataset_path is a dataset of the hub
LOCAL_BUILDERS = frozenset({"json", "csv", "parquet", "text", "arrow"})
_MAX_YAML_BYTES = 64 * 1024
_MAX_TASK_FILES = 200
_MAX_SUITES = 100
_MAX_DESCRIPTION = 500
_PATH_KEYS = ("data_files", "data_dir")
# what a pack may hold: task YAML, data and notes; never code (lm-eval and `evaluate` would run a .py they find)
ALLOWED_SUFFIXES = frozenset({".yaml", ".yml", ".jsonl", ".json", ".csv", ".tsv", ".parquet", ".arrow", ".txt",
                              ".md"})
_HINT_LOCAL = ("set dataset_path: json (or csv, parquet, text) and list the pack's own files under "
               "dataset_kwargs.data_files; a pack carries its data, nothing is downloaded")


class PackRefused(Exception):
    """The folder is not a valid benchmark pack; `problems` says where and how to fix it."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"{p.field}: {p.message}" for p in problems))


@dataclass(frozen=True)
class SuiteSpec:
    """One suite a pack declares: its name, the lm-eval task (or group) it runs, the metrics it reports."""

    name: str
    task: str
    metrics: tuple[str, ...]
    description: str


@dataclass(frozen=True)
class Pack:
    """A validated benchmark pack: its manifest's name and version, its suites and its folder."""

    name: str
    version: str
    summary: str
    suites: tuple[SuiteSpec, ...]
    root: Path

    def suite(self, name: str) -> SuiteSpec | None:
        """Return the suite called `name`, or None."""
        return next((s for s in self.suites if s.name == name), None)


def _load(file: Path, what: str) -> tuple[Any, list[Problem]]:
    hint = f"write {what} as plain UTF-8 YAML; a pack holds data and task YAML only, no !function or other tags"
    try:
        if file.stat().st_size > _MAX_YAML_BYTES:
            return None, [Problem(what, "yaml_refused", f"{what} is larger than {_MAX_YAML_BYTES} bytes", hint)]
        return load_yaml_bounded(file.read_text(encoding="utf-8"), max_bytes=_MAX_YAML_BYTES, what=what), []
    except UnicodeDecodeError:
        return None, [Problem(what, "yaml_refused", f"{what} is not UTF-8 text", hint)]
    except YamlRefused as exc:
        return None, [Problem(what, "yaml_refused", f"{what} was refused: {exc.reason}", hint)]


def _walk(root: Path) -> Iterator[tuple[str, Path]]:
    """Yield (posix relative path, path) of every entry below `root`, never following a link."""
    for folder, dirs, files in os.walk(root):
        for name in sorted(dirs) + sorted(files):
            path = Path(folder) / name
            yield path.relative_to(root).as_posix(), path


def _inside(root: Path, base: PurePosixPath, value: str, field: str) -> tuple[str, list[Problem]]:
    """Return `value` (relative to the task file's folder `base`) as a path relative to the pack, or a problem."""
    hint = "name a file of the pack by a relative path, such as data/test.jsonl"
    if "://" in value or value.startswith(("hf:", "/")) or "\\" in value or ":" in value:
        return "", [Problem(field, "outside_pack", f"{value!r} is not a file of the pack", hint)]
    parts: list[str] = list(base.parts)
    for part in PurePosixPath(value).parts:
        if part == "..":
            if not parts:
                return "", [Problem(field, "outside_pack", f"{value!r} leads outside the pack's folder", hint)]
            parts.pop()
        elif part != ".":
            parts.append(part)
    relative = "/".join(parts)
    target = root / relative
    if not relative or target.is_symlink() or not target.is_file():
        return "", [Problem(field, "missing_file", f"{value!r} is not a file of the pack", hint)]
    return relative, []


def _data_paths(value: Any) -> list[str] | None:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    if isinstance(value, dict):
        out: list[str] = []
        for item in value.values():
            found = _data_paths(item)
            if found is None:
                return None
            out += found
        return out
    return None


@dataclass
class _Found:
    """What the task YAMLs define: task and group names, each task's metrics, the names groups list (with where)."""

    tasks: set[str]
    metrics: dict[str, set[str]]
    members: list[tuple[str, str]]


def _check_data(root: Path, data: Mapping[str, Any], field: str) -> list[Problem]:
    """Return why a task's dataset is not the pack's own files (a hub dataset, a file outside, none named)."""
    problems: list[Problem] = []
    include = data.get("include")
    source = data.get("dataset_path")
    if source is None and include is None and isinstance(data.get("task"), str) and "group" not in data:
        problems.append(Problem(f"{field}.dataset_path", "missing_field", "the task names no dataset", _HINT_LOCAL))
    if source is not None and (not isinstance(source, str) or source not in LOCAL_BUILDERS):
        problems.append(Problem(f"{field}.dataset_path", "hub_dataset",
                                f"dataset_path {str(source)[:120]!r} names a dataset of the hub", _HINT_LOCAL))
    kwargs = data.get("dataset_kwargs")
    if kwargs is not None and not isinstance(kwargs, dict):
        problems.append(Problem(f"{field}.dataset_kwargs", "invalid_request", "dataset_kwargs must be a mapping",
                                _HINT_LOCAL))
    elif isinstance(source, str) and source in LOCAL_BUILDERS:
        given = kwargs or {}
        if not any(key in given for key in _PATH_KEYS):
            problems.append(Problem(f"{field}.dataset_kwargs.data_files", "missing_field",
                                    "the task names no data file", _HINT_LOCAL))
    for key in _PATH_KEYS:
        if not isinstance(kwargs, dict) or key not in kwargs:
            continue
        paths = _data_paths(kwargs[key])
        if paths is None:
            problems.append(Problem(f"{field}.dataset_kwargs.{key}", "invalid_request",
                                    f"{key} must be a path, a list of paths or a mapping of split to paths",
                                    _HINT_LOCAL))
            continue
        for path in paths:
            if key == "data_dir":
                problems.append(Problem(f"{field}.dataset_kwargs.data_dir", "invalid_request",
                                        "data_dir is not supported", "list the files under data_files"))
                break
            # the job runs lm-eval in the pack's folder: data paths are relative to the pack's root, wherever the
            # task YAML lies (an include is relative to the YAML's own folder, as lm-eval reads it)
            problems += _inside(root, PurePosixPath(), path, f"{field}.dataset_kwargs.{key}")[1]
    return problems


def _check_task(root: Path, relative: str, data: Any, found: _Found, field: str = "") -> list[Problem]:
    """Add what a task YAML (or a group's inline task at `field`) defines to `found`; return its problems."""
    field = field or relative
    if not isinstance(data, dict):
        return [Problem(field, "invalid_request", f"{field} is not a YAML mapping",
                        "a task YAML is a mapping with task, dataset_path, doc_to_text, …")]
    problems: list[Problem] = []
    base = PurePosixPath(relative).parent
    base = PurePosixPath() if str(base) == "." else base
    include = data.get("include")
    if include is not None:
        if not isinstance(include, str):
            problems.append(Problem(f"{field}.include", "invalid_request", "include must name one file",
                                    "include another task YAML of the pack by a relative path"))
        else:
            problems += _inside(root, base, include, f"{field}.include")[1]
    problems += _check_data(root, data, field)
    task = data.get("task")
    if isinstance(task, str):
        found.tasks.add(task)
        listed = data.get("metric_list")
        if isinstance(listed, list):
            found.metrics[task] = {str(m.get("metric")) for m in listed if isinstance(m, dict)}
    group = data.get("group")
    if isinstance(task, list):
        if isinstance(group, str):
            found.tasks.add(group)
        for i, member in enumerate(task):  # a group's tasks: names of the pack's tasks, or tasks written inline
            if isinstance(member, dict):
                problems += _check_task(root, relative, member, found, f"{field}.task[{i}]")
            else:
                found.members.append((str(member), f"{field}.task[{i}]"))
    return problems


def _text(data: Mapping[str, Any], key: str, field: str) -> tuple[str, list[Problem]]:
    value = data.get(key, "")
    if not isinstance(value, str) or len(value) > _MAX_DESCRIPTION:
        return "", [Problem(field, "invalid_request", f"{key} must be text of at most {_MAX_DESCRIPTION} characters",
                            "one sentence saying what the suite measures")]
    return value.strip(), []


def _read_suites(data: Mapping[str, Any]) -> tuple[list[tuple[int, SuiteSpec]], list[Problem]]:
    field = f"{MANIFEST}.suites"
    hint = "list suites: [{name: my-suite, task: my_task, metrics: [acc], description: …}]"
    raw = data.get("suites")
    if not isinstance(raw, list) or not raw:
        return [], [Problem(field, "missing_field", "a benchmark pack declares at least one suite", hint)]
    if len(raw) > _MAX_SUITES:
        return [], [Problem(field, "too_many", f"a pack declares at most {_MAX_SUITES} suites", "split the pack")]
    suites: list[tuple[int, SuiteSpec]] = []
    problems: list[Problem] = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        at = f"{field}[{i}]"
        if not isinstance(item, dict):
            problems.append(Problem(at, "invalid_request", "a suite is a mapping", hint))
            continue
        name, task, metrics = item.get("name"), item.get("task"), item.get("metrics")
        found: list[Problem] = []
        if not isinstance(name, str) or not is_safe_segment(name) or len(name) > 128:
            found.append(Problem(f"{at}.name", "not_a_safe_segment", "the suite's name must be a safe segment",
                                 "use letters, digits, '.', '_' and '-', such as basic-arithmetic"))
        elif name in seen:
            found.append(Problem(f"{at}.name", "duplicate", f"suite {name!r} is declared twice", "name it once"))
        if not isinstance(task, str) or not is_safe_segment(task) or len(task) > 128:
            found.append(Problem(f"{at}.task", "not_a_safe_segment", "task must name an lm-eval task of the pack",
                                 "the `task:` value of one of the pack's task YAMLs"))
        if (not isinstance(metrics, list) or not metrics
                or not all(isinstance(m, str) and m and len(m) <= 128 and "/" not in m for m in metrics)):
            found.append(Problem(f"{at}.metrics", "invalid_request", "metrics must list the metric names reported",
                                 "for example [acc] or [exact_match]"))
        description, more = _text(item, "description", f"{at}.description")
        found += more
        problems += found
        if not found:
            assert isinstance(name, str) and isinstance(task, str) and isinstance(metrics, list)
            seen.add(name)
            suites.append((i, SuiteSpec(name, task, tuple(dict.fromkeys(metrics)), description)))
    return suites, problems


def read_pack(root: Path) -> Pack:
    """Return the pack in folder `root`; raise PackRefused with every problem found."""
    manifest = root / MANIFEST
    if manifest.is_symlink() or not manifest.is_file():
        raise PackRefused([Problem("bundle", "invalid_request", f"the pack has no {MANIFEST}",
                                   f"add {MANIFEST} with name, version, kind: {KIND} and suites at the pack's root")])
    data, problems = _load(manifest, MANIFEST)
    if problems:
        raise PackRefused(problems)
    if not isinstance(data, dict):
        raise PackRefused([Problem(MANIFEST, "invalid_request", f"{MANIFEST} is not a YAML mapping",
                                   f"name, version, kind: {KIND} and suites")])
    if data.get("kind") != KIND:
        problems.append(Problem(f"{MANIFEST}.kind", "invalid_request", f"a benchmark pack has kind: {KIND}",
                                f"set kind: {KIND}"))
    names = {}
    for key in ("name", "version"):
        value = data.get(key)
        if not isinstance(value, str) or not is_safe_segment(value.strip()):
            problems.append(Problem(f"{MANIFEST}.{key}", "not_a_safe_segment", f"{key} must be a safe segment",
                                    "use letters, digits, '.', '_' and '-', starting with a letter or digit"))
        else:
            names[key] = value.strip()
    suites, refused = _read_suites(data)
    problems += refused
    found = _Found(set(), {}, [])
    count = 0
    for relative, path in _walk(root):
        if path.is_symlink():
            problems.append(Problem(relative, "outside_pack", f"{relative} is a link",
                                    "copy the file into the pack instead of linking to it"))
            continue
        if path.is_file() and path.suffix.lower() not in ALLOWED_SUFFIXES:
            problems.append(Problem(relative, "not_pack_data", f"{relative} is neither task YAML nor data",
                                    "a pack holds task YAML and data files only (" + ", ".join(sorted(ALLOWED_SUFFIXES))
                                    + "): no code; lm-eval's builtin filters and metrics are the ones a task uses"))
            continue
        if relative == MANIFEST or not relative.endswith((".yaml", ".yml")):
            continue
        count += 1
        if count > _MAX_TASK_FILES:
            problems.append(Problem(relative, "too_many", f"a pack holds at most {_MAX_TASK_FILES} task YAMLs",
                                    "split the pack"))
            break
        task_data, refused = _load(path, relative)  # a file that does not load is not checked further
        problems += refused or _check_task(root, relative, task_data, found)
    defined, metrics = found.tasks, found.metrics
    for name, at in found.members:
        if name not in defined:
            problems.append(Problem(at, "unknown_task", f"the group lists task {name[:80]!r}, which the pack does "
                                                        "not define", "list tasks of the pack's own task YAMLs"))
    for i, suite in suites:
        if suite.task not in defined:
            problems.append(Problem(f"{MANIFEST}.suites[{i}].task", "unknown_task",
                                    f"no task YAML of the pack defines task {suite.task!r}",
                                    f"add a task YAML with task: {suite.task}, or name one of "
                                    f"{', '.join(sorted(defined)) or '(none defined)'}"))
        elif suite.task in metrics and metrics[suite.task]:
            unknown = [m for m in suite.metrics if m.split(",", 1)[0] not in metrics[suite.task]]
            if unknown:
                problems.append(Problem(f"{MANIFEST}.suites[{i}].metrics", "unknown_metric",
                                        f"task {suite.task} computes no {', '.join(unknown)}",
                                        f"name metrics of its metric_list: {', '.join(sorted(metrics[suite.task]))}"))
    if problems:
        raise PackRefused(problems)
    summary = data.get("summary")
    return Pack(names["name"], names["version"], summary.strip() if isinstance(summary, str) else "",
                tuple(suite for _, suite in suites), root)
