"""Tool results: a short text summary plus structured data, or an MCP tool error carrying the REST `problems` list."""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio.to_thread
from mcp.types import CallToolResult, ContentBlock, TextContent

from starforge.contract import Problem, render_problems

from ._backend import Backend
from ._errors import BackendError, ToolError, ToolRefusal
from ._scope import current_backend

__all__ = ["Operation", "Outcome", "failure", "run_tool", "success"]

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


Operation = Callable[[Backend], Outcome]


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


def failure(error: ToolError) -> CallToolResult:
    """Return an `isError` result: `{ok: false, error, status, title, detail, hint, problems}` and the same as text."""
    problems = list(error.problems)
    data = {
        "ok": False,
        "error": error.kind,
        "status": error.status,
        "title": error.title,
        "detail": error.detail,
        "hint": error.hint,
        "problems": [p.to_dict() for p in problems],
    }
    from_console = isinstance(error, BackendError)
    explainable = bool(problems) and (from_console or error.status == 422)
    text = _error_text(error.detail if from_console and not problems else error.title, problems, error.hint,
                       explainable=explainable)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data, is_error=True)


async def run_tool(name: str, operation: Operation) -> CallToolResult:
    """Run an operation on the request's backend in the worker threadpool; refusals become tool errors, bugs a
    generic one (the trace is logged here, never sent)."""
    backend = current_backend()
    return await anyio.to_thread.run_sync(functools.partial(_result, name, operation, backend))


def _result(name: str, operation: Operation, backend: Backend) -> CallToolResult:
    try:
        return success(operation(backend))
    except ToolError as exc:
        return failure(exc)
    except Exception:  # a bug: log the trace here, never send it to the client
        log.exception("MCP tool %s failed", name)
        return failure(ToolRefusal(f"internal error in {name}: the server logged the cause", status=500))
