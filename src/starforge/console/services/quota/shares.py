"""Fair-share usage in the store (placeholder until the fair-share branch lands: charge only).

Tier: query.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy.orm import Session

from ...store.models import ShareUsage

__all__ = ["charge"]


def charge(db: Session, user_id: int, series_gpus: Mapping[str, int], seconds: float, *, now: float,
           half_life: float) -> None:
    """Add gpus × seconds to the account's decayed usage of each series (decayed to `now` first)."""
    for series, gpus in series_gpus.items():
        row = db.get(ShareUsage, (user_id, series))
        if row is None:
            row = ShareUsage(user_id=user_id, series=series, gpu_seconds=0.0, at=now)
            db.add(row)
        row.gpu_seconds = row.gpu_seconds * 0.5 ** (max(0.0, now - row.at) / half_life) + gpus * seconds
        row.at = now
