"""Answer a scrape of `/metrics`: only an administrator's API (or access) token or a scrape token is accepted; the
text is computed on the spot (`exposition`, loaded on the first scrape).

Tier: use case (authentication reads the account cache or the database in its own read transaction).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..accounts import credentials, roles
from ..errors import Forbidden

if TYPE_CHECKING:
    from ..context import Runtime  # the runtime holds this package's `Observations`: no import at run time

__all__ = ["Scraped", "scrape"]


@dataclass(frozen=True)
class Scraped:
    """The metrics text and its content type."""

    body: bytes
    content_type: str


def _authorize(rt: Runtime, token: str) -> None:
    user = rt.accounts.cached_user(token)
    if user is None:
        with rt.db.read() as db:
            if credentials.authenticate_scrape(db, token) is not None:
                return
        user = rt.accounts.user(token)  # AuthRequired (401) for anything that is no API token either
    if not roles.can_admin(user):
        raise Forbidden("metrics are for administrators: send an administrator's API token or a scrape token "
                        "(`sf console token create --scrape --user admin`)")


def scrape(rt: Runtime, *, token: str) -> Scraped:
    """Return this console's metrics for the bearer `token`: AuthRequired (401) for an unknown, revoked or web session
    token, Forbidden (403) for a token of an account that is no administrator. Blocking: call it in the threadpool."""
    _authorize(rt, token)
    from .exposition import CONTENT_TYPE, render

    return Scraped(render(rt), CONTENT_TYPE)
