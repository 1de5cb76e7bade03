"""`Notify`: the webhooks of your account on one console (`/api/notify`): add one (its signing secret is answered
once), list, remove, read the delivery log; and `verify_webhook`, a receiver's check of a request's signature."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from typing import Any

from ..wire.webhook_signature import verify
from ._http import Http, query

__all__ = ["Notify", "verify_webhook"]


def verify_webhook(secret: str, signature: str, body: bytes, *, tolerance: float = 300.0) -> bool:
    """Return whether `signature` (the `X-StarForge-Signature` header) signs the raw request `body` under the hook's
    `secret` (`whsec_…`) and was made within `tolerance` seconds (a replay older than that is refused)."""
    return verify(secret, signature, body, tolerance=tolerance)


class Notify:
    """The caller's webhooks on one console (reached as `Console.notify`).

    http: the console's HTTP seam; bearer: returns the token of each request (refreshed by `Console`).
    """

    def __init__(self, http: Http, bearer: Callable[[], str]) -> None:
        self._request, self._bearer = http.request, bearer

    def _call(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        return self._request(method, path, token=self._bearer(), json_body=body)

    def add(self, url: str, events: Sequence[str] | None = None) -> dict[str, Any]:
        """Add a webhook POSTing your jobs' `events` (default: succeeded, failed, preempted) to `url`; return
        `{id, url, events, secret_prefix, created_at, secret}`, `secret` (`whsec_…`) shown this once. Raises
        `Rejected` with problems at `url` (a private, loopback, metadata or console address) or `events`."""
        body: dict[str, Any] = {"url": url}
        if events is not None:
            body["events"] = list(events)
        return self._call("POST", "/api/notify/hooks", body)

    def list(self) -> builtins.list[dict[str, Any]]:
        """Return your webhooks: `[{id, url, events, secret_prefix, created_at, deliveries: {pending, …}}]`."""
        rows = self._call("GET", "/api/notify/hooks").get("hooks")
        return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []

    def remove(self, hook_id: int | str) -> dict[str, Any]:
        """Remove one of your webhooks (another account's raises `NotFound`): `{id, url, removed}`."""
        return self._call("DELETE", f"/api/notify/hooks/{int(hook_id)}")

    def log(self, hook_id: int | str | None = None, *, limit: int = 50) -> builtins.list[dict[str, Any]]:
        """Return your deliveries (of one webhook when given), newest first: `[{id, hook_id, job_ref, event, state,
        attempts, next_at, last_status, last_error, tries: [{number, at, status_code, error, next_at}]}]`."""
        hook = int(hook_id) if hook_id is not None else None
        rows = self._call("GET", "/api/notify/deliveries" + query(hook=hook, limit=limit)).get("deliveries")
        return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []
