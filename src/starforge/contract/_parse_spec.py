"""Readers for the parts of `spec`, each applying its field rules in the reference order."""

from __future__ import annotations

from typing import Any

from ._build import (
    new_data,
    new_data_split,
    new_evaluation,
    new_framework,
    new_gate,
    new_lifecycle,
    new_model,
    new_peft,
    new_plugin,
    new_pool,
    new_quality,
    new_recipe_ref,
    new_resources,
    new_source,
)
from ._grammar import (
    ArtifactRef,
    check_digest,
    check_exp_path,
    check_plugin_id,
    check_recipe_id,
    check_safe_segment,
    match_digest,
    match_exp_path,
    match_ref,
    match_segment,
    match_two_part,
    parse_init_from,
    parse_versioned_ref,
)
from ._model import (
    Data,
    DataSplit,
    Evaluation,
    Framework,
    Gate,
    Lifecycle,
    Model,
    Peft,
    Plugin,
    Pool,
    Quality,
    RecipeRef,
    Resources,
    Source,
)
from ._walk import ANY_KEYS, Walk, type_name

__all__ = [
    "read_data",
    "read_evaluation",
    "read_framework",
    "read_hyperparams",
    "read_lifecycle",
    "read_model",
    "read_plugins",
    "read_recipe",
    "read_resources",
    "read_source",
]

_PLUGIN_KEYS = frozenset({"id", "version", "digest"})
_RECIPE_KEYS = frozenset({"name", "version", "digest", "plugins"})
_SOURCE_KEYS = frozenset({"exp", "entrypoint"})
_FRAMEWORK_KEYS = frozenset({"kind", "version", "runtime_id", "image", "observability_url"})
_MODEL_KEYS = frozenset({"base", "peft", "init_from"})
_PEFT_KEYS = frozenset({"kind", "dim", "alpha"})
_DATA_KEYS = frozenset({"train", "validation", "corpus", "volumes", "output_dataset", "environment", "quality"})
_SPLIT_KEYS = frozenset({"dataset", "split", "path"})
_QUALITY_KEYS = frozenset({"max_duplicate_ratio", "overlap_with", "max_overlap_ratio"})
_RESOURCES_KEYS = frozenset({"pools", "roles"})
_POOL_KEYS = frozenset({"name", "nodes", "gpus_per_node", "series"})
_LIFECYCLE_KEYS = frozenset({"on_success"})
_EVALUATION_KEYS = frozenset({"suites", "runner", "baseline", "limit", "gates"})
_GATE_KEYS = frozenset({"metric", "min", "max", "max_regression"})


def read_plugins(w: Walk, value: Any) -> tuple[Plugin, ...] | None:
    """Read `spec.plugins`: type, each element, duplicate ids, then case-insensitive leaf collisions."""
    items = w.list_of(value, "spec.plugins")
    if items is None:
        return None
    plugins: list[Plugin] = []
    ok = True
    for i, item in enumerate(items):
        field = f"spec.plugins[{i}]"
        obj = w.obj(item, field, _PLUGIN_KEYS)
        if obj is None:
            ok = False
            continue
        if not obj:
            w.bad(field, "missing_field", "a plugin needs id, version and digest")
            ok = False
            continue
        plugin = _read_plugin(w, obj, field)
        if plugin is None:
            ok = False
        else:
            plugins.append(plugin)
    if not ok:
        return None
    seen: set[str] = set()
    leaves: dict[str, str] = {}
    for plugin in plugins:
        if plugin.id in seen:
            w.bad(
                "spec.plugins",
                "duplicate_plugin",
                f"plugin {plugin.id} is listed twice",
                "keep one entry per plugin in plugins.lock.json",
            )
            return None
        seen.add(plugin.id)
    for plugin in plugins:
        leaf = plugin.leaf.lower()
        other = leaves.get(leaf)
        if other is not None:
            w.bad(
                "spec.plugins",
                "plugin_leaf_collision",
                f"plugins {other} and {plugin.id} would both unpack into forge_plugins/{plugin.leaf}/",
                "use only one of them in this experiment (`sf plugin remove`)",
            )
            return None
        leaves[leaf] = plugin.id
    return tuple(plugins)


def _read_plugin(w: Walk, obj: dict[str, Any], field: str) -> Plugin | None:
    before = len(w.problems)
    pid = w.required(obj, field, "id")
    if pid is not None and match_two_part(pid) is None:
        w.problems.extend(check_plugin_id(pid, f"{field}.id"))
    version = w.required(obj, field, "version")
    if version is not None and match_segment(version) is None:
        w.bad(
            f"{field}.version",
            "invalid_plugin_version",
            f"plugin version {version!r} is not valid",
            "use the version published by `sf plugin install`, e.g. 1.2.0",
        )
    digest = w.required(obj, field, "digest")
    if digest is not None and match_digest(digest) is None:
        w.problems.extend(check_digest(digest, f"{field}.digest"))
    if len(w.problems) != before:
        return None
    return new_plugin(pid or "", version or "", digest or "")


def read_recipe(w: Walk, value: Any) -> RecipeRef | None:
    """Read `spec.recipe`: name, built-in patch names, version, digest."""
    obj = w.obj(value, "spec.recipe", _RECIPE_KEYS)
    if obj is None:
        return None
    before = len(w.problems)
    name = w.required(obj, "spec.recipe", "name")
    if name is not None and match_two_part(name) is None:
        w.problems.extend(check_recipe_id(name, "spec.recipe.name"))
    patches: list[str] = []
    items = w.list_of(obj.get("plugins"), "spec.recipe.plugins")
    for item in items or ():
        if not isinstance(item, str):
            w.bad("spec.recipe.plugins[]", "not_a_string", f"must be a string, got {type_name(item)}")
            continue
        item = item.strip()
        if match_segment(item) is None:
            w.problems.extend(check_safe_segment(item, "spec.recipe.plugins[]", "patch name"))
        patches.append(item)
    version = w.required(obj, "spec.recipe", "version")
    digest = w.required(obj, "spec.recipe", "digest")
    if digest is not None and match_digest(digest) is None:
        w.problems.extend(check_digest(digest, "spec.recipe.digest"))
    if len(w.problems) != before:
        return None
    return new_recipe_ref(name or "", version or "", digest or "", tuple(patches))


def read_source(w: Walk, value: Any) -> Source | None:
    """Read `spec.source`: the entrypoint must be empty (checked first), then the experiment path."""
    obj = w.obj(value, "spec.source", _SOURCE_KEYS)
    if obj is None:
        return None
    before = len(w.problems)
    entrypoint = obj.get("entrypoint")
    if entrypoint is not None and not (isinstance(entrypoint, str) and not entrypoint.strip()):
        w.bad(
            "spec.source.entrypoint",
            "entrypoint_forbidden",
            "must be empty: the entrypoint belongs to the recipe",
            "to run your own command, use the custom/custom recipe",
        )
    exp = w.required(obj, "spec.source", "exp")
    if exp is not None and match_exp_path(exp) is None:
        w.problems.extend(check_exp_path(exp, "spec.source.exp"))
    if len(w.problems) != before:
        return None
    return new_source((exp or "").rstrip("/"))


def read_framework(w: Walk, value: Any) -> Framework | None:
    """Read `spec.framework`: kind, version, runtime_id; image and observability_url by type only."""
    obj = w.obj(value, "spec.framework", _FRAMEWORK_KEYS)
    if obj is None:
        return None
    before = len(w.problems)
    kind = w.required(obj, "spec.framework", "kind")
    if kind is not None and match_segment(kind) is None:
        w.problems.extend(check_safe_segment(kind, "spec.framework.kind", "framework"))
    version = w.required(obj, "spec.framework", "version")
    runtime_id = w.string(obj, "spec.framework", "runtime_id")
    if runtime_id and match_segment(runtime_id) is None:
        w.problems.extend(check_safe_segment(runtime_id, "spec.framework.runtime_id", "runtime id"))
    image = w.string(obj, "spec.framework", "image")
    url = w.string(obj, "spec.framework", "observability_url")
    if len(w.problems) != before:
        return None
    return new_framework(kind or "", version or "", runtime_id or "", image or "", url or "")


def read_model(w: Walk, value: Any) -> Model | None:
    """Read `spec.model`: init_from type, base, peft, then the init_from grammar."""
    obj = w.obj(value, "spec.model", _MODEL_KEYS)
    if obj is None:
        return None
    before = len(w.problems)
    init_from_text = w.string(obj, "spec.model", "init_from")
    base = w.string(obj, "spec.model", "base")
    peft = _read_peft(w, obj.get("peft"))
    init_from: ArtifactRef | None = None
    if init_from_text:
        init_from, problems = parse_init_from(init_from_text, "spec.model.init_from")
        w.problems.extend(problems)
    if len(w.problems) != before:
        return None
    return new_model(base or "", peft, init_from)


def _read_peft(w: Walk, value: Any) -> Peft | None:
    obj = w.obj(value, "spec.model.peft", _PEFT_KEYS)
    if not obj:
        return None
    kind = w.string(obj, "spec.model.peft", "kind")
    raw = obj.get("dim")
    dim = None if raw is None else w.positive_int(raw, "spec.model.peft", "dim")
    raw = obj.get("alpha")
    alpha = None if raw is None else w.positive_int(raw, "spec.model.peft", "alpha")
    if not kind and dim is None and alpha is None:
        return None
    return new_peft(kind or "", dim, alpha)


def read_data(w: Walk, value: Any) -> Data | None:
    """Read `spec.data`: corpus, volumes, output_dataset, environment, train, validation, quality."""
    obj = w.obj(value, "spec.data", _DATA_KEYS)
    if obj is None:
        return None
    before = len(w.problems)
    corpus = _read_reference(w, obj, "spec.data", "corpus")
    volumes = _read_volumes(w, obj.get("volumes"))
    output = _read_reference(w, obj, "spec.data", "output_dataset", version_required=True)
    environment = _read_reference(w, obj, "spec.data", "environment")
    train = _read_split(w, obj.get("train"), "spec.data.train")
    validation = _read_split(w, obj.get("validation"), "spec.data.validation")
    quality = _read_quality(w, obj.get("quality"))
    if len(w.problems) != before:
        return None
    return new_data(train, validation, corpus, volumes, output, environment, quality)


def _read_reference(
    w: Walk, obj: dict[str, Any], parent: str, key: str, *, version_required: bool = False
) -> str:
    """Return the normalised reference at `parent.key` (`""` when unset or after reporting a problem)."""
    text = obj.get(key)
    if type(text) is str and match_ref(text) is not None and (not version_required or "@" in text):
        return text  # well-formed, hence already trimmed and its own normal form
    text = w.string(obj, parent, key)
    if not text:
        return ""
    ref, problems = parse_versioned_ref(text, f"{parent}.{key}", version_required=version_required)
    w.problems.extend(problems)
    return str(ref) if ref else ""


def _read_volumes(w: Walk, value: Any) -> tuple[str, ...]:
    items = w.list_of(value, "spec.data.volumes")
    if items is None:
        return ()
    volumes: list[str] = []
    owners_by_name: dict[str, str] = {}
    ok = True
    field = "spec.data.volumes[]"
    for item in items:
        if not isinstance(item, str):
            w.bad(field, "not_a_string", f"must be a string, got {type_name(item)}")
            ok = False
            continue
        text = item.strip()
        if "@" in text:
            w.bad(field, "volume_has_version", f"volume {text!r} cannot carry a version", "drop the @<version>")
            ok = False
            continue
        fast = match_ref(text)
        if fast is not None:
            ident, owner, name = text, fast[1], fast[2]
        else:
            ref, problems = parse_versioned_ref(text, field)
            if ref is None:
                for p in problems:
                    w.bad(field, p.code, p.message, p.hint)
                ok = False
                continue
            ident, owner, name = ref.id, ref.owner, ref.name
        if ident in volumes:
            w.warn(field, "duplicate_volume", f"volume {ident} is listed twice; the repeat was dropped")
            continue
        volumes.append(ident)
        owners_by_name.setdefault(name, owner)
    if ok and len(owners_by_name) != len(volumes):  # else every name has exactly one owner
        for vol in volumes:
            owner, name = vol.split("/")
            if owners_by_name[name] != owner:
                w.bad(
                    "spec.data.volumes",
                    "volume_name_collision",
                    f"volumes {owners_by_name[name]}/{name} and {vol} would both mount at $VOLUMES_DIR/{name}",
                    "use only one volume of each name",
                )
                break
    return tuple(volumes)


def _read_split(w: Walk, value: Any, field: str) -> DataSplit | None:
    obj = w.obj(value, field, _SPLIT_KEYS)
    if not obj:
        return None
    dataset = _read_reference(w, obj, field, "dataset")
    split = w.string(obj, field, "split")
    path = w.string(obj, field, "path")
    if dataset and path and (path.startswith("/") or ".." in path.replace("\\", "/").split("/")):
        w.bad(
            f"{field}.path",
            "path_not_relative",
            f"path {path!r} must be a relative file inside dataset {dataset}",
            "give the file's path inside the dataset, e.g. train.parquet",
        )
    if not (dataset or split or path):
        return None
    return new_data_split(dataset, split or "", path or "")


def _read_quality(w: Walk, value: Any) -> Quality | None:
    obj = w.obj(value, "spec.data.quality", _QUALITY_KEYS)
    if not obj:
        return None
    overlap_with = _read_reference(w, obj, "spec.data.quality", "overlap_with")
    raw = obj.get("max_duplicate_ratio")
    duplicate = None if raw is None else w.finite_number(raw, "spec.data.quality", "max_duplicate_ratio")
    raw = obj.get("max_overlap_ratio")
    overlap = None if raw is None else w.finite_number(raw, "spec.data.quality", "max_overlap_ratio")
    _check_ratio(w, "max_duplicate_ratio", duplicate)
    _check_ratio(w, "max_overlap_ratio", overlap)
    if overlap is not None and not overlap_with:
        w.bad(
            "spec.data.quality.overlap_with",
            "overlap_ratio_without_target",
            "max_overlap_ratio needs overlap_with (the dataset to compare against)",
            "set overlap_with to <owner>/<name>[@version] or drop max_overlap_ratio",
        )
    if not overlap_with and duplicate is None and overlap is None:
        return None
    return new_quality(duplicate, overlap_with, overlap)


def _check_ratio(w: Walk, key: str, ratio: float | None) -> None:
    if ratio is not None and not 0 <= ratio <= 1:
        w.bad(f"spec.data.quality.{key}", "out_of_range", f"must be within [0, 1], got {ratio}")


def read_resources(w: Walk, value: Any) -> Resources | None:
    """Read `spec.resources`: pools (each, non-empty, unique names), then roles against the pools."""
    obj = w.obj(value, "spec.resources", _RESOURCES_KEYS)
    if obj is None:
        return None
    pools = _read_pools(w, obj.get("pools"))
    roles = w.obj(obj.get("roles"), "spec.resources.roles", ANY_KEYS)
    if pools is None or roles is None:
        return None
    names = {p.name for p in pools}
    clean: dict[str, str] = {}
    for role, pool in roles.items():
        if not isinstance(pool, str):
            w.bad("spec.resources.roles", "not_a_string", f"role {role!r} must name a pool, got {type_name(pool)}")
            continue
        pool = pool.strip()
        if pool not in names:
            w.bad(
                "spec.resources.roles",
                "unknown_pool",
                f"role {role!r} points at pool {pool!r}, which is not declared",
                f"declared pools: {', '.join(sorted(names))}",
            )
            continue
        clean[role] = pool
    if len(clean) != len(roles):
        return None
    return new_resources(pools, clean)


def _read_pools(w: Walk, value: Any) -> tuple[Pool, ...] | None:
    hint = "pass --profile <name>[:gpus], e.g. --profile h200:8"
    items = w.list_of(value, "spec.resources.pools")
    if items is None:
        return None
    pools: list[Pool] = []
    ok = True
    for i, item in enumerate(items):
        field = f"spec.resources.pools[{i}]"
        obj = w.obj(item, field, _POOL_KEYS)
        pool = None if obj is None else _read_pool(w, obj, field)
        if pool is None:
            ok = False
        else:
            pools.append(pool)
    if not ok:
        return None
    if not pools:
        w.bad("spec.resources.pools", "pools_empty", "no resource pool is declared", hint)
        return None
    seen: set[str] = set()
    for pool in pools:
        if pool.name in seen:
            w.bad(
                "spec.resources.pools",
                "duplicate_pool_name",
                f"pool name {pool.name!r} is used twice",
                "give every pool its own name",
            )
            return None
        seen.add(pool.name)
    return tuple(pools)


def _read_pool(w: Walk, obj: dict[str, Any], field: str) -> Pool | None:
    """Read one pool; `nodes` and `gpus_per_node` default to 1 only when absent (null is refused)."""
    before = len(w.problems)
    name = w.required(obj, field, "name")
    if name is not None and match_segment(name) is None:
        w.problems.extend(check_safe_segment(name, f"{field}.name", "pool name"))
    series = w.string(obj, field, "series")
    nodes = w.positive_int(obj.get("nodes", 1), field, "nodes")
    gpus_per_node = w.positive_int(obj.get("gpus_per_node", 1), field, "gpus_per_node")
    if len(w.problems) != before:
        return None
    return new_pool(name or "", nodes or 0, gpus_per_node or 0, series or "")


def read_hyperparams(w: Walk, value: Any) -> dict[str, Any] | None:
    """Read `spec.hyperparams`: an object whose values are kept verbatim; non-finite numbers are refused."""
    obj = w.obj(value, "spec.hyperparams", ANY_KEYS)
    if obj is None:
        return None
    if not w.no_non_finite(obj, "spec.hyperparams"):
        return None
    return dict(obj)


def read_lifecycle(w: Walk, value: Any) -> Lifecycle | None:
    """Read `spec.lifecycle.on_success`: an array of action names, blanks dropped."""
    obj = w.obj(value, "spec.lifecycle", _LIFECYCLE_KEYS)
    if obj is None:
        return None
    items = w.list_of(obj.get("on_success"), "spec.lifecycle.on_success")
    if items is None:
        return None
    before = len(w.problems)
    actions: list[str] = []
    for item in items:
        if not isinstance(item, str):
            w.bad("spec.lifecycle.on_success[]", "not_a_string", f"must be a string, got {type_name(item)}")
            continue
        item = item.strip()
        if item:
            if match_segment(item) is None:
                w.problems.extend(check_safe_segment(item, "spec.lifecycle.on_success[]", "action"))
            actions.append(item)
    if len(w.problems) != before:
        return None
    return new_lifecycle(tuple(actions))


def read_evaluation(w: Walk, value: Any) -> Evaluation | None:
    """Read `spec.evaluation`: suites, gates, the gate/suite relation, limit, runner and baseline."""
    obj = w.obj(value, "spec.evaluation", _EVALUATION_KEYS)
    if obj is None:
        return None
    before = len(w.problems)
    suites = _read_suites(w, obj.get("suites"))
    gates = _read_gates(w, obj.get("gates"))
    if suites is not None and gates:
        if not suites:
            w.bad(
                "spec.evaluation.suites",
                "gates_without_suites",
                "gates need the suites they judge",
                "list the benchmarks under eval.suites in config.yaml",
            )
        else:
            for i, gate in enumerate(gates):
                bench = gate.metric.split("/", 1)[0]
                if bench not in suites:
                    w.bad(
                        f"spec.evaluation.gates[{i}].metric",
                        "gate_suite_unknown",
                        f"gate benchmark {bench!r} is not one of the suites",
                        f"suites: {', '.join(suites)}",
                    )
    limit = 0
    raw_limit = obj.get("limit")
    if raw_limit is not None and raw_limit != 0 or isinstance(raw_limit, bool):
        checked = w.positive_int(raw_limit, "spec.evaluation", "limit")
        limit = checked or 0
    runner = w.string(obj, "spec.evaluation", "runner")
    baseline = w.string(obj, "spec.evaluation", "baseline")
    if len(w.problems) != before:
        return None
    return new_evaluation(tuple(suites or ()), runner or "", baseline or "", limit, tuple(gates or ()))


def _read_suites(w: Walk, value: Any) -> list[str] | None:
    items = w.list_of(value, "spec.evaluation.suites")
    if items is None:
        return None
    suites: list[str] = []
    for item in items:
        if not isinstance(item, str):
            w.bad("spec.evaluation.suites[]", "not_a_string", f"must be a string, got {type_name(item)}")
            continue
        item = item.strip()
        if not item or item in suites:
            continue
        if match_segment(item) is None:
            w.problems.extend(check_safe_segment(item, "spec.evaluation.suites[]", "suite"))
            continue
        suites.append(item)
    return suites


def _read_gates(w: Walk, value: Any) -> list[Gate] | None:
    items = w.list_of(value, "spec.evaluation.gates")
    if items is None:
        return None
    gates: list[Gate] = []
    ok = True
    for i, item in enumerate(items):
        field = f"spec.evaluation.gates[{i}]"
        obj = w.obj(item, field, _GATE_KEYS)
        gate = None if obj is None else _read_gate(w, obj, field)
        if gate is None:
            ok = False
        else:
            gates.append(gate)
    return gates if ok else None


def _read_gate(w: Walk, obj: dict[str, Any], field: str) -> Gate | None:
    """Read one gate: metric, the finite bounds, then the relations between the bounds."""
    before = len(w.problems)
    metric = w.required(obj, field, "metric")
    if metric is not None and "/" not in metric:
        w.bad(
            f"{field}.metric",
            "gate_metric_invalid",
            f"metric {metric!r} must be <benchmark>/<metric key>",
            "e.g. gsm8k/exact_match",
        )
    raw = obj.get("min")
    low = None if raw is None else w.finite_number(raw, field, "min")
    raw = obj.get("max")
    high = None if raw is None else w.finite_number(raw, field, "max")
    raw = obj.get("max_regression")
    regression = None if raw is None else w.finite_number(raw, field, "max_regression")
    if len(w.problems) == before:
        if low is None and high is None and regression is None:
            w.bad(field, "gate_without_bound", "a gate needs at least one of min, max, max_regression")
        if regression is not None and regression < 0:
            w.bad(f"{field}.max_regression", "out_of_range", f"must be >= 0, got {regression}")
        if low is not None and high is not None and low > high:
            w.bad(f"{field}.max", "min_greater_than_max", f"max {high} is below min {low}")
    if len(w.problems) != before:
        return None
    return new_gate(metric or "", low, high, regression)
