"""What a tool reports instead of a result: its own refusals and the console's, as one small error tree.

    ToolError            a refusal a tool reports as an MCP tool error (`isError`), never as a trace
    ├── ToolRefusal      the tool's own refusal: bad arguments, no lab (`error: "Refused"`)
    └── BackendError     the console refused or failed (`error`: Rejected, AuthError, Forbidden, NotFound,
                         AmbiguousJob, Unavailable, …), raised by either backend with the same kinds

Both backends name a console refusal by its HTTP status (`kind_for_status`), so a tool error reads the same
whether the tools run on the console or over stdio.
"""

from __future__ import annotations

from collections.abc import Sequence

from starforge.contract import Problem, render_problems

__all__ = ["BackendError", "ToolError", "ToolRefusal", "kind_for_status"]

_KINDS = {400: "Rejected", 401: "AuthError", 403: "Forbidden", 404: "NotFound", 409: "Rejected", 413: "Rejected",
          422: "Rejected", 429: "Unavailable"}


def kind_for_status(status: int | None) -> str:
    """Return the error kind of a console answer's HTTP status (`Rejected`, `Forbidden`, `Unavailable`, …)."""
    if status is None:
        return "ConsoleError"
    if status >= 500:
        return "Unavailable"
    return _KINDS.get(status, "ConsoleError")


class ToolError(Exception):
    """A refusal with its title, every problem, a hint, the HTTP status it stands for and its kind.

    detail: the text to show; by default the title followed by one `- field: message` line per problem.
    """

    kind = "ToolError"

    def __init__(self, title: str, problems: Sequence[Problem] = (), *, hint: str = "", status: int | None = 400,
                 detail: str | None = None, kind: str | None = None) -> None:
        super().__init__(title)
        self.title = title
        self.problems = list(problems)
        self.hint = hint
        self.status = status
        self.detail = render_problems(title, self.problems) if detail is None else detail
        if kind is not None:
            self.kind = kind

    def __repr__(self) -> str:
        return f"{type(self).__name__}(kind={self.kind!r}, status={self.status!r}, title={self.title!r})"


class ToolRefusal(ToolError):
    """Raised by a tool for a refusal of its own (bad arguments, no lab), with problems like the console's."""

    kind = "Refused"


class BackendError(ToolError):
    """Raised by a backend when the console refuses or fails; `kind` names what happened (see the module tree)."""

    kind = "ConsoleError"
