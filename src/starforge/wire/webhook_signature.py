"""How a webhook request is signed, for the console that signs and the receivers that check (standard library only).

The header `X-StarForge-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" under the hook's secret>`
binds the body to the time it was sent, so a receiver refuses a replay older than its tolerance; comparing in
constant time (`verify`) is the receiver's half.
"""

from __future__ import annotations

import hashlib
import hmac
import time

__all__ = ["DELIVERY_HEADER", "EVENT_HEADER", "SECRET_PREFIX", "SIGNATURE_HEADER", "sign", "verify"]

SIGNATURE_HEADER = "X-StarForge-Signature"
EVENT_HEADER = "X-StarForge-Event"
DELIVERY_HEADER = "X-StarForge-Delivery"  # the delivery's id: the same on every retry, for idempotent receivers
SECRET_PREFIX = "whsec_"


def _digest(secret: str, timestamp: int, body: bytes) -> str:
    return hmac.new(secret.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256).hexdigest()


def sign(secret: str, body: bytes, timestamp: int) -> str:
    """Return the signature header's value of `body` sent at `timestamp` (unix seconds) under `secret`."""
    return f"t={timestamp},v1={_digest(secret, timestamp, body)}"


def verify(secret: str, header: str, body: bytes, *, tolerance: float = 300.0, now: float | None = None) -> bool:
    """Return whether `header` signs `body` under `secret` and was made within `tolerance` seconds of `now`."""
    parts = dict(item.split("=", 1) for item in header.split(",") if "=" in item)
    try:
        timestamp = int(parts.get("t", ""))
    except ValueError:
        return False
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance:
        return False
    return hmac.compare_digest(parts.get("v1", ""), _digest(secret, timestamp, body))
