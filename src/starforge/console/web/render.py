"""Turn a template name and its values into HTML: one Jinja2 environment, autoescaping every value.

Tier: shared (no database, no HTTP). The environment is built on first use and kept (templates compile once);
filters format what every page shows the same way: times in UTC, durations, byte sizes.
"""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .assets import asset_url

if TYPE_CHECKING:
    from jinja2 import Environment

__all__ = ["render", "span_text"]

TEMPLATES = Path(__file__).resolve().parent / "templates"
_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def _when(epoch: float | None) -> str:
    if not epoch:
        return "—"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(float(epoch)))


def span_text(seconds: float) -> str:
    """Return a span of time as every page words it: "3 d 4 h", "1 h 02 min", "12 min 05 s", "45 s"."""
    whole = max(0, int(seconds))
    days, rest = divmod(whole, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes:02d} min"
    return f"{minutes} min {secs:02d} s" if minutes else f"{secs} s"


def _duration(seconds: float | None) -> str:
    return "—" if seconds is None or seconds < 0 else span_text(seconds)


def _size(count: float | None) -> str:
    if count is None:
        return "—"
    value, step = float(count), 0
    while value >= 1024 and step < len(_UNITS) - 1:
        value, step = value / 1024, step + 1
    return f"{value:.0f} B" if step == 0 else f"{value:.1f} {_UNITS[step]}"


@functools.cache
def _environment() -> Environment:
    # on the first page, not at import: the API never needs Jinja2
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=True, undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True, auto_reload=False)
    env.filters.update(when=_when, duration=_duration, size=_size)
    env.globals.update(asset=asset_url)
    return env


def render(template: str, **values: Any) -> str:
    """Return the page `template` (a file under `templates/`) rendered with `values`, every value escaped."""
    return _environment().get_template(template).render(**values)
