"""How `sf serve` says a service in words: its table row, its expiry, and how to point an OpenAI client at it.

Pure text from the service objects the console serves (`GET /api/services`); a field a console does not send is
shown as `-`, never guessed.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

__all__ = ["SERVICE_HEADERS", "KEY_HEADERS", "connect_text", "epoch_of", "expires_text", "key_rows", "service_rows",
           "when_text"]

SERVICE_HEADERS = ("id", "model", "status", "gpus", "expires", "run")
KEY_HEADERS = ("id", "name", "prefix", "created", "revoked")


def epoch_of(value: Any) -> float | None:
    """Return a time the console sent (epoch seconds, or ISO-8601 with `Z` or naive = UTC) as epoch seconds."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and value.strip():
        try:
            parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
        return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()
    return None


def when_text(value: Any) -> str:
    """Return a time as `2026-12-03 14:05 UTC`, or `-`."""
    epoch = epoch_of(value)
    return "-" if epoch is None else time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(epoch))


def expires_text(service: Mapping[str, Any], now: float | None = None) -> str:
    """Return when a service stops itself: `in 42m`, `in 3h 05m`, `expired`; `-` once it stopped or when unknown."""
    if str(service.get("status") or "") in ("stopped", "failed"):
        return "-"
    epoch = epoch_of(service.get("expires_at"))
    if epoch is None:
        return "-"
    left = int(epoch - (time.time() if now is None else now))
    if left <= 0:
        return "expired"
    hours, rest = divmod(left, 3600)
    minutes = rest // 60
    return f"in {hours}h {minutes:02d}m" if hours else (f"in {minutes}m" if minutes else f"in {left}s")


def _text(value: Any) -> str:
    return "-" if value is None or value == "" else str(value)


def service_rows(services: Sequence[Mapping[str, Any]], now: float | None = None) -> list[list[str]]:
    """Return the rows of the `sf serve ls` table (SERVICE_HEADERS), in the console's order."""
    return [[_text(s.get("id")), _text(s.get("model")), _text(s.get("status")), _text(s.get("gpus")),
             expires_text(s, now), _text(s.get("run_id"))] for s in services]


def key_rows(keys: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    """Return the rows of the `sf serve key ls` table (KEY_HEADERS)."""
    return [[_text(k.get("id")), _text(k.get("name")), _text(k.get("prefix")) + "…", when_text(k.get("created_at")),
             when_text(k.get("revoked_at")) if k.get("revoked_at") else ""] for k in keys]


def connect_text(server: str, service: Mapping[str, Any]) -> str:
    """Return how to point the `openai` client at a service: its base URL, what the key is, a snippet to paste."""
    sid = str(service.get("id") or "")
    path = str(service.get("url") or f"/api/services/{sid}/v1")
    base_url = path if path.startswith(("http://", "https://")) else server.rstrip("/") + path
    return "\n".join([
        f"base_url  {base_url}",
        f"api_key   your StarForge API token, or a key of this service (`sf serve key add {sid}`)",
        "",
        "  from openai import OpenAI",
        f'  client = OpenAI(base_url="{base_url}", api_key="<token or sfk-… key>")',
        '  reply = client.chat.completions.create(model=client.models.list().data[0].id,',
        '                                         messages=[{"role": "user", "content": "Hello"}])',
        "  print(reply.choices[0].message.content)",
    ])
