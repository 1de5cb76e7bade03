"""The offline API reference at `/docs`: the application's own OpenAPI schema rendered as HTML on the server.

Tier: shared (pure; reads the schema it is given). Nothing is loaded from elsewhere: no Swagger UI, no CDN; the
machine-readable schema stays at `/openapi.json`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .pages import frame
from .render import render
from .sessions import WebCaller

__all__ = ["Operation", "api_docs_page", "operations"]

_METHODS = ("get", "post", "put", "patch", "delete", "head")


@dataclass(frozen=True)
class Operation:
    """One method of one path: its summary, description, parameters and request body types."""

    method: str
    path: str
    summary: str
    description: str
    tag: str
    parameters: list[dict[str, Any]] = field(default_factory=list)
    body_types: list[str] = field(default_factory=list)

    @property
    def anchor(self) -> str:
        """Return the HTML id of the operation."""
        return (self.method + self.path).replace("/", "-").replace("{", "").replace("}", "")


def _type(schema: dict[str, Any]) -> str:
    if "type" in schema:
        return str(schema["type"])
    options = schema.get("anyOf") or schema.get("oneOf") or []
    return " | ".join(_type(o) for o in options if isinstance(o, dict)) or "any"


def operations(schema: dict[str, Any]) -> list[Operation]:
    """Return every operation of an OpenAPI schema, ordered by path then method."""
    found = []
    for path in sorted(schema.get("paths", {})):
        item = schema["paths"][path]
        for method in _METHODS:
            op = item.get(method)
            if not isinstance(op, dict):
                continue
            params = [{"name": p.get("name", ""), "in": p.get("in", ""), "required": bool(p.get("required")),
                       "type": _type(p.get("schema") or {}),
                       "description": p.get("description") or (p.get("schema") or {}).get("description", "")}
                      for p in op.get("parameters", []) if isinstance(p, dict)]
            body = op.get("requestBody", {}).get("content", {}) if isinstance(op.get("requestBody"), dict) else {}
            found.append(Operation(method.upper(), path, op.get("summary", ""), op.get("description", ""),
                                   (op.get("tags") or [""])[0], params, sorted(body)))
    return found


def api_docs_page(schema: dict[str, Any], caller: WebCaller | None) -> str:
    """Return the API reference page of `schema` (the console's `app.openapi()`)."""
    info = schema.get("info", {})
    return render("apidocs.html", **frame(caller, "docs"), title=info.get("title", ""),
                  version=info.get("version", ""), description=info.get("description", ""),
                  operations=operations(schema))
