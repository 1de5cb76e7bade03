"""The role policy: what an account may do, decided from its role in exactly one place.

Tier: shared (pure; no database). Roles (wire-protocol §5.2): `admin` does everything and sees every account's
jobs and data; `operator` is an ordinary user that submits and controls its own jobs and namespace; `viewer` reads
only. Writes are granted by an allowlist, so a role this module does not know can read and nothing more.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .view import UserView

__all__ = [
    "ADMIN",
    "OPERATOR",
    "ROLES",
    "VIEWER",
    "acts_for",
    "can_admin",
    "can_publish",
    "can_see_job",
    "can_stop",
    "can_submit",
    "sees_all_data",
    "sees_all_jobs",
]

ADMIN = "admin"
OPERATOR = "operator"
VIEWER = "viewer"
ROLES = (ADMIN, OPERATOR, VIEWER)
_WRITERS = frozenset({ADMIN, OPERATOR})


def can_admin(user: UserView) -> bool:
    """Return True when `user` may use the administrator API (accounts, roles, quotas, data registration)."""
    return user.role == ADMIN


def sees_all_jobs(user: UserView) -> bool:
    """Return True when `user` sees and controls every account's jobs, not only its own."""
    return user.role == ADMIN


def sees_all_data(user: UserView) -> bool:
    """Return True when `user` may read every registered data asset, whatever its visibility and grants."""
    return user.role == ADMIN


def can_see_job(user: UserView, owner_id: int) -> bool:
    """Return True when `user` may see (and, with the matching write right, act on) a job owned by `owner_id`."""
    return owner_id == user.id or sees_all_jobs(user)


def can_submit(user: UserView) -> bool:
    """Return True when `user` may submit jobs."""
    return user.role in _WRITERS


def can_stop(user: UserView) -> bool:
    """Return True when `user` may stop the jobs it can see."""
    return user.role in _WRITERS


def can_publish(user: UserView) -> bool:
    """Return True when `user` may publish or change plugins (in a namespace it acts for)."""
    return user.role in _WRITERS


def acts_for(user: UserView, namespace: str) -> bool:
    """Return True when `user` may act in `namespace`: its own username, or any namespace for an administrator."""
    return namespace == user.username or can_admin(user)
