"""A bounded memory of decimated metric series, so a comparison of finished runs is not read and decimated again on
every view: an entry is keyed by the console, run, key, the series' point count and last point id, and the decimation limit, so any new
point (a running job) makes a new key and the old entry simply ages out.

Tier: shared (in-process memory; no database, no HTTP). Values are packed as arrays of doubles (about 48 KB for a
series of 2,000 points), at most `MAX_ENTRIES` of them, least recently used dropped first; safe across threads.
"""

from __future__ import annotations

import threading
from array import array
from collections import OrderedDict
from typing import Any

__all__ = ["MAX_ENTRIES", "SeriesKey", "forget_all", "recall", "remember"]

MAX_ENTRIES = 256
SeriesKey = tuple[str, str, str, int, int, int]  # console, run id, metric key, point count, last point id, limit

_lock = threading.Lock()
_kept: OrderedDict[SeriesKey, tuple[array[float], array[float], array[float], int]] = OrderedDict()


def recall(key: SeriesKey) -> dict[str, Any] | None:
    """Return the series remembered under `key` as fresh lists (`x`, `y`, `t`, `points`), or None."""
    with _lock:
        found = _kept.get(key)
        if found is None:
            return None
        _kept.move_to_end(key)
    xs, ys, ts, points = found
    return {"x": xs.tolist(), "y": ys.tolist(), "t": ts.tolist(), "points": points}


def remember(key: SeriesKey, series: dict[str, Any]) -> None:
    """Keep `series` (its `x`, `y`, `t` and `points`) under `key`, dropping the least recently used beyond the bound."""
    packed = (array("d", series["x"]), array("d", series["y"]), array("d", series["t"]), int(series["points"]))
    with _lock:
        _kept[key] = packed
        _kept.move_to_end(key)
        while len(_kept) > MAX_ENTRIES:
            _kept.popitem(last=False)


def forget_all() -> None:
    """Drop every remembered series (for a measure of the first, uncached view)."""
    with _lock:
        _kept.clear()
