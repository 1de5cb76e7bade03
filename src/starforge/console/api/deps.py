"""Request dependencies: the runtime and the authenticated account (bearer token)."""

from __future__ import annotations

from fastapi import Request

from ..runtime import Runtime
from ..services import accounts
from ..services.accounts import UserView
from ..services.errors import AuthRequired, Forbidden

__all__ = ["current_admin", "current_user", "runtime"]


def runtime(request: Request) -> Runtime:
    """Return the console runtime."""
    rt: Runtime = request.app.state.runtime
    return rt


def bearer_token(request: Request) -> str:
    """Return the bearer token of the request, or raise AuthRequired."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise AuthRequired("authentication required: log in with `sf login` (登录)")
    return token.strip()


def current_user(request: Request) -> UserView:
    """Return the account behind the bearer token (401 when missing, invalid, expired or disabled)."""
    rt = runtime(request)
    token = bearer_token(request)
    with rt.db.read() as db:
        return accounts.authenticate(db, token)


def current_admin(request: Request) -> UserView:
    """Return the caller if it is an administrator (403 otherwise)."""
    user = current_user(request)
    if not user.is_admin:
        raise Forbidden("administrators only")
    return user
