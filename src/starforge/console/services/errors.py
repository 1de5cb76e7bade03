"""The console's domain errors, grouped by what the caller can do; `api/errors.py` is their one translator.

    ConsoleError
    ├── Rejected        400 (or 403): the request breaks rules; carries every Problem
    ├── AuthRequired    401: missing, invalid or expired credentials
    ├── Forbidden       403: authenticated, but not allowed
    ├── NotFound        404: unknown, or not yours
    ├── Conflict        409: the resource exists and is immutable
    ├── TooLarge        413: the request body exceeds a limit
    ├── TooManyRequests 429: a rate limit or a failure backoff; carries the seconds to wait (Retry-After)
    └── Unavailable     503: maintenance mode

Tier: shared (definitions; no database).
"""

from __future__ import annotations

from starforge.contract import Problem

__all__ = ["AuthRequired", "Conflict", "ConsoleError", "Forbidden", "NotFound", "Rejected", "TooLarge",
           "TooManyRequests", "Unavailable"]


class ConsoleError(Exception):
    """Base of every domain error; `status` is the HTTP status the translator uses."""

    status = 500

    def __init__(self, detail: str, problems: list[Problem] | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.problems = problems or []


class Rejected(ConsoleError):
    """Raised when input breaks rules; the detail is the title, the problems carry fields and hints."""

    status = 400

    def __init__(
        self, title: str, problems: list[Problem], *, status: int = 400, warnings: list[Problem] | None = None
    ) -> None:
        super().__init__(title, problems)
        self.status = status
        self.warnings = warnings or []


class AuthRequired(ConsoleError):
    """Raised when a request carries no valid credentials."""

    status = 401


class Forbidden(ConsoleError):
    """Raised when the account may not do this."""

    status = 403


class NotFound(ConsoleError):
    """Raised for unknown resources and for resources of another account."""

    status = 404


class Conflict(ConsoleError):
    """Raised when an immutable resource already exists."""

    status = 409


class TooLarge(ConsoleError):
    """Raised when a request body exceeds a configured limit."""

    status = 413


class TooManyRequests(ConsoleError):
    """Raised when a client must wait before trying again; `retry_after` is the whole number of seconds (≥ 1)."""

    status = 429

    def __init__(self, detail: str, *, retry_after: int) -> None:
        super().__init__(detail)
        self.retry_after = max(1, retry_after)


class Unavailable(ConsoleError):
    """Raised while the console is in maintenance mode."""

    status = 503
