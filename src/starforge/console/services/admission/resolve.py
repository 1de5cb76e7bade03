"""Resolve a spec's references against the registries once, so the policy checks stay pure.

Tier: query (runs over the caller's session; never begins or commits a transaction).
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from ....contract import JobSpec, Problem, parse_versioned_ref
from ..accounts.credentials import UserView
from ..errors import NotFound, Rejected
from ..registries import artifacts, benchmark_packs, data, plugins
from .checks.benchmarks import is_benchmark_job, suites_asked
from .checks.data import asset_references
from .context import Resolutions

__all__ = ["has_references", "resolve_references"]


def has_references(spec: JobSpec) -> bool:
    """Return True when the spec names anything a registry must resolve (`resolve_references` reads the store)."""
    s = spec.spec
    return bool(s.model.init_from or s.data.output_dataset or s.plugins or asset_references(s)
                or is_benchmark_job(spec))


def resolve_references(db: Session, spec: JobSpec, user: UserView) -> Resolutions:
    """Look up init_from, a registered base model, every data reference, the output dataset, every plugin and a
    benchmark job's suites for `user`."""
    s = spec.spec
    init_from = artifacts.resolve(db, s.model.init_from, user) if s.model.init_from else None
    assets = {}
    for field, kind, text in asset_references(s):
        ref, _ = parse_versioned_ref(text, field)
        assets[f"{field}={text}"] = data.resolve(db, kind, ref, user) if ref else None
    taken = set()
    if s.data.output_dataset:
        ref, _ = parse_versioned_ref(s.data.output_dataset, "spec.data.output_dataset")
        if ref is not None and data.version_exists(db, "dataset", ref):
            taken.add(s.data.output_dataset)
    records: list[plugins.PluginView | None] = []
    for plugin in s.plugins:
        owner, name = plugin.id.split("/", 1)
        try:
            records.append(plugins.get_plugin(db, owner, name, plugin.version))
        except NotFound:
            records.append(None)
    suites, refused = _suites(db, spec) if is_benchmark_job(spec) else ((), ())
    return Resolutions(init_from, assets, frozenset(taken), tuple(records), suites, refused)


def _suites(db: Session, spec: JobSpec) -> tuple[tuple[benchmark_packs.Suite, ...], tuple[Problem, ...]]:
    field, names = suites_asked(spec)
    try:
        return tuple(benchmark_packs.resolve_suites(db, names, field=field)), ()
    except Rejected as exc:
        return (), tuple(exc.problems)
