"""The stdio side of StarForge's MCP server (`sf mcp`): the client backend and the lab tools.

Kept apart from `starforge.mcp`, which the console imports: this package is the only part that needs the Python
SDK (`starforge.client`) and the lab (`starforge.lab`).
"""

from ._client import ClientBackend, translated
from ._serve import STDIO_TOOLS, serve_stdio, stdio_backend
from ._tools import LAB_TOOLS
from ._window import StreamWindow, read_window

__all__ = [
    "LAB_TOOLS",
    "STDIO_TOOLS",
    "ClientBackend",
    "StreamWindow",
    "read_window",
    "serve_stdio",
    "stdio_backend",
    "translated",
]
