"""StarForge over MCP: the tools, resources and prompt an agent uses to check, submit and follow jobs.

One definition serves both transports: `sf mcp` (stdio, the lab tools included) and streamable HTTP mounted on the
console at `/api/mcp/rpc`. Every call goes through `starforge.client.Console` with the caller's token, so an agent
has exactly the permissions and rules of a person using `sf`. Importing this package imports the `mcp` SDK.
"""

from ._backend import Backend, BackendProvider, SharedBackend
from ._explain import ExplainContext, Explanation, Patch, explain, problems_of
from ._http import MAX_BODY_BYTES, HttpTransport
from ._results import Outcome, ToolRefusal
from ._server import build_server
from ._stdio import serve_stdio, stdio_backend
from ._tools import TOOLS
from ._truncate import Clipped, clip_head, clip_items, clip_tail

__all__ = [
    "MAX_BODY_BYTES",
    "TOOLS",
    "Backend",
    "BackendProvider",
    "Clipped",
    "ExplainContext",
    "Explanation",
    "HttpTransport",
    "Outcome",
    "Patch",
    "SharedBackend",
    "ToolRefusal",
    "build_server",
    "clip_head",
    "clip_items",
    "clip_tail",
    "explain",
    "problems_of",
    "serve_stdio",
    "stdio_backend",
]
