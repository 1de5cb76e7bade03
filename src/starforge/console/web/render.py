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

__all__ = ["render"]

TEMPLATES = Path(__file__).resolve().parent / "templates"
_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def _when(epoch: float | None) -> str:
    if not epoch:
        return "—"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(float(epoch)))


def _duration(seconds: float | None) -> str:
    if seconds is None or seconds < 0:
        return "—"
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h {minutes:02d}m" if hours else (f"{minutes}m {secs:02d}s" if minutes else f"{secs}s")


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
