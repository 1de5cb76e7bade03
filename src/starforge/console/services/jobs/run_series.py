"""The metric series of several runs at once, decimated for a chart: each series read with only the columns a chart
draws (as the driver's plain tuples) and cut to at most `MAX_WIRE_POINTS` by min/max decimation, once: an unchanged
series is remembered (`series_memo`) until a new point arrives.

Tier: use case (one read transaction). Every run must be one the caller may see: another account's run is the same
NotFound as `reads.show`, and nothing is read before all of them are checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter
from typing import Any, TypedDict

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from ...store.models import MetricPoint
from ..accounts.credentials import UserView
from ..context import Runtime
from . import queries as job_queries
from . import series_memo
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
    otherwise), keyed by run id in the order given, each run's keys sorted."""
    with rt.db.read() as db:
        ids = [job_queries.find_job(db, user, ref).id for ref in refs]
        found: dict[str, dict[str, Series]] = {run: {} for run in ids}
        # which series there are, each with its count and last id (from the (run_id, key) index alone); a series
        # seen before with the same count and last id is the same series: remembered, not read again
        shapes = db.execute(select(MetricPoint.run_id, MetricPoint.key, func.count(), func.max(MetricPoint.id))
                            .where(MetricPoint.run_id.in_(ids)).group_by(MetricPoint.run_id, MetricPoint.key)
                            .order_by(MetricPoint.key)).all()
        for run, key, count, last_id in shapes:
            memo_key = (rt.identity, run, key, int(count), int(last_id), limit)
            kept = series_memo.recall(memo_key)
            if kept is None:
                rows = _plain_rows(db, select(MetricPoint.step, MetricPoint.value, MetricPoint.ts)
                                   .where(MetricPoint.run_id == run, MetricPoint.key == key).order_by(MetricPoint.id))
                kept = dict(_series(rows, limit))
                series_memo.remember(memo_key, kept)
            found[run][key] = {"x": kept["x"], "y": kept["y"], "t": kept["t"], "points": kept["points"]}
    return found


def _plain_rows(db: Session, query: Select[int | None, float, float]) -> list[tuple[Any, ...]]:
    """The rows of `query` as the database driver's own tuples, in the session's transaction: a chart reads up to
    hundreds of thousands of points, and a result row object per point costs more than the read itself. Only plain
    comparisons go in `query` (no expanding IN), so its compiled text and parameters are the driver's as they are."""
    connection = db.connection()
    compiled = query.compile(dialect=connection.dialect)
    params: Any = compiled.params
    if compiled.positiontup is not None:  # qmark drivers (sqlite3) take the values in order
        params = [compiled.params[name] for name in compiled.positiontup]
    cursor = connection.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(str(compiled), params)
        return list(cursor.fetchall())
    finally:
        cursor.close()


def _series(rows: Sequence[Any], limit: int) -> Series:
    steps, values, times = (list(map(itemgetter(i), rows)) for i in range(3))  # C-speed columns (not zip(*rows))
    if None in steps:  # no step reported: the point's place in the series stands in for it
        steps = [i if step is None else step for i, step in enumerate(steps)]
    if steps != sorted(steps):  # reported out of order (or a resumed attempt): step order, then report time
        order = sorted(range(len(steps)), key=lambda i: (steps[i], times[i]))
        steps, values, times = ([column[i] for i in order] for column in (steps, values, times))
    xs, ys, ts = decimate(steps, values, limit, times)
    return {"x": xs, "y": ys, "t": ts, "points": len(steps)}
