"""Tool results: a short text summary plus structured data, or an MCP tool error carrying the REST `problems` list."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcp.types import CallToolResult, ContentBlock, TextContent

from starforge.client import ConsoleError
from starforge.contract import Problem, render_problems

from ._threads import in_worker

__all__ = ["Outcome", "ToolRefusal", "failure", "run_tool", "success"]

log = logging.getLogger("starforge.mcp")


@dataclass(frozen=True)
class Outcome:
    """What an operation returns: a summary for people and agents, the structured data, and whether to echo it.

    `echo_data` False leaves the JSON copy out of the text content when the summary already carries everything
    (a log excerpt), so the text is not sent twice.
    """

    summary: str
    data: dict[str, Any] = field(default_factory=dict)
    echo_data: bool = True


class ToolRefusal(Exception):
    """Raised by an operation for a refusal of its own (bad arguments, no lab), with problems like the console's."""

    def __init__(self, title: str, problems: Sequence[Problem] = (), *, hint: str = "", status: int = 400) -> None:
        super().__init__(title)
        self.title = title
        self.problems = list(problems)
        self.hint = hint
        self.status = status


def _json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=1, default=str)


def success(outcome: Outcome) -> CallToolResult:
    """Return a result whose content is the summary then the data as JSON, and whose structured content is the data."""
    content: list[ContentBlock] = [TextContent(type="text", text=outcome.summary)]
    if outcome.echo_data:
        content.append(TextContent(type="text", text=_json(outcome.data)))
    return CallToolResult(content=content, structured_content=outcome.data)


def _error_text(title: str, problems: Sequence[Problem], hint: str, *, explainable: bool) -> str:
    lines = [render_problems(title, list(problems)) if problems else title]
    lines.extend(f"  hint for {p.field}: {p.hint}" for p in problems if p.hint)
    if hint:
        lines.append(f"hint: {hint}")
    if explainable:
        lines.append("explain_rejection(rejection=<this error>, spec=<the spec>) turns these problems into fixes.")
    return "\n".join(lines)


def failure(error: ConsoleError | ToolRefusal) -> CallToolResult:
    """Return an `isError` result: `{ok: false, error, status, detail, hint, problems}` and the same as text."""
    status: int | None
    if isinstance(error, ToolRefusal):
        kind, title, detail, status = "Refused", error.title, render_problems(error.title, error.problems), error.status
    else:
        kind, title, detail, status = type(error).__name__, error.title, error.detail, error.status
    problems = list(error.problems)
    data = {
        "ok": False,
        "error": kind,
        "status": status,
        "title": title,
        "detail": detail,
        "hint": error.hint,
        "problems": [p.to_dict() for p in problems],
    }
    explainable = bool(problems) and (isinstance(error, ConsoleError) or error.status == 422)
    text = _error_text(detail if isinstance(error, ConsoleError) and not problems else title, problems, error.hint,
                       explainable=explainable)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data, is_error=True)


async def run_tool(name: str, operation: Callable[[], Outcome]) -> CallToolResult:
    """Run an operation on an MCP worker thread; console errors and refusals become tool errors, bugs a generic one."""
    return await in_worker(lambda: _result(name, operation))


def _result(name: str, operation: Callable[[], Outcome]) -> CallToolResult:
    try:
        return success(operation())
    except (ConsoleError, ToolRefusal) as exc:
        return failure(exc)
    except Exception:  # a bug: log the trace here, never send it to the client
        log.exception("MCP tool %s failed", name)
        return failure(ToolRefusal(f"internal error in {name}: the server logged the cause", status=500))
