"""The console's routes, read from the application itself so a new route is covered without editing a list."""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["PROBE_METHODS", "Route", "app_routes", "fill", "normalise"]

# Methods sent to a route that accepts any method (an ASGI app mounted as a route, such as MCP).
PROBE_METHODS = ("GET", "POST", "DELETE")
_PARAM = re.compile(r"\{(\w+)(?::\w+)?\}")


@dataclass(frozen=True)
class Route:
    """One method of one path template, with the names of its path and query parameters."""

    method: str
    path: str
    path_params: tuple[str, ...]
    query_params: tuple[str, ...]
    in_schema: bool

    @property
    def key(self) -> tuple[str, str]:
        """Return `(METHOD, normalised path)`, the key of the allowlists."""
        return self.method, normalise(self.path)

    @property
    def mutating(self) -> bool:
        """Return True for methods that may change state."""
        return self.method in ("POST", "PUT", "PATCH", "DELETE")

    def params(self) -> set[str]:
        """Return every parameter name, path and query."""
        return set(self.path_params) | set(self.query_params)


def normalise(path: str) -> str:
    """Return `path` without converters: `/api/ingest/{path:path}` → `/api/ingest/{path}`."""
    return _PARAM.sub(lambda m: "{" + m.group(1) + "}", path)


def fill(path: str, values: dict[str, str], default: str = "x") -> str:
    """Return `path` with each `{name}` (or `{name:converter}`) replaced by its value, or `default`."""
    return _PARAM.sub(lambda m: values.get(m.group(1), default), path)


def _walk(routes: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    for route in routes:
        included = getattr(route, "original_router", None)  # FastAPI's lazily included routers
        if included is not None:
            context = getattr(route, "include_context", None)
            yield from _walk(included.routes, prefix + (getattr(context, "prefix", "") or ""))
        elif hasattr(route, "path"):
            yield prefix + route.path, route


def app_routes(state_dir: Path) -> list[Route]:
    """Build the console application on a fresh SQLite state directory and return every (method, path) it serves."""
    from starforge.console.app import create_app
    from starforge.console.settings import load_settings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # alembic's, about its own configuration
        app = create_app(load_settings(state_dir=state_dir, run_background=False))
    try:
        schema = app.openapi()
        out: list[Route] = []
        for path, route in _walk(app.routes):
            methods = sorted(getattr(route, "methods", None) or PROBE_METHODS)
            for method in methods:
                operation = schema["paths"].get(normalise(path), {}).get(method.lower())
                parameters = operation.get("parameters", []) if operation else []
                out.append(Route(
                    method=method,
                    path=path,
                    path_params=tuple(m.group(1) for m in _PARAM.finditer(path)),
                    query_params=tuple(p["name"] for p in parameters if p.get("in") == "query"),
                    in_schema=operation is not None,
                ))
        return out
    finally:
        app.state.runtime.db.dispose()
