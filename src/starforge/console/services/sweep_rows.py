"""Sweep rows: make a sweep under a fresh id, claim the sweeps a batch of submissions names (made on first sight,
owned by their first submitter), find one the caller may see, and read the parallel limits the scheduler applies.

Tier: query (runs over the caller's session, in the caller's transaction; never begins or commits one). A sweep of
another account does not exist for the caller: `find_sweep` answers NotFound, and a submission naming it is
answered with `foreign_sweep`.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ...contract import Problem, render_problems
from ..store.models import Sweep
from . import roles
from .accounts import UserView
from .errors import NotFound
from .outcome import Outcome

__all__ = ["claim_sweeps", "find_sweep", "foreign_sweep", "new_sweep", "sweep_id_of", "sweep_limits"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def sweep_id_of(meta: Mapping[str, Any]) -> str:
    """Return the sweep id a submission's meta names (`sweep_id`, checked by `read_meta`), or ""."""
    value = meta.get("sweep_id")
    return value if isinstance(value, str) else ""


def new_sweep(db: Session, *, user_id: int, exp: str, profile: str, max_parallel: int,
              points: Sequence[Mapping[str, Any]]) -> Sweep:
    """Add a sweep named like the official client's, `sweep-<exp basename>-<YYYYmmdd-HHMMSS>` (UTC), with `-2`,
    `-3`… when that id is taken; `points` are the `{param: value}` of its runs, in order."""
    base = _UNSAFE.sub("-", exp.rstrip("/").rsplit("/", 1)[-1]).strip("-.") or "exp"
    stem = f"sweep-{base[:100]}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"
    sweep_id, number = stem, 1
    while db.get(Sweep, sweep_id) is not None:
        number += 1
        sweep_id = f"{stem}-{number}"
    keys = list(dict.fromkeys(key for point in points for key in point))
    sweep = Sweep(id=sweep_id, user_id=user_id, exp=exp, profile=profile, max_parallel=max_parallel,
                  keys_json=json.dumps(keys), points_json=json.dumps([dict(p) for p in points], default=str),
                  created_at=time.time())
    db.add(sweep)
    return sweep


def claim_sweeps(db: Session, wanted: Sequence[tuple[int, str, str, str]]) -> dict[str, Sweep]:
    """Return the sweep rows named by `(user_id, sweep_id, exp, profile)` submissions ("" ids skipped), adding those
    not seen before, each owned by the first submitter naming it (no parallel limit: the official client has none)."""
    named = {sweep_id for _user, sweep_id, _exp, _profile in wanted if sweep_id}
    if not named:
        return {}
    found = {row.id: row for row in db.scalars(select(Sweep).where(Sweep.id.in_(named)))}
    for user_id, sweep_id, exp, profile in wanted:
        if sweep_id and sweep_id not in found:
            found[sweep_id] = Sweep(id=sweep_id, user_id=user_id, exp=exp, profile=profile, max_parallel=0,
                                    keys_json="[]", points_json="[]", created_at=time.time())
            db.add(found[sweep_id])
    return found


def foreign_sweep(sweep_id: str) -> Outcome:
    """Return the answer to a submission that names another account's sweep: 404, as for anything not yours."""
    problem = Problem("X-Forge-Meta.sweep_id", "meta_invalid", f"no sweep {sweep_id!r} of yours: it belongs to "
                      "another account", "sweep ids are per account: submit the sweep again (a new id is made)")
    title = "The submission was rejected"
    return Outcome(404, {"detail": render_problems(title, [problem]), "problems": [problem.to_dict()]})


def find_sweep(db: Session, user: UserView, sweep_id: str) -> Sweep:
    """Return the sweep the caller may see (own, or any for an administrator); NotFound otherwise (never 403)."""
    sweep = db.get(Sweep, (sweep_id or "").strip())
    if sweep is None or not roles.can_see_job(user, sweep.user_id):
        raise NotFound(f"no sweep {sweep_id!r} (see `sf sweep ls`)")
    return sweep


def sweep_limits(db: Session, sweep_ids: Collection[str]) -> dict[str, int]:
    """Return the parallel limit of each of `sweep_ids` that has one (no query when there are none)."""
    if not sweep_ids:
        return {}
    rows = db.execute(select(Sweep.id, Sweep.max_parallel).where(Sweep.id.in_(list(sweep_ids)),
                                                                  Sweep.max_parallel > 0))
    return {sweep_id: limit for sweep_id, limit in rows}
