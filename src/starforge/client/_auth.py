"""Token login, refresh with rotation and logout (wire-protocol §4.2, §4.6)."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx

from ._config import Credentials, ForgeHome, normalise_server
from ._errors import AuthError, ConsoleError, Unavailable
from ._http import Http
from ._models import User

__all__ = ["login_with_token", "logout", "refresh"]

_REFRESH_RETRIES = (1.5, 3.0)  # a 429 on refresh is retried twice, after these pauses
_EXPIRED = "your session on {server} has expired"


def refresh(
    http: Http,
    credentials: Credentials,
    *,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> Credentials:
    """Exchange the refresh token for new credentials (keeping the old refresh token unless a new one comes).

    A 429 is retried twice; any other failure raises `AuthError` (the session counts as logged out), except an
    unreachable console, which raises `Unavailable`.
    """
    message = _EXPIRED.format(server=http.base)
    if not credentials.refresh_token:
        raise AuthError(message, hint="run `sf login` to log in again")
    pauses = list(_REFRESH_RETRIES)
    while True:
        response = http.send(
            "POST",
            "/api/auth/refresh",
            json_body={"refresh_token": credentials.refresh_token},
            read_timeout=http.timeouts.auth,
        )
        if response.status_code == 429 and pauses:
            sleep(pauses.pop(0))
            continue
        break
    if response.status_code == 429 or response.status_code >= 500:
        raise Unavailable(f"{message} and the console could not refresh it now (HTTP {response.status_code})",
                          status=response.status_code, hint="try again in a moment")
    try:
        body = http.object_of(response)
    except ConsoleError as exc:
        raise AuthError(f"{message}\n{exc.title}", status=exc.status, hint="run `sf login` to log in again") from exc
    if not isinstance(body.get("access_token"), str) or not body["access_token"]:
        raise AuthError(f"{message}: the refresh answer carried no access token", hint="run `sf login` to log in again")
    return Credentials.from_token_response(body, clock(), previous=credentials)


def login_with_token(
    server: str, token: str, *, transport: httpx.BaseTransport | None = None
) -> Credentials:
    """Check a service token with `GET /api/whoami` and return credentials that never expire.

    Any HTTP error means the token is invalid (`AuthError`); an unreachable console raises `Unavailable`.
    """
    token = token.strip()
    if not token:
        raise AuthError("the token is empty", hint="pass --token with an API token from the console")
    http = Http(normalise_server(server), transport=transport)
    try:
        body = http.request("GET", "/api/whoami", token=token, read_timeout=http.timeouts.auth)
    except Unavailable as exc:
        if exc.status is None:
            raise
        raise AuthError(f"the console could not check the token now\n{exc.title}", status=exc.status) from exc
    except ConsoleError as exc:
        raise AuthError(
            f"invalid token for {http.base}\n{exc.title}",
            status=exc.status,
            hint="create a new API token in the console and pass it with --token",
        ) from exc
    finally:
        http.close()
    user = User.from_body(body)
    return Credentials(access_token=token, user=dict(user.raw) or {"username": user.username})


def logout(
    server: str | None = None, *, home: ForgeHome | None = None, transport: httpx.BaseTransport | None = None
) -> Credentials | None:
    """Revoke the stored refresh token (errors ignored) and delete the local entry; return what was removed."""
    home = home or ForgeHome.from_env()
    server = home.resolve_server(server)
    stored = home.credentials(server)
    if stored is not None and stored.refresh_token:
        http = Http(server, transport=transport)
        try:
            http.send("POST", "/api/auth/logout", json_body={"refresh_token": stored.refresh_token},
                      read_timeout=http.timeouts.auth)
        except ConsoleError:
            pass
        finally:
            http.close()
    return home.forget(server)
