"""Sweep rows: make a sweep under a fresh id, claim the sweeps a batch of submissions names (made on first sight),
find one the caller may see, and read the parallel limits the scheduler applies.

Tier: query (runs over the caller's session, in the caller's transaction; never begins or commits one). Sweep ids are
per account (the table is keyed by account and id): two accounts may use the same client-chosen id without meeting,
and a sweep of another account does not exist for the caller (`find_sweep` answers NotFound).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from sqlalchemy import select, tuple_
from sqlalchemy.orm import Session

from ...store.models import Sweep
from ..accounts import roles
from ..accounts.credentials import UserView
from ..errors import NotFound

__all__ = ["SweepKey", "claim_sweeps", "find_sweep", "new_sweep", "sweep_id_of", "sweep_limits"]

SweepKey = tuple[int, str]  # (account id, sweep id): what names one sweep

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def sweep_id_of(meta: Mapping[str, Any]) -> str:
    """Return the sweep id a submission's meta names (`sweep_id`, checked by `read_meta`), or ""."""
    value = meta.get("sweep_id")
    return value if isinstance(value, str) else ""


def new_sweep(db: Session, *, user_id: int, exp: str, profile: str, max_parallel: int,
              points: Sequence[Mapping[str, Any]]) -> Sweep:
    """Add a sweep named like the official client's, `sweep-<exp basename>-<YYYYmmdd-HHMMSS>` (UTC), with `-2`,
    `-3`… when the account already has that id; `points` are the `{param: value}` of its runs, in order."""
    base = _UNSAFE.sub("-", exp.rstrip("/").rsplit("/", 1)[-1]).strip("-.") or "exp"
    stem = f"sweep-{base[:100]}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"
    sweep_id, number = stem, 1
    while db.get(Sweep, (sweep_id, user_id)) is not None:
        number += 1
        sweep_id = f"{stem}-{number}"
    keys = list(dict.fromkeys(key for point in points for key in point))
    sweep = Sweep(id=sweep_id, user_id=user_id, exp=exp, profile=profile, max_parallel=max_parallel,
                  keys_json=json.dumps(keys), points_json=json.dumps([dict(p) for p in points], default=str),
                  created_at=time.time())
    db.add(sweep)
    return sweep


def claim_sweeps(db: Session, wanted: Sequence[tuple[int, str, str, str]]) -> dict[SweepKey, Sweep]:
    """Return the sweep rows named by `(user_id, sweep_id, exp, profile)` submissions ("" ids skipped), keyed by
    (user_id, sweep_id), adding those the account has not used before (no parallel limit: the official client has
    none)."""
    named = {(user_id, sweep_id) for user_id, sweep_id, _exp, _profile in wanted if sweep_id}
    if not named:
        return {}
    found = {(row.user_id, row.id): row
             for row in db.scalars(select(Sweep).where(tuple_(Sweep.user_id, Sweep.id).in_(list(named))))}
    for user_id, sweep_id, exp, profile in wanted:
        if sweep_id and (user_id, sweep_id) not in found:
            found[(user_id, sweep_id)] = Sweep(id=sweep_id, user_id=user_id, exp=exp, profile=profile, max_parallel=0,
                                               keys_json="[]", points_json="[]", created_at=time.time())
            db.add(found[(user_id, sweep_id)])
    return found


def find_sweep(db: Session, user: UserView, sweep_id: str) -> Sweep:
    """Return the caller's sweep of that id (for an administrator without one of its own: the newest of any
    account's); NotFound otherwise (never 403, and never a hint that another account has one)."""
    wanted = (sweep_id or "").strip()
    sweep = db.get(Sweep, (wanted, user.id))
    if sweep is None and roles.sees_all_jobs(user):
        sweep = db.scalars(select(Sweep).where(Sweep.id == wanted).order_by(Sweep.created_at.desc())).first()
    if sweep is None:
        raise NotFound(f"no sweep {sweep_id!r} (see `sf sweep ls`)")
    return sweep


def sweep_limits(db: Session, sweeps: Collection[SweepKey]) -> dict[SweepKey, int]:
    """Return the parallel limit of each of `sweeps` (account id, sweep id) that has one (no query when there are
    none)."""
    if not sweeps:
        return {}
    rows = db.execute(select(Sweep.user_id, Sweep.id, Sweep.max_parallel).where(
        tuple_(Sweep.user_id, Sweep.id).in_(list(sweeps)), Sweep.max_parallel > 0))
    return {(user_id, sweep_id): limit for user_id, sweep_id, limit in rows}
