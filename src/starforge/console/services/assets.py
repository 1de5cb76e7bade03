"""Reading the data registry through the API: the versions of a kind the caller may read, corpora and datasets by id.

Tier: use case (each function owns one read transaction).
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

from ...contract import VersionedRef
from ..runtime import Runtime
from . import dataset_store
from .accounts import UserView
from .errors import NotFound
from .registries import data

__all__ = ["corpora", "dataset", "datasets", "list_data"]


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


def dataset(rt: Runtime, *, user: UserView, owner: str, name: str, version: str = "") -> dict[str, Any]:
    """Return `{id, version, visibility, description, total_bytes, files: [{name, size}], truncated, versions}`
    for one readable dataset version (the newest by default; wire-protocol §12); NotFound for an unknown dataset,
    one the caller may not read, or an unknown version."""
    with rt.db.read() as db:
        readable = [a for a in data.list_assets(db, "dataset", user) if a.owner == owner and a.name == name]
    if not readable:
        raise NotFound(f"no dataset {owner}/{name} that you may read; `sf dataset ls` lists them")
    chosen = next((a for a in readable if a.version == version), None) if version else readable[0]
    if chosen is None:
        raise NotFound(f"dataset {owner}/{name} has no version {version!r}; its versions: "
                       + ", ".join(a.version for a in readable))
    files, truncated = dataset_store.list_files(Path(chosen.path))
    return {"id": f"{owner}/{name}", "version": chosen.version, "visibility": chosen.visibility, "description": "",
            "total_bytes": sum(f["size"] for f in files), "files": files, "truncated": truncated,
            "versions": [a.version for a in readable]}


def _iso(epoch: float) -> str:
    return datetime.datetime.fromtimestamp(epoch, tz=datetime.UTC).isoformat(timespec="seconds")


def datasets(rt: Runtime, *, user: UserView) -> dict[str, Any]:
    """Return `{datasets: [{id, owner, name, visibility, versions, latest, files?, total_bytes?, formats,
    updated_at, description}]}`: the datasets the caller may read, each with its readable versions newest first
    (wire-protocol §12; `files` and `total_bytes` describe the latest version when the console holds its files)."""
    with rt.db.read() as db:
        readable = data.list_assets(db, "dataset", user)
    grouped: dict[str, dict[str, Any]] = {}
    for asset in readable:  # newest first within each id
        key = f"{asset.owner}/{asset.name}"
        entry = grouped.get(key)
        if entry is None:
            entry = grouped[key] = {
                "id": key, "owner": asset.owner, "name": asset.name, "visibility": asset.visibility,
                "versions": [], "latest": asset.version, "formats": [], "updated_at": _iso(asset.created_at),
                "description": "",
                **dataset_store.read_index(rt.settings.state_dir, VersionedRef(asset.owner, asset.name,
                                                                               asset.version)),
            }
        entry["versions"].append(asset.version)
    return {"datasets": list(grouped.values())}
