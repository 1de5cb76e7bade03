"""Pure pieces of `sf job` rendering: sparkline charts and ages."""

from __future__ import annotations

from starforge.cli._job_text import age
from starforge.cli.cmd_job import sparkline


def test_sparkline_spans_the_range() -> None:
    assert sparkline([0, 1, 2, 3, 4, 5, 6, 7]) == "▁▂▃▄▅▆▇█"
    assert sparkline([3, 3, 3]) == "▅▅▅"
    assert sparkline([]) == ""
    assert sparkline([float("nan"), 1.0, float("inf"), 2.0]) == "▁█"


def test_sparkline_is_averaged_down_to_its_width() -> None:
    line = sparkline([float(i) for i in range(1000)], width=20)
    assert len(line) == 20 and line[0] == "▁" and line[-1] == "█"


def test_sparkline_ascii() -> None:
    assert sparkline([0, 7], ascii_only=True) == "_@"


def test_age() -> None:
    assert age(None) == "-"
    assert age(100, now=142) == "42s ago"
    assert age(0, now=3 * 3600 + 5) == "3h ago"
    assert age(0, now=2 * 86400) == "2d ago"
