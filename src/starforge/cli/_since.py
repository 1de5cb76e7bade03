"""`--since` values: a duration back from now (`90s`, `30m`, `2h`, `3d`, `1w`) or a date/time (`2026-12-01`,
`2026-12-01T14:30`, local time unless it names its zone), read into epoch seconds."""

from __future__ import annotations

import re
import time
from datetime import datetime

from starforge.cli._output import EXIT_USAGE, Output

__all__ = ["parse_duration", "parse_since"]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")


def parse_duration(text: str) -> float | None:
    """Return the seconds a duration such as `90s`, `30m`, `2h`, `3d` or `1w` names, or None for anything else."""
    found = _DURATION.fullmatch(text.strip().lower())
    return float(found.group(1)) * _UNITS[found.group(2)] if found else None


def parse_since(text: str, out: Output, now: float | None = None) -> float:
    """Return the epoch seconds `text` names; a value that is neither a duration nor a date exits with a usage error."""
    seconds = parse_duration(text)
    if seconds is not None:
        return (now if now is not None else time.time()) - seconds
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        out.abort(f"--since {text!r} is neither a duration nor a date",
                  hint="use a duration such as 30m, 2h, 3d or 1w, or a date such as 2026-12-01", code=EXIT_USAGE)
    return moment.timestamp()
