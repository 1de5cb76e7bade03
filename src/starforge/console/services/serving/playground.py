"""The official client's `/api/playground/*` shapes (wire-protocol §12) over the same services as `/api/services`.

Tier: use case (each call is one of `lifecycle`'s). A playground `run_id` is the service id; times are ISO 8601
in UTC, which the official client parses for `sf serve ls/start/extend`; no TCP port is ever exposed (`port` 0).
"""

from __future__ import annotations

import datetime
from typing import Any

from ....contract import Problem
from ..accounts.credentials import UserView
from ..context import Runtime
from ..errors import Rejected
from ..outcome import Outcome
from . import lifecycle

__all__ = ["extend", "iso", "listing", "start", "stop"]


def iso(epoch: float) -> str:
    """Return an epoch time as ISO 8601 in UTC."""
    return datetime.datetime.fromtimestamp(epoch, tz=datetime.UTC).isoformat(timespec="seconds")


def _seconds(body: Any, key: str) -> float | None:
    value = body.get(key) if isinstance(body, dict) else None
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Rejected("Invalid request", [Problem(key, "invalid_request", f"{key} must be a number of seconds",
                                                   f'e.g. {{"{key}": 3600}}')], status=422)
    return float(value)


def start(rt: Runtime, *, user: UserView, body: dict[str, Any]) -> Outcome:
    """`POST /api/playground/start` `{model, gpus, ttl_s?}` → `{run_id, model, port, expires_at}` (202)."""
    ttl_s = _seconds(body, "ttl_s")
    ask = {"model": body.get("model"), "gpus": body.get("gpus", 0) or 0}
    if ttl_s is not None:
        ask["ttl_hours"] = ttl_s / 3600.0
    outcome = lifecycle.start(rt, user=user, body=ask)
    view = outcome.body
    return Outcome(outcome.status_code, {"run_id": view["id"], "model": view["model"], "port": 0,
                                         "expires_at": iso(view["expires_at"]), "status": view["status"],
                                         "url": view["url"]})


def listing(rt: Runtime, *, user: UserView) -> dict[str, Any]:
    """`GET /api/playground` → `{"servings": [{run_id, status, gpus, model, expires_at}]}`."""
    services = lifecycle.list_services(rt, user=user)["services"]
    return {"servings": [{"run_id": s["id"], "status": s["status"], "gpus": s["gpus"], "model": s["model"],
                          "expires_at": iso(s["expires_at"])} for s in services]}


def stop(rt: Runtime, *, user: UserView, run_id: str) -> dict[str, Any]:
    """`POST /api/playground/{run_id}/stop`."""
    view = lifecycle.stop(rt, user=user, service_id=run_id)
    return {"run_id": view["id"], "stopped": True, "status": view["status"]}


def extend(rt: Runtime, *, user: UserView, run_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """`POST /api/playground/{run_id}/extend` `{extra_s}` → `{expires_at}`."""
    extra = _seconds(body, "extra_s")
    view = lifecycle.extend(rt, user=user, service_id=run_id, body={} if extra is None else {"hours": extra / 3600.0})
    return {"run_id": view["id"], "expires_at": iso(view["expires_at"])}
