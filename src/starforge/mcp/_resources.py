"""Resources: the forge/v2 JSON Schema, the console's catalog, and a job's admitted JobSpec."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from mcp.shared.exceptions import MCPError
from mcp.types import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST

from starforge.contract import schema

from ._backend import Backend
from ._errors import BackendError
from ._scope import current_backend

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

__all__ = ["CATALOG_URI", "JOBSPEC_URI", "MAX_RESOURCE_BYTES", "SCHEMA_URI", "register_resources", "truncated_catalog"]

SCHEMA_URI = "starforge://schema/jobspec"
CATALOG_URI = "starforge://catalog"
JOBSPEC_URI = "starforge://jobs/{id}/jobspec"
MAX_RESOURCE_BYTES = 512 * 1024


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=1)


def _call(uri: str, call: Callable[[Backend], Any], backend: Backend) -> Any:
    try:
        return call(backend)
    except BackendError as exc:
        code = {"NotFound": INVALID_PARAMS, "Unavailable": INTERNAL_ERROR}.get(exc.kind, INVALID_REQUEST)
        data = {"uri": uri, "error": exc.kind, "status": exc.status, "detail": exc.detail,
                "hint": exc.hint, "problems": [p.to_dict() for p in exc.problems]}
        raise MCPError(code=code, message=exc.title or exc.detail, data=data) from None


async def _read(uri: str, call: Callable[[Backend], Any]) -> Any:
    """Run `call` on the request's backend in the worker threadpool; a refusal becomes an MCP error carrying its
    problems."""
    return await anyio.to_thread.run_sync(functools.partial(_call, uri, call, current_backend()))


def truncated_catalog(payload: dict[str, Any], limit: int = MAX_RESOURCE_BYTES) -> dict[str, Any]:
    """Return the catalog payload, keeping only the recipes that fit in `limit` bytes and saying what was cut."""
    if len(_dump(payload).encode("utf-8")) <= limit:
        return payload
    recipes = list(payload.get("recipes") or [])
    kept: list[Any] = []
    out = {k: v for k, v in payload.items() if k != "recipes"}
    for recipe in recipes:
        if len(_dump({**out, "recipes": [*kept, recipe]}).encode("utf-8")) > limit:
            break
        kept.append(recipe)
    left = len(recipes) - len(kept)
    out["recipes"] = kept
    out["truncated"] = {"kept": len(kept), "left_out": left,
                        "note": f"catalog truncated to {limit:,} bytes: {left} of {len(recipes)} recipes left out "
                                "(catalog_digest covers the full list); list_recipes pages through all of them"}
    return out


def register_resources(server: MCPServer[Any]) -> None:
    """Add the three resources to `server`."""

    @server.resource(SCHEMA_URI, name="jobspec-schema", title="forge/v2 JobSpec JSON Schema",
                     description="The JSON Schema (draft 2020-12) of a forge/v2 JobSpec.", mime_type="application/json")
    def jobspec_schema() -> str:
        return _dump(schema())

    @server.resource(CATALOG_URI, name="catalog", title="Recipe catalog",
                     description="The recipe catalog this console publishes (forge/recipe-catalog/v2), as GET "
                                 "/api/recipes serves it; truncated with a note when very large.",
                     mime_type="application/json")
    async def catalog() -> str:
        return _dump(truncated_catalog(await _read(CATALOG_URI, lambda b: b.recipes())))

    @server.resource(JOBSPEC_URI, name="job-jobspec", title="Admitted JobSpec of a job",
                     description="The JobSpec the console admitted for one of your jobs (owner stamped).",
                     mime_type="application/json")
    async def job_jobspec(id: str) -> str:
        uri = JOBSPEC_URI.replace("{id}", id)
        return _dump(await _read(uri, lambda b: b.jobspec(id)))
