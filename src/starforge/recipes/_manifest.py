"""`recipe.yaml` validation (recipes-and-locks §2): every key and rule, fields named relative to the manifest."""

from __future__ import annotations

import re
from typing import Any

from ..wire import ARTIFACT_GROUPS, CONFIG_MODES, INPUTS
from ._checker import SAFE_SEGMENT, Checker, is_relative_path, join
from ._manifest_params import check_i18n, check_params
from ._manifest_runtime import check_entrypoint, check_runtime, check_specifier

__all__ = ["validate_manifest"]
CATEGORIES = ("supervised", "sft", "preference", "reward-model", "rl", "distillation", "evaluation", "custom")
_ADAPTER_ENUMS = {
    "config_mode": tuple(CONFIG_MODES),  # the one table of the console→runner wire
    "ray_cluster_profile": ("direct", "standard", "nemo-rl-baseline"),
    "launcher": ("torchrun", "accelerate", "python-module"),
}
_ARTIFACT_LISTS = tuple(ARTIFACT_GROUPS)  # the launch plan's artifact groups
_ARTIFACT_FORMATS = tuple(ARTIFACT_GROUPS.values())  # each group's artifact kind, which `formats` is keyed by
_SEMVER = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?", re.ASCII)


def validate_manifest(
    data: Any, *, directory: str, framework_dir: str | None = None, owner: str | None = None
) -> list[tuple[str, str]]:
    """Return every `(field, message)` problem of a loaded manifest found in `directory` (template existence aside).

    `framework_dir` is the parent directory name in the built-in layout (the manifest's framework must equal it);
    `owner` is the owner directory in the overlay layout (the name may then also read `<owner>.<directory>`).
    """
    c = Checker()
    if not isinstance(data, dict):
        c.bad("<root>", f"a manifest must be a mapping, got {type(data).__name__}")
        return c.problems
    c.json_values(data, "")
    name = c.segment(data, "name", "", required=True)
    if name is not None and name != directory and not (owner and name == f"{owner}.{directory}"):
        c.bad("name", f"{name!r} must equal its directory name {directory!r}")
    c.string(data, "version", "", required=True)
    framework = c.segment(data, "framework", "", required=True)
    if framework is not None and framework_dir is not None and framework != framework_dir:
        c.bad("framework", f"{framework!r} must equal its parent directory name {framework_dir!r}")
    c.string(data, "title", "")
    c.string(data, "summary", "")
    c.enum(data, "category", "", CATEGORIES, empty_ok=True)
    c.string(data, "config_section", "")
    check_entrypoint(c, data.get("entrypoint"), "entrypoint")
    template = c.string(data, "template", "", required=True)
    if template is not None and not is_relative_path(template):
        c.bad("template", f"{template!r} must be a relative path without '..'")
    _adapter_options(c, data.get("adapter_options"))
    check_runtime(c, data.get("runtime"), framework)
    _requires(c, data.get("requires"))
    _lifecycle(c, data.get("lifecycle"), data.get("lifecycle_resources"))
    _names(c, data, "roles")
    _names(c, data, "plugins")
    declared = check_params(c, data.get("params"))
    c.enum(data, "hyperparam_keys", "", ("names", "names_or_paths"))
    _metrics(c, data.get("metrics"))
    _validation(c, data.get("validation"))
    _artifacts(c, data.get("artifacts"))
    check_i18n(c, data.get("i18n"), declared)
    version = c.string(data, "contract_version", "")
    if version is not None and not _SEMVER.fullmatch(version):
        c.bad("contract_version", f"{version!r} is not a semantic version such as 1.0.0")
    return c.problems


def _adapter_options(c: Checker, value: Any) -> None:
    obj = c.mapping(value, "adapter_options")
    if obj is None:
        return
    c.enum(obj, "observability", "adapter_options", ("platform", "external"), required=True)
    for key, allowed in _ADAPTER_ENUMS.items():
        c.enum(obj, key, "adapter_options", allowed)
    for key in ("topology", "fixed_overrides"):
        c.mapping(obj.get(key), join("adapter_options", key), required=False)
    _bindings(c, obj.get("bindings"))


def _bindings(c: Checker, value: Any) -> None:
    """`adapter_options.bindings`: `{job input: config path}`, each input one of `starforge.wire.INPUTS`."""
    obj = c.mapping(value, "adapter_options.bindings", required=False)
    for name, path in (obj or {}).items():
        field = join("adapter_options.bindings", str(name))
        if name not in INPUTS:
            c.bad(field, f"unknown job input {name!r}; use one of {', '.join(INPUTS)}")
        elif not isinstance(path, str) or not path.strip():
            c.bad(field, "must be a non-empty config path (a string such as actor_rollout_ref.model.path)")


def _requires(c: Checker, value: Any) -> None:
    obj = c.mapping(value, "requires", required=False)
    if obj is None:
        return
    core = c.string(obj, "core", "requires", nonempty=True)
    if core is not None:
        check_specifier(c, core, "requires.core")


def _lifecycle(c: Checker, actions: Any, resources: Any) -> None:
    lifecycle = c.mapping(actions, "lifecycle")
    for action, entry in (lifecycle or {}).items():
        if not isinstance(action, str):
            continue
        if not SAFE_SEGMENT.fullmatch(action):
            c.bad(join("lifecycle", action), f"action name {action!r} is not a safe segment")
        check_entrypoint(c, entry, join("lifecycle", action))
    sizes = c.mapping(resources, "lifecycle_resources")
    if sizes is None or lifecycle is None:
        return
    if set(sizes) != set(lifecycle):
        c.bad("lifecycle_resources", f"must have exactly the keys of lifecycle ({', '.join(map(str, lifecycle)) or 'none'})")
    for action, gpus in sizes.items():
        if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0:
            c.bad(join("lifecycle_resources", str(action)), "must be an integer >= 0 (the GPUs of the action's pool)")


def _names(c: Checker, data: dict[str, Any], key: str) -> None:
    items = c.strings(data, key, "")
    seen: set[str] = set()
    for i, item in enumerate(items or ()):
        if not SAFE_SEGMENT.fullmatch(item):
            c.bad(join(key, i), f"{item!r} is not a safe segment")
        elif item in seen:
            c.bad(join(key, i), f"{item!r} is listed twice")
        seen.add(item)


def _metrics(c: Checker, value: Any) -> None:
    obj = c.mapping(value, "metrics")
    if obj is None:
        return
    c.strings(obj, "primary", "metrics", required=True, nonempty=True)
    aliases = c.mapping(obj.get("aliases"), "metrics.aliases", required=False)
    for canonical in aliases or {}:
        if isinstance(canonical, str):
            c.strings(aliases or {}, canonical, "metrics.aliases", required=True)
    semantics = c.mapping(obj.get("semantics"), "metrics.semantics", required=False)
    for metric, body in (semantics or {}).items():
        if not isinstance(metric, str):
            continue
        entry = c.mapping(body, join("metrics.semantics", metric))
        if entry is not None:
            c.enum(entry, "direction", join("metrics.semantics", metric), ("higher", "lower", "neutral"))
            c.enum(entry, "display", join("metrics.semantics", metric), ("ratio", "number"))


def _validation(c: Checker, value: Any) -> None:
    obj = c.mapping(value, "validation", required=False)
    if obj is None:
        return
    kind = c.enum(obj, "sample_kind", "validation", ("conversation", "preference", "completion", "none"))
    reward = c.enum(obj, "reward_semantics", "validation", ("scalar", "binary", "margin", "none"))
    if (kind or "none") == "none" and (reward or "none") != "none":
        c.bad("validation.reward_semantics", "must be none when sample_kind is none")
    c.strings(obj, "observer_versions", "validation")


def _artifacts(c: Checker, value: Any) -> None:
    obj = c.mapping(value, "artifacts")
    if obj is None:
        return
    if obj.get("version") != "forge/artifacts/v1":
        c.bad("artifacts.version", f"must be forge/artifacts/v1, got {obj.get('version')!r}")
    for key in _ARTIFACT_LISTS:
        globs = c.strings(obj, key, "artifacts", required=True)
        for i, pattern in enumerate(globs or ()):
            if not is_relative_path(pattern):
                c.bad(join(join("artifacts", key), i), f"{pattern!r} must be a relative glob without '..'")
    formats = c.mapping(obj.get("formats"), "artifacts.formats")
    for key in _ARTIFACT_FORMATS if formats is not None else ():
        c.string(formats or {}, key, "artifacts.formats", required=True)
