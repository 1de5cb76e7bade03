"""Web sessions: sign in with an API token, the session's CSRF token, sign out — and which cookie a browser keeps.

Tier: use case (the session itself is `logins.start_web_session`/`end_web_session`, which own their transactions).
Signing in checks the typed token exactly as the API checks a bearer token, then issues a browser session of its
own kind (`web`), kept in an HttpOnly, SameSite=Strict cookie; the console stores only its hash. A session opens the
web console's pages (their forms with its CSRF token) and nothing else: every `/api/*` route refuses it, because a
browser hands the cookies of a host to every port of that host. Over HTTPS the cookie is `__Host-sf_session`
(Secure, Path=/, no Domain), over plain HTTP it is `sf_session`. The sign-in form is refused when a browser says it
was sent from another origin. The CSRF token of a session is an HMAC of its secret: no storage, and it dies with it.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from urllib.parse import urlsplit

from ..services.accounts import logins
from ..services.accounts.credentials import UserView
from ..services.context import Runtime
from ..services.errors import Forbidden

__all__ = ["COOKIE", "SECURE_COOKIE", "SESSION_SECONDS", "Arrival", "SignedIn", "WebCaller", "check_csrf",
           "cookie_name", "csrf_token", "local_path", "origin_of", "reached_securely", "sign_in", "sign_out"]

COOKIE = "sf_session"  # over plain HTTP (loopback, a trusted network)
SECURE_COOKIE = "__Host-sf_session"  # over HTTPS: only ever set Secure, for this host, on every path
SESSION_SECONDS = 12 * 3600  # a working day; never longer than the deployment's refresh-token lifetime
_CSRF_CONTEXT = b"starforge web csrf v1"
_DEFAULT_PORTS = {"http": 80, "https": 443}
_SAME = ("same-origin", "none")  # Sec-Fetch-Site values of a form sent from this console (or typed by its user)


@dataclass(frozen=True)
class WebCaller:
    """Who a web request comes from: the account, and the session secret of its cookie ("" for a bearer token)."""

    user: UserView
    session: str = ""

    @property
    def csrf(self) -> str:
        """Return the CSRF token the pages of this session embed in their forms ("" for a bearer caller)."""
        return csrf_token(self.session) if self.session else ""


@dataclass(frozen=True)
class Arrival:
    """Where a browser request comes from: the client's address, whether the console is reached over HTTPS, the
    `Origin` and `Sec-Fetch-Site` the browser sent ("" when absent) and the origins this console answers as."""

    client: str
    secure: bool
    origin: str = ""
    fetch_site: str = ""
    own_origins: tuple[str, ...] = ()


@dataclass(frozen=True)
class SignedIn:
    """A new browser session: its secret (the cookie's value), lifetime in seconds, account, cookie name and whether
    the cookie is Secure."""

    secret: str
    max_age: int
    user: UserView
    cookie: str = COOKIE
    secure: bool = False


def reached_securely(scheme: str, public_url: str) -> bool:
    """Return whether the console is reached over HTTPS: the request's scheme is https (TLS, or a trusted proxy's
    `X-Forwarded-Proto`), or the console's configured `public_url` is an https URL."""
    return scheme.lower() == "https" or public_url.strip().lower().startswith("https://")


def cookie_name(secure: bool) -> str:
    """Return the name of the session cookie: `__Host-sf_session` over HTTPS, `sf_session` over plain HTTP."""
    return SECURE_COOKIE if secure else COOKIE


def origin_of(url: str) -> str:
    """Return the origin of `url` — `scheme://host[:port]`, lower case, the default port left out — or "" when it
    has none (`null`, a path, garbage)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return ""
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    if scheme not in _DEFAULT_PORTS or not host:
        return ""
    host = f"[{host}]" if ":" in host else host
    return f"{scheme}://{host}" if port in (None, _DEFAULT_PORTS[scheme]) else f"{scheme}://{host}:{port}"


def _foreign(arrival: Arrival) -> str:
    """Why a sign-in form comes from another site ("" when it does not, or when the browser says nothing)."""
    if arrival.fetch_site and arrival.fetch_site.lower() not in _SAME:
        return f"the sign-in form was sent from another site (Sec-Fetch-Site: {arrival.fetch_site[:40]})"
    if arrival.origin and origin_of(arrival.origin) not in {o for o in arrival.own_origins if o}:
        return f"the sign-in form was sent from another origin ({arrival.origin[:200]})"
    return ""


def sign_in(rt: Runtime, *, token: str, arrival: Arrival) -> SignedIn:
    """Return a new browser session for the account behind an API (or access) token: Forbidden for a form sent from
    another origin, AuthRequired for a bad token, TooManyRequests while the client must wait after its failures."""
    foreign = _foreign(arrival)
    if foreign:
        own = arrival.own_origins[0] if arrival.own_origins else "this console"
        raise Forbidden(f"{foreign}: open {own} yourself and sign in there")
    lifetime = max(1, min(SESSION_SECONDS, rt.settings.refresh_token_ttl))
    secret, user = logins.start_web_session(rt, token=token, client=arrival.client, ttl=lifetime)
    return SignedIn(secret, lifetime, user, cookie_name(arrival.secure), arrival.secure)


def sign_out(rt: Runtime, *, secret: str) -> None:
    """End a browser session (it no longer opens any page); an unknown secret is ignored."""
    logins.end_web_session(rt, secret=secret)


def csrf_token(secret: str) -> str:
    """Return the CSRF token of the session whose secret is `secret` (HMAC-SHA-256, hex)."""
    return hmac.new(secret.encode("utf-8"), _CSRF_CONTEXT, hashlib.sha256).hexdigest()


def check_csrf(caller: WebCaller, sent: str) -> None:
    """Refuse (403) a state change from a cookie session whose form does not carry the session's CSRF token; a
    bearer caller needs none (a browser never sends a bearer token on its own)."""
    if caller.session and not hmac.compare_digest(csrf_token(caller.session), sent or ""):
        raise Forbidden("the form's CSRF token is missing or wrong: reload the page and try again")


def local_path(path: str) -> str:
    """Return `path` if it is a page of this console (an absolute path, no scheme, host or backslash), else `/`:
    where a browser may be sent after signing in, never to another site."""
    if not path.startswith("/") or path.startswith("//") or "\\" in path or any(c < " " for c in path):
        return "/"
    return path[:2000]
