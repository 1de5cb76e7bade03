"""Min/max decimation: short series untouched; long ones cut to the limit, keeping the first and last points and
every bucket's extremes in x order (a single spike survives)."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from starforge.console.services.jobs.decimate import MAX_WIRE_POINTS, decimate, kept_indexes


def test_a_short_series_is_kept_whole() -> None:
    xs, ys = [0.0, 1.0, 2.0], [3.0, 1.0, 2.0]
    assert decimate(xs, ys) == (xs, ys)
    assert kept_indexes([]) == [] and kept_indexes([1.0]) == [0]


def test_a_long_series_keeps_its_ends_and_its_spike() -> None:
    n = 100_000
    ys = [math.sin(i / 500) for i in range(n)]
    ys[54_321] = 50.0  # one spike
    ys[77_777] = -50.0  # one dip
    xs = [float(i) for i in range(n)]
    ts = [1000.0 + i for i in range(n)]
    kx, ky, kt = decimate(xs, ys, MAX_WIRE_POINTS, ts)
    assert len(kx) <= MAX_WIRE_POINTS and len(kx) == len(ky) == len(kt)
    assert (kx[0], kx[-1]) == (0.0, n - 1.0) and (ky[0], ky[-1]) == (ys[0], ys[-1])
    assert 50.0 in ky and -50.0 in ky and max(ky) == 50.0 and min(ky) == -50.0
    assert kx == sorted(kx) and len(set(kx)) == len(kx)  # x order, no point twice
    assert all(t == x + 1000.0 for x, t in zip(kx, kt, strict=True))  # extra columns cut alike


@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=300), st.integers(4, 40))
def test_every_bucket_keeps_its_extremes(ys: list[float], limit: int) -> None:
    keep = kept_indexes(ys, limit)
    assert keep == sorted(set(keep))
    if len(ys) <= limit:
        assert keep == list(range(len(ys)))
        return
    assert len(keep) <= limit and keep[0] == 0 and keep[-1] == len(ys) - 1
    assert min(ys) in [ys[i] for i in keep] and max(ys) in [ys[i] for i in keep]


def test_the_series_memory_is_bounded_and_keyed_by_the_series_state() -> None:
    from starforge.console.services.jobs import series_memo

    series_memo.forget_all()
    first = ("console", "r-1", "loss", 3, 30, MAX_WIRE_POINTS)
    series_memo.remember(first, {"x": [1, 2, 3], "y": [0.5, 0.25, 0.125], "t": [1.0, 2.0, 3.0], "points": 3})
    assert series_memo.recall(first) == {"x": [1.0, 2.0, 3.0], "y": [0.5, 0.25, 0.125], "t": [1.0, 2.0, 3.0],
                                         "points": 3}
    assert series_memo.recall(("console", "r-1", "loss", 4, 31, MAX_WIRE_POINTS)) is None  # a new point: not it
    for i in range(series_memo.MAX_ENTRIES):
        series_memo.remember(("console", "r-2", f"k{i}", 1, i, MAX_WIRE_POINTS), {"x": [], "y": [], "t": [], "points": 0})
    assert series_memo.recall(first) is None  # the least recently used went first
    series_memo.forget_all()
