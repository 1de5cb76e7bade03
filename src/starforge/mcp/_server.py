"""Build the StarForge MCP server: the tools, resources and prompt over a backend provider, for either transport."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from mcp.server.mcpserver import MCPServer

from starforge import __version__

from ._backend import BackendProvider
from ._prompts import register_prompts
from ._resources import register_resources
from ._scope import BackendScope
from ._tools import TOOLS, ToolDef, register_tools

__all__ = ["INSTRUCTIONS", "build_server"]

INSTRUCTIONS = """\
StarForge turns experiments into post-training jobs on a console. Every call runs with your console account's
permissions and rules, exactly as `sf` would. To check a JobSpec use validate_jobspec; to understand a refusal use
explain_rejection (fixes come with exact sf commands and patches); to run one use submit_job, then get_job and
get_job_logs. The prompt fix_rejected_submission walks the whole path."""


def build_server(provider: BackendProvider, *, tools: Sequence[ToolDef] = TOOLS) -> MCPServer[Any]:
    """Return the MCP server whose requests run on backends from `provider`, serving `tools` (the common ones by
    default; stdio adds the lab tools), the resources and the prompt."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        server: MCPServer[Any] = MCPServer(
            "starforge", title="StarForge", version=__version__, instructions=INSTRUCTIONS,
            middleware=[BackendScope(provider)], log_level="WARNING",
        )
    finally:  # the SDK configures the root logger; the host process (console, sf) keeps its own logging
        root.handlers[:] = handlers
        root.setLevel(level)
    register_tools(server, tools)
    register_resources(server)
    register_prompts(server)
    return server
