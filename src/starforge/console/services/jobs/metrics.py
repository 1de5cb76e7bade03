"""Metrics of runs: points ingested from jobs (`starforge.runner.report`), served as series and latest values.

Tier: query (runs over the caller's session; never begins or commits a transaction).
"""

from __future__ import annotations

import math
import time
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ...store.models import MetricPoint

__all__ = ["record_points", "series_of"]


MAX_STEP = 2**31 - 1  # the step column's range on every backend


def record_points(db: Session, run_id: str, points: list[Any]) -> int:
    """Store the well-formed, finite points of a batch; return how many were stored."""
    stored = 0
    now = time.time()
    for point in points[:10_000]:
        if not isinstance(point, dict):
            continue
        key, value = point.get("key"), point.get("value")
        if not isinstance(key, str) or not key or isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if "\x00" in key or not math.isfinite(value):
            continue
        step = point.get("step")
        ts = point.get("ts")
        in_range = isinstance(step, int) and not isinstance(step, bool) and 0 <= step <= MAX_STEP
        db.add(MetricPoint(run_id=run_id, key=key[:255], step=step if in_range else None,
                           value=float(value), ts=float(ts) if isinstance(ts, int | float) and math.isfinite(ts) else now))
        stored += 1
    return stored


def series_of(db: Session, run_id: str) -> dict[str, Any]:
    """Return `{series: {key: [[step, value, ts], ...]}, latest: {key: value}}` in step order."""
    rows = db.execute(select(MetricPoint.key, MetricPoint.step, MetricPoint.value, MetricPoint.ts)
                      .where(MetricPoint.run_id == run_id).order_by(MetricPoint.id))
    series: dict[str, list[list[Any]]] = {}
    for key, step, value, ts in rows:
        series.setdefault(key, []).append([step, value, ts])
    for points in series.values():
        points.sort(key=lambda p: (p[0] if p[0] is not None else -1, p[2]))
    latest = {key: points[-1][1] for key, points in series.items()}
    return {"series": series, "latest": latest}
