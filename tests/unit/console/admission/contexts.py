"""Small admission contexts for the policy-check tests: a valid tinyrl job on the cpu series, changed field by field."""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path
from typing import Any

from starforge.console.services.accounts.credentials import UserView
from starforge.console.services.admission.context import AdmissionContext, Resolutions
from starforge.console.services.quota.caps import QuotaView
from starforge.console.settings import Settings
from starforge.contract import JobSpec, Problem, ProfileEntry, parse
from starforge.recipes import Catalog, load_catalog

__all__ = ["ALICE", "DOC", "catalog", "context", "job", "triples"]

ALICE = UserView(1, "alice", "user", "", False)

DOC: dict[str, Any] = {
    "apiVersion": "forge/v2", "kind": "TrainingJob", "metadata": {"name": "toy", "project": "lab"},
    "spec": {"recipe": {"name": "tinyrl/grpo", "version": "1.0.0", "digest": "sha256:" + "0" * 64},
             "source": {"exp": "experiments/toy"},
             "framework": {"kind": "tinyrl", "version": "1.0.0", "runtime_id": "tinyrl-1.0.0"},
             "resources": {"pools": [{"name": "all", "series": "cpu", "nodes": 1, "gpus_per_node": 1}]}},
    "provenance": {"core_version": "0.4.0"},
}

_CATALOG: list[Catalog] = []
_FROM_CATALOG: Any = object()  # `context(recipe=...)` default: the catalog's recipe of the spec


def catalog() -> Catalog:
    """Return the built-in recipe catalog (loaded once for the session)."""
    if not _CATALOG:
        _CATALOG.append(load_catalog())
    return _CATALOG[0]


def job(**fields: Any) -> JobSpec:
    """Return the parsed base job with each `dotted__path=value` set (`spec__data={...}` sets `spec.data`)."""
    doc = copy.deepcopy(DOC)
    for path, value in fields.items():
        node = doc
        *parents, last = path.split("__")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    parsed = parse(doc)
    assert parsed.spec is not None, [str(p) for p in parsed.problems]
    return parsed.spec


def context(spec: JobSpec | None = None, *, state_dir: Path = Path("/nonexistent/state"), profile: str = "cpu",
            quota: QuotaView | None = None, resolutions: Resolutions | None = None, recipe: Any = _FROM_CATALOG,
            capacity: dict[str, int] | None = None, **changes: Any) -> AdmissionContext:
    """Return Alice's context for `spec` (the base job by default) on a console of series cpu, h200 and a100 with
    4 cpu and 16 h200 slots; `changes` are other `AdmissionContext` fields, or settings as `settings__name`."""
    spec = spec or job()
    profiles = (ProfileEntry("cpu", "cpu", 1, 1), ProfileEntry("h200", "h200", 1, 8), ProfileEntry("a100", "a100", 1, 8))
    settings = Settings(state_dir=state_dir, profiles=profiles)
    settings = replace(settings, **{k.removeprefix("settings__"): v for k, v in changes.items()
                                    if k.startswith("settings__")})
    ctx = AdmissionContext(
        spec=spec, user=ALICE, settings=settings, profile=profile,
        quota=quota or QuotaView(max_concurrent_gpus=16, max_concurrent_jobs=8, daily_gpu_hours=0.0,
                                 max_storage_gb=0.0),
        ledger=None, resolutions=resolutions or Resolutions(),
        recipe=catalog().get(spec.spec.recipe.name) if recipe is _FROM_CATALOG else recipe,
        capacity={"cpu": 4, "h200": 16} if capacity is None else capacity,
    )
    return replace(ctx, **{k: v for k, v in changes.items() if not k.startswith("settings__")})


def triples(problems: list[Problem]) -> list[tuple[str, str, str]]:
    """Return each problem's (field, code, hint), in order."""
    return [(p.field, p.code, p.hint) for p in problems]
