"""The one exception tree of the client; every failure a caller can act on is one of these.

    ConsoleError                 anything the console or the local client state refused
    ├── ConfigError              $FORGE_HOME is corrupt, or no console is configured
    ├── AuthError                401, an expired session, a failed login
    │   └── NotLoggedIn          no stored credentials for this console (no request was made)
    ├── Forbidden                403
    ├── NotFound                 404, or no job matches a handle
    ├── AmbiguousJob             a prefix matches several jobs
    ├── Rejected                 400 / 409 / 413 / 422, carrying `problems`
    └── Unavailable              network failure, timeout, 429, 5xx
        └── Maintenance          503 with the operator's note: the console is in maintenance mode
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from starforge.contract import Problem

from ._detail import Detail, detail_text, parse_body, problems_from

__all__ = [
    "AmbiguousJob",
    "AuthError",
    "ConfigError",
    "ConsoleError",
    "Forbidden",
    "Maintenance",
    "NotFound",
    "NotLoggedIn",
    "Rejected",
    "Unavailable",
    "error_from_response",
]


class ConsoleError(Exception):
    """Base of every client error: `detail` is the text to show, `hint` the next step, `status` the HTTP code."""

    def __init__(
        self,
        detail: str,
        *,
        status: int | None = None,
        hint: str = "",
        problems: Sequence[Problem] = (),
    ) -> None:
        parsed = Detail.parse(detail)
        super().__init__(parsed.render())
        self.status = status
        self.hint = hint
        self.title = parsed.title
        self.detail = parsed.render()
        self.problems: list[Problem] = list(problems)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status!r}, detail={self.title!r})"


class ConfigError(ConsoleError):
    """Raised when $FORGE_HOME holds a corrupt file or no console address is configured."""


class AuthError(ConsoleError):
    """Raised on 401, an expired session that cannot be refreshed, or a refused login."""


class NotLoggedIn(AuthError):
    """Raised before any request when no credentials are stored for the console."""


class Forbidden(ConsoleError):
    """Raised on 403: the account may not do this (admin-only, foreign namespace, profile not allowed)."""


class NotFound(ConsoleError):
    """Raised on 404 (unknown or foreign job, unknown route) and when no job matches a handle."""


class AmbiguousJob(ConsoleError):
    """Raised when a prefix matches several jobs (an exact experiment name names its newest job instead);
    `candidates` holds their rows, newest first."""

    def __init__(self, detail: str, candidates: Sequence[Any]) -> None:
        super().__init__(detail, hint="type more of the id, or use the full job id")
        self.candidates = list(candidates)


class Rejected(ConsoleError):
    """Raised on 400/409/413/422: the request was refused; `problems` lists why, first problem first (never empty)."""

    def __init__(self, detail: str, *, status: int | None = None, hint: str = "",
                 problems: Sequence[Problem] = ()) -> None:
        super().__init__(detail, status=status, hint=hint,
                         problems=problems or problems_from(b"", Detail.parse(detail)))


class Unavailable(ConsoleError):
    """Raised when the console cannot be reached, times out, rate-limits (429) or fails (5xx, 503 maintenance)."""


class Maintenance(Unavailable):
    """Raised on a 503 with a `detail` (wire-protocol §9.2): the console is in maintenance mode and refuses new work
    until an administrator resumes it; `note` is the operator's note (often when it will be back)."""

    def __init__(self, note: str) -> None:
        self.note = " ".join(note.split())
        if "maintenance" in self.note.lower():  # the console's own sentence already says it
            detail = self.note
        else:
            detail = "the console is in maintenance mode" + (f": {self.note}" if self.note else "")
        hint = ("nothing was changed; try again once it is back (the note says when); an administrator sees the state "
                "with `sf admin maintenance show`")
        super().__init__(detail, status=503, hint=hint, problems=[Problem("<root>", "maintenance", detail, hint)])


_LOGIN_HINT = "run `sf login` to log in again"


def error_from_response(status: int, body: bytes) -> ConsoleError:
    """Return the exception for a non-2xx answer, with the §9.1 detail text (and problems for rejections)."""
    text = detail_text(body, status)
    if status == 401:
        return AuthError(text, status=status, hint=_LOGIN_HINT)
    if status == 403:  # a refused profile or role carries its problems too
        return Forbidden(text, status=status, problems=problems_from(body, Detail.parse(text)))
    if status == 404:
        return NotFound(text, status=status)
    if status in (400, 409, 413, 422):
        return Rejected(text, status=status, problems=problems_from(body, Detail.parse(text)))
    body_value = parse_body(body)
    if status == 503 and isinstance(body_value, dict) and isinstance(body_value.get("detail"), str):
        return Maintenance(text)
    if status == 429 or status >= 500:
        return Unavailable(text, status=status, hint="try again later")
    if 300 <= status < 400:
        return ConsoleError(
            f"the console answered with a redirect (HTTP {status}); API paths must not redirect",
            status=status,
            hint="check the server URL (scheme, host and path prefix)",
        )
    return ConsoleError(text, status=status)
