"""`sf mcp`: serve the StarForge MCP tools over stdio to a local agent, as the account of `sf login`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from starforge.cli._output import EXIT_USAGE, Output

app = typer.Typer(
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    help="Serve the StarForge MCP tools over stdio for a local agent.",
)


@app.command()
def mcp(
    lab: Annotated[Path | None, typer.Option("--lab", help="the lab to serve (default: found from the working "
                                                              "directory)")] = None,
) -> None:
    """Speak MCP on stdin/stdout until the agent disconnects; see docs/mcp.md for agent configuration."""
    from starforge.lab import find_root_or_none
    from starforge.mcp.stdio import serve_stdio  # without the `console` extra, `sf` names it (cli/main.py)

    out = Output()
    root = find_root_or_none(lab)
    if lab is not None and root is None:
        out.abort(f"no lab at {lab}", hint="point --lab at a directory with a starforge.yaml", code=EXIT_USAGE)
    serve_stdio(root)
