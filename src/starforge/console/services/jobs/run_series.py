"""The metric series of several runs at once, decimated for a chart: one query for every run's points (only the
columns a chart draws), each series cut to at most `MAX_WIRE_POINTS` by min/max decimation.

Tier: use case (one read transaction). Every run must be one the caller may see: another account's run is the same
NotFound as `reads.show`, and nothing is read before all of them are checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypedDict

from sqlalchemy import select

from ...store.models import MetricPoint
from ..accounts.credentials import UserView
from ..context import Runtime
from . import queries as job_queries
from .decimate import MAX_WIRE_POINTS, decimate

__all__ = ["Series", "runs_series"]


class Series(TypedDict):
    """One run's series of one metric, in step order: steps (a point without one placed by its order), values, the
    times they were reported (epoch seconds), and how many points the run reported before decimation."""

    x: list[float]
    y: list[float]
    t: list[float]
    points: int


def runs_series(rt: Runtime, *, user: UserView, refs: Sequence[str],
                limit: int = MAX_WIRE_POINTS) -> dict[str, dict[str, Series]]:
    """Return `{run_id: {key: Series}}` for each of `refs` (job refs or run ids, each the caller's to see: NotFound
    otherwise), keyed by run id in the order given."""
    with rt.db.read() as db:
        ids = [job_queries.find_job(db, user, ref).id for ref in refs]
        raw: dict[str, dict[str, list[Any]]] = {run: {} for run in ids}
        rows = db.execute(select(MetricPoint.run_id, MetricPoint.key, MetricPoint.step, MetricPoint.value,
                                 MetricPoint.ts).where(MetricPoint.run_id.in_(ids)).order_by(MetricPoint.id))
        for run, key, step, value, ts in rows:
            found = raw[run].get(key)
            if found is None:
                found = raw[run][key] = []
            found.append((step, value, ts))
    return {run: {key: _series(points, limit) for key, points in sorted(keys.items())} for run, keys in raw.items()}


def _series(points: list[tuple[int | None, float, float]], limit: int) -> Series:
    if any(p[0] is None for p in points):  # no step reported: the point's place in the series stands in for it
        points = [(i if step is None else step, value, ts) for i, (step, value, ts) in enumerate(points)]
    steps = [p[0] for p in points]
    if any(a > b for a, b in zip(steps, steps[1:], strict=False)):  # reported out of order (or a resumed attempt)
        points.sort(key=lambda p: (p[0], p[2]))
    xs, ys, ts = (list(column) for column in zip(*points, strict=True)) if points else ([], [], [])
    kx, ky, kt = decimate(xs, ys, limit, ts)
    return {"x": kx, "y": ky, "t": kt, "points": len(points)}
