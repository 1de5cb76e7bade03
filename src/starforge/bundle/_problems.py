"""Bundle problems: the two codes a refused bundle is reported with, and the exception carrying them."""

from __future__ import annotations

import json

from starforge.contract import Problem, render_problems

# The only module of the package that reaches into starforge.contract (itself stdlib-only): bundle problems
# are ordinary contract problems, so callers merge them with the others.
__all__ = ["FIELD", "Problem", "UnsafeBundle", "show", "too_large", "unsafe"]

FIELD = "bundle"
_SHOW_MAX = 160


def show(name: str) -> str:
    """Return `name` quoted for a message: undecodable bytes and control characters escaped, long names cut."""
    try:
        raw = name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raw = name.encode("utf-8", "backslashreplace")
    text = raw.decode("utf-8", "backslashreplace")
    if len(text) > _SHOW_MAX:
        text = text[: _SHOW_MAX - 1] + "…"
    return json.dumps(text, ensure_ascii=False)


def unsafe(message: str, hint: str) -> Problem:
    """Return a `bundle_unsafe` problem: the bundle's structure is refused."""
    return Problem(FIELD, "bundle_unsafe", message, hint)


def too_large(message: str, hint: str) -> Problem:
    """Return a `bundle_too_large` problem: a size, count or expansion limit is exceeded."""
    return Problem(FIELD, "bundle_too_large", message, hint)


class UnsafeBundle(Exception):
    """Raised by `extract_bundle` when the bundle is refused; `problems` says why, all at once."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__(render_problems("The bundle was refused", problems))
        self.problems = list(problems)

    def __repr__(self) -> str:
        return f"UnsafeBundle(problems={self.problems!r})"
