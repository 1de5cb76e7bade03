"""The `mlflow:` key of the console configuration, read and checked once: which MLflow tracking servers this
console mirrors jobs' metrics to (a bad value stops the console at start, with its key named).

    mlflow:  {allow_hosts: [mlflow.lab.internal], allow_loopback: false, interval_seconds: 2, max_failures: 30,
              mirror_all: "http://mlflow.lab.internal:5000"}

Credentials for those servers are the operator's: MLflow's own environment variables of the console process
(`MLFLOW_TRACKING_TOKEN`, or `MLFLOW_TRACKING_USERNAME` and `MLFLOW_TRACKING_PASSWORD`); a job never supplies them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

__all__ = ["MlflowMirrorSettings", "NamedServer", "named_server", "read_mlflow_mirror"]

_KEYS = {"allow_hosts", "allow_loopback", "interval_seconds", "max_failures", "batch_points", "mirror_all"}
_EXAMPLE = "{allow_hosts: [mlflow.lab.internal], allow_loopback: false}"


@dataclass(frozen=True)
class MlflowMirrorSettings:
    """Mirroring to MLflow: off while `allow_hosts` is empty; a job whose observability URL names one of these hosts
    (`host` or `host:port`) gets its platform metrics mirrored there. Loopback addresses only with `allow_loopback`;
    link-local (cloud metadata) addresses never. With `mirror_all` (the operator's own tracking server, on
    `allow_hosts`) every job that names no observability URL of its own is mirrored there too: the jobs of platform
    recipes, which may not name one (JobSpec rule R3)."""

    allow_hosts: tuple[str, ...] = ()
    allow_loopback: bool = False
    interval_seconds: float = 2.0  # how often the mirror looks for new points and ended jobs
    max_failures: int = 30  # failed deliveries in a row after which a mirror gives up (shown to the owner)
    batch_points: int = 1000  # points per `log_batch` call (MLflow's own limit is 1000 metrics a call)
    mirror_all: str = ""  # the tracking URL of every job without one of its own ("" : only jobs that name one)

    @property
    def on(self) -> bool:
        """Return True when some MLflow host is allowed."""
        return bool(self.allow_hosts)


def read_mlflow_mirror(raw: Any) -> MlflowMirrorSettings:
    """Return `mlflow:` read (ValueError naming the key when a value is wrong)."""
    if raw is None:
        return MlflowMirrorSettings()
    if not isinstance(raw, dict):
        raise ValueError(f"mlflow: must be a mapping such as {_EXAMPLE}")
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise ValueError(f"mlflow.{unknown[0]}: unknown key (known: {', '.join(sorted(_KEYS))})")
    hosts = raw.get("allow_hosts", [])
    if not isinstance(hosts, list) or not all(isinstance(h, str) and h.strip() for h in hosts):
        raise ValueError(f"mlflow.allow_hosts: must be a list of host names, e.g. {_EXAMPLE}")
    loopback = raw.get("allow_loopback", False)
    if not isinstance(loopback, bool):
        raise ValueError("mlflow.allow_loopback: must be true or false")
    interval = raw.get("interval_seconds", 2.0)
    if isinstance(interval, bool) or not isinstance(interval, int | float) or not math.isfinite(interval) \
            or interval <= 0:
        raise ValueError(f"mlflow.interval_seconds: must be a positive number of seconds, not {interval!r}")
    counts = {}
    for key, default, top in (("max_failures", 30, 10_000), ("batch_points", 1000, 1000)):
        value = raw.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
            raise ValueError(f"mlflow.{key}: must be a whole number from 1 to {top}, not {value!r}")
        counts[key] = value
    allowed = tuple(h.strip().lower() for h in hosts)
    return MlflowMirrorSettings(allow_hosts=allowed, allow_loopback=loopback, interval_seconds=float(interval),
                                mirror_all=_mirror_all(raw.get("mirror_all", ""), allowed), **counts)


@dataclass(frozen=True)
class NamedServer:
    """An MLflow server a URL names: scheme, host (lower case), port, and the URL's path."""

    scheme: str
    host: str
    port: int
    netloc: str
    path: str


def named_server(url: str, allow_hosts: tuple[str, ...]) -> tuple[NamedServer | None, str]:
    """Return the MLflow server `url` names when it is an http(s) URL with a host, no credentials, and its host (or
    `host:port`) is on `allow_hosts`; else None and why not. Names only: resolving the host is the caller's."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None, "the URL is not a valid URL"
    host = (parts.hostname or "").lower()
    if parts.scheme not in ("http", "https") or not host:
        return None, "the URL is not an http(s) URL with a host"
    if parts.username or parts.password:
        return None, "credentials in the URL are never used: the operator configures them"
    if not {host, f"{host}:{port}"} & set(allow_hosts):
        return None, f"{host} is not an MLflow server this console mirrors to (mlflow.allow_hosts)"
    return NamedServer(parts.scheme, host, port, parts.netloc.rsplit("@", 1)[-1], parts.path), ""


def _mirror_all(value: Any, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str):
        raise ValueError('mlflow.mirror_all: must be the URL of an MLflow tracking server, e.g. '
                         '"http://mlflow.lab.internal:5000"')
    url = value.strip()
    if not url:
        return ""
    server, why = named_server(url, allowed)
    if server is None:
        raise ValueError(f"mlflow.mirror_all: {url!r}: {why}")
    return url
