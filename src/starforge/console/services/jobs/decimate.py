"""Min/max decimation of a metric series: at most `limit` points that keep the curve's shape (its first and last
point, and each bucket's lowest and highest value, in x order), so a long series draws fast and no spike is lost.

Tier: shared (pure; no database, no HTTP). Points are parallel lists in x order; a series already within the limit is
returned as it is.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["MAX_WIRE_POINTS", "decimate", "kept_indexes"]

MAX_WIRE_POINTS = 2000  # per series on the wire: what a chart draws without lag, two points per pixel column or so


def kept_indexes(ys: Sequence[float], limit: int = MAX_WIRE_POINTS) -> list[int]:
    """Return the indexes of the points to keep, ascending: all of them within `limit`, else the first, the last
    and, for each of `(limit - 2) // 2` equal runs of the points between, the index of its minimum and maximum."""
    count = len(ys)
    if count <= max(limit, 2):
        return list(range(count))
    buckets = (limit - 2) // 2
    if buckets < 1:
        return [0, count - 1]
    inner = count - 2
    kept = [0]
    for b in range(buckets):
        start = 1 + inner * b // buckets
        end = 1 + inner * (b + 1) // buckets
        if start >= end:
            continue
        part = ys[start:end]
        low = start + part.index(min(part))  # C-speed scans: one list slice, min/max and index per bucket
        high = start + part.index(max(part))
        kept.extend((low, high) if low < high else (high, low) if high < low else (low,))
    kept.append(count - 1)
    return kept


def decimate(xs: Sequence[float], ys: Sequence[float], limit: int = MAX_WIRE_POINTS,
             *extra: Sequence[float]) -> tuple[list[float], ...]:
    """Return `(xs, ys, *extra)` cut to the points `kept_indexes(ys, limit)` keeps (each of `extra`, such as the
    points' times, cut alike)."""
    keep = kept_indexes(list(ys) if not isinstance(ys, list) else ys, limit)
    if len(keep) == len(ys):
        return (list(xs), list(ys), *(list(e) for e in extra))
    return tuple([column[i] for i in keep] for column in (xs, ys, *extra))
