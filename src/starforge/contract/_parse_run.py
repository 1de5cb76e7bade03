"""Readers for how a job runs: `spec.resources`, `spec.hyperparams`, `spec.lifecycle`, `spec.evaluation`."""

from __future__ import annotations

from typing import Any

from ._build import (
    new_evaluation,
    new_gate,
    new_lifecycle,
    new_pool,
    new_resources,
)
from ._grammar import (
    check_safe_segment,
    match_segment,
)
from ._model import (
    Evaluation,
    Gate,
    Lifecycle,
    Pool,
    Resources,
)
from ._walk import ANY_KEYS, Walk, type_name

__all__ = ["read_evaluation", "read_hyperparams", "read_lifecycle", "read_resources"]

_RESOURCES_KEYS = frozenset({"pools", "roles"})
_POOL_KEYS = frozenset({"name", "nodes", "gpus_per_node", "series"})
_LIFECYCLE_KEYS = frozenset({"on_success"})
_EVALUATION_KEYS = frozenset({"suites", "runner", "baseline", "limit", "gates"})
_GATE_KEYS = frozenset({"metric", "min", "max", "max_regression"})


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
