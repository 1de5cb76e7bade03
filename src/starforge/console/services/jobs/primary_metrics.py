"""The last value of each listed run's primary metric (its recipe's first `metrics.primary`, or one of that metric's
`metrics.aliases`), read for a whole page of runs in one query.

Tier: query (runs over the caller's session; never begins or commits a transaction). "Last" is the point ingested
last (the highest metric id), so a restarted run shows what its current attempt reported most recently. Each
(run, key) pair is one backward seek of `ix_metrics_run_key_id` (run_id, key, id) on SQLite and PostgreSQL alike:
the cost follows the runs listed, never the points they hold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlalchemy import ColumnElement, case, select
from sqlalchemy.orm import Session

from ....recipes import Catalog
from ...store.models import Job, MetricPoint

__all__ = ["last_values", "primary_keys"]


def primary_keys(catalog: Catalog, recipes: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Return, for each recipe id that declares one, `(primary, *aliases)`: its first primary metric, then the names
    a run may report it under; a recipe the catalog no longer serves is left out."""
    keys: dict[str, tuple[str, ...]] = {}
    for recipe_id in dict.fromkeys(recipes):
        recipe = catalog.get(recipe_id)
        section = recipe.metrics if recipe is not None else {}
        primary = [m for m in section.get("primary") or [] if isinstance(m, str) and m]
        if not primary:
            continue
        aliases = section.get("aliases")
        named = aliases.get(primary[0]) if isinstance(aliases, dict) else None
        keys[recipe_id] = tuple(dict.fromkeys([primary[0], *(a for a in named or [] if isinstance(a, str) and a)]))
    return keys


def _last(key: str, recipes: list[str]) -> ColumnElement[float | None]:
    point = (select(MetricPoint.value).where(MetricPoint.run_id == Job.id, MetricPoint.key == key)
             .order_by(MetricPoint.id.desc()).limit(1).scalar_subquery())
    return case((Job.recipe.in_(recipes), point), else_=None)  # only the runs whose recipe names this key seek it


def last_values(db: Session, run_ids: Sequence[str], keys: Mapping[str, Sequence[str]]) -> dict[str, float]:
    """Return `{run_id: last value}` for the runs among `run_ids` that reported their recipe's primary metric, where
    `keys` is `primary_keys` of their recipes (the first name found, in that order, wins). One query."""
    wanted: dict[str, list[str]] = {}  # key -> recipes that read it
    for recipe_id, names in keys.items():
        for name in names:
            wanted.setdefault(name, []).append(recipe_id)
    if not run_ids or not wanted:
        return {}
    names = list(wanted)
    query = select(Job.id, Job.recipe, *(_last(name, wanted[name]) for name in names)).where(Job.id.in_(list(run_ids)))
    found: dict[str, float] = {}
    for run_id, recipe_id, *values in db.execute(query):
        by_name = dict(zip(names, values, strict=True))
        value = next((by_name[n] for n in keys.get(recipe_id, ()) if by_name.get(n) is not None), None)
        if value is not None:
            found[run_id] = float(value)
    return found
