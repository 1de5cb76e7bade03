"""StarForge over MCP: the tools, resources and prompt an agent uses to check, submit and follow jobs.

The tools are defined once over a `Backend`, the console operations they need, performed as the caller and
answered with the plain shapes below. Two backends implement it: on the console, the streamable HTTP transport
(`HttpTransport`, mounted at `/api/mcp/rpc`) runs the tools on the console's own services
(`starforge.console.mcp_backend`); over stdio, `sf mcp` runs them through the Python SDK with the credentials of
`sf login`, plus the lab tools (`starforge.mcp.stdio`, imported on its own: this package never imports the client
or the lab, so the console can import it). Importing this package imports the `mcp` SDK.
"""

from ._backend import Backend, BackendProvider, SharedBackend
from ._errors import BackendError, ToolError, ToolRefusal, kind_for_status
from ._explain import ExplainContext, Explanation, Patch, explain, problems_of
from ._handles import LOOKUP_LIMIT, resolve_handle
from ._http import MAX_BODY_BYTES, HttpTransport
from ._logs import MAX_LOG_BYTES
from ._results import Outcome
from ._scope import bound, current_backend
from ._server import build_server
from ._shapes import (
    Account,
    Cluster,
    Controlled,
    JobRow,
    LogWindow,
    MetricValue,
    Stopped,
    Submitted,
    Usage,
    Verdict,
    latest_metrics,
)
from ._tools import TOOLS, ToolDef
from ._truncate import Clipped, clip_head, clip_items, clip_tail

__all__ = [
    "LOOKUP_LIMIT",
    "MAX_BODY_BYTES",
    "MAX_LOG_BYTES",
    "TOOLS",
    "Account",
    "Backend",
    "BackendError",
    "BackendProvider",
    "Clipped",
    "Cluster",
    "Controlled",
    "ExplainContext",
    "Explanation",
    "HttpTransport",
    "JobRow",
    "LogWindow",
    "MetricValue",
    "Outcome",
    "Patch",
    "SharedBackend",
    "Stopped",
    "Submitted",
    "ToolDef",
    "ToolError",
    "ToolRefusal",
    "Usage",
    "Verdict",
    "bound",
    "build_server",
    "clip_head",
    "clip_items",
    "clip_tail",
    "current_backend",
    "explain",
    "kind_for_status",
    "latest_metrics",
    "problems_of",
    "resolve_handle",
]
