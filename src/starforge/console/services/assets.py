"""Reading the data registry through the API: the versions of a kind the caller may read, and corpora by id.

Tier: use case (each function owns one read transaction).
"""

from __future__ import annotations

from typing import Any

from ..runtime import Runtime
from .accounts import UserView
from .registries import data

__all__ = ["corpora", "list_data"]


def list_data(rt: Runtime, *, user: UserView, kind: str) -> dict[str, Any]:
    """Return `{items: [...]}`: the registered versions of `kind` the caller may read."""
    with rt.db.read() as db:
        return {"items": [a.to_dict() for a in data.list_assets(db, kind, user)]}


def corpora(rt: Runtime, *, user: UserView) -> dict[str, Any]:
    """Return `{corpora: [{id, visibility, versions}]}`: readable corpora grouped by id (the brief-era client's
    `sf corpus ls`)."""
    with rt.db.read() as db:
        readable = data.list_assets(db, "corpus", user)
    grouped: dict[str, dict[str, Any]] = {}
    for asset in readable:
        entry = grouped.setdefault(f"{asset.owner}/{asset.name}",
                                   {"id": f"{asset.owner}/{asset.name}", "visibility": asset.visibility,
                                    "versions": []})
        entry["versions"].append(asset.version)
    return {"corpora": list(grouped.values())}
