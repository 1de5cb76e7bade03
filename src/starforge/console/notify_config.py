"""The `notify:` key of the console configuration (webhooks), read and checked once: a bad value stops the console at
start, with its key named.

    notify:  {allow_hosts: ["127.0.0.1"], retry_seconds: [10, 30, 120, 600, 3600], timeout_seconds: 5,
              max_hooks: 20, poll_seconds: 1, keep_deliveries: 1000}
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass
from typing import Any

__all__ = ["NotifySettings", "read_notify"]

_KEYS = {"allow_hosts", "retry_seconds", "timeout_seconds", "max_hooks", "poll_seconds", "keep_deliveries"}
_EXAMPLE = '{allow_hosts: ["127.0.0.1"], retry_seconds: [10, 30, 120, 600, 3600]}'


@dataclass(frozen=True)
class NotifySettings:
    """Webhooks: the addresses (or networks) a hook may reach although they are private or loopback (none: only
    public addresses), the pauses between a delivery's attempts (its length + 1 attempts, then it gives up), each
    attempt's timeout, the hooks one account may hold, how often the sender looks for due deliveries, and how many
    finished deliveries (delivered or failed) the log keeps per hook, the newest (pending ones are always kept)."""

    allow_hosts: tuple[str, ...] = ()
    retry_seconds: tuple[float, ...] = (10.0, 30.0, 120.0, 600.0, 3600.0)
    timeout_seconds: float = 5.0
    max_hooks: int = 20
    poll_seconds: float = 1.0
    keep_deliveries: int = 1000

    @property
    def max_attempts(self) -> int:
        """Return how many times one delivery is tried before it gives up."""
        return len(self.retry_seconds) + 1


def _positive(key: str, value: Any, *, zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or \
            value < 0 or (value == 0 and not zero):
        raise ValueError(f"notify.{key}: must be a {'non-negative' if zero else 'positive'} number, not {value!r}")
    return float(value)


def _networks(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError('notify.allow_hosts: must be a list of addresses or networks, e.g. ["127.0.0.1"]')
    for item in value:
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise ValueError(f"notify.allow_hosts: {item!r} is not an address or a network "
                             '(e.g. "127.0.0.1" or "10.1.0.0/16")') from None
    return tuple(value)


def read_notify(raw: Any) -> NotifySettings:
    """Return `notify:` read (ValueError naming the key when a value is wrong)."""
    if raw is None:
        return NotifySettings()
    if not isinstance(raw, dict):
        raise ValueError(f"notify: must be a mapping, e.g. {_EXAMPLE}")
    unknown = sorted(set(map(str, raw)) - _KEYS)
    if unknown:
        raise ValueError(f"notify: unknown keys {', '.join(unknown)} (known: {', '.join(sorted(_KEYS))})")
    defaults = NotifySettings()
    retry = raw.get("retry_seconds", list(defaults.retry_seconds))
    if not isinstance(retry, list) or len(retry) > 20:
        raise ValueError("notify.retry_seconds: must be a list of at most 20 pauses in seconds, e.g. [10, 30, 120]")
    hooks = raw.get("max_hooks", defaults.max_hooks)
    if isinstance(hooks, bool) or not isinstance(hooks, int) or not 1 <= hooks <= 1000:
        raise ValueError(f"notify.max_hooks: must be a whole number from 1 to 1000, not {hooks!r}")
    keep = raw.get("keep_deliveries", defaults.keep_deliveries)
    if isinstance(keep, bool) or not isinstance(keep, int) or not 1 <= keep <= 1_000_000:
        raise ValueError(f"notify.keep_deliveries: must be a whole number from 1 to 1000000, not {keep!r}")
    return NotifySettings(
        allow_hosts=_networks(raw.get("allow_hosts", [])),
        retry_seconds=tuple(_positive("retry_seconds", v, zero=True) for v in retry),
        timeout_seconds=_positive("timeout_seconds", raw.get("timeout_seconds", defaults.timeout_seconds)),
        max_hooks=hooks,
        poll_seconds=_positive("poll_seconds", raw.get("poll_seconds", defaults.poll_seconds)),
        keep_deliveries=keep,
    )
