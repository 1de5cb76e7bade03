"""Reading the data registry through the API: the versions of a kind the caller may read; corpora, datasets, models
and volumes by id.

Tier: use case (each function owns one read transaction).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ....contract import VersionedRef
from ..accounts import roles
from ..accounts.credentials import UserView
from ..context import Runtime
from ..errors import NotFound
from . import data, dataset_store

__all__ = ["corpora", "dataset", "datasets", "list_data", "model", "models", "volumes"]


def list_data(rt: Runtime, *, user: UserView, kind: str) -> dict[str, Any]:
    """Return `{items: [...]}`: the registered versions of `kind` the caller may read; their folders on the console
    machine (`path`) only to an administrator, who registers them (a job sees its data under `/forge/inputs`)."""
    with rt.db.read() as db:
        items = [a.to_dict() for a in data.list_assets(db, kind, user)]
    if not roles.can_admin(user):
        for item in items:
            del item["path"]
    return {"items": items}


def _by_id(rt: Runtime, user: UserView, kind: str,
           first: Callable[[data.AssetView], dict[str, Any]]) -> list[dict[str, Any]]:
    """Return the readable assets of `kind` grouped by id: `first(newest version)` plus `versions`, newest first."""
    with rt.db.read() as db:
        readable = data.list_assets(db, kind, user)
    grouped: dict[str, dict[str, Any]] = {}
    for asset in readable:  # newest first within each id
        entry = grouped.get(f"{asset.owner}/{asset.name}")
        if entry is None:
            entry = grouped[f"{asset.owner}/{asset.name}"] = {**first(asset), "versions": []}
        entry["versions"].append(asset.version)
    return list(grouped.values())


def _index(rt: Runtime, asset: data.AssetView) -> dict[str, Any]:
    return dataset_store.read_index(rt.settings.state_dir, VersionedRef(asset.owner, asset.name, asset.version),
                                    asset.kind) if asset.kind in dataset_store.PUSH_KINDS else {}


def corpora(rt: Runtime, *, user: UserView) -> dict[str, Any]:
    """Return `{corpora: [{id, visibility, versions, latest, description}]}`: readable corpora grouped by id (the
    brief-era client's `sf corpus ls`)."""
    return {"corpora": _by_id(rt, user, "corpus", lambda a: {
        "id": f"{a.owner}/{a.name}", "visibility": a.visibility, "latest": a.version,
        "description": _index(rt, a).get("description", "")})}


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
    return {"datasets": _by_id(rt, user, "dataset", lambda a: {
        "id": f"{a.owner}/{a.name}", "owner": a.owner, "name": a.name, "visibility": a.visibility,
        "latest": a.version, "formats": [], "updated_at": _iso(a.created_at), "description": "", **_index(rt, a)})}


def _model_version(rt: Runtime, asset: data.AssetView) -> dict[str, Any]:
    index = _index(rt, asset)
    return {"version": asset.version, "stage": "registered", "run_id": None, "verdict": None,
            "description": index.get("description", ""), "files": index.get("files"),
            "total_bytes": index.get("total_bytes"), "created_at": _iso(asset.created_at)}


def models(rt: Runtime, *, user: UserView) -> dict[str, Any]:
    """Return `{models: [{id, versions, production, description, visibility, latest, version_names}]}`: the models
    the caller may use (own, public, granted); `versions` counts the readable versions (wire-protocol §12, as the
    official client shows it) and `version_names` lists them newest first."""
    rows = _by_id(rt, user, "model", lambda a: {
        "id": f"{a.owner}/{a.name}", "production": None, "description": _index(rt, a).get("description", ""),
        "visibility": a.visibility, "latest": a.version})
    return {"models": [{**row, "versions": len(row["versions"]), "version_names": row["versions"]} for row in rows]}


def model(rt: Runtime, *, user: UserView, owner: str, name: str) -> dict[str, Any]:
    """Return `{id, description, visibility, versions: [{version, stage, run_id, verdict, description, files,
    total_bytes, created_at}]}` for one model the caller may use (wire-protocol §12); NotFound for an unknown model
    or one the caller may not read."""
    with rt.db.read() as db:
        readable = [a for a in data.list_assets(db, "model", user) if a.owner == owner and a.name == name]
    if not readable:
        raise NotFound(f"no model {owner}/{name} that you may use; `sf model ls` lists them")
    versions = [_model_version(rt, a) for a in readable]
    return {"id": f"{owner}/{name}", "description": versions[0]["description"], "visibility": readable[0].visibility,
            "versions": versions}


def volumes(rt: Runtime, *, user: UserView) -> dict[str, Any]:
    """Return `{volumes: [{id, visibility, allow_download, allow_preview, description, versions}]}`: the volumes the
    caller may mount (wire-protocol §12). This console serves no volume files over the API, so downloads and
    previews are off."""
    return {"volumes": _by_id(rt, user, "volume", lambda a: {
        "id": f"{a.owner}/{a.name}", "visibility": a.visibility, "allow_download": False, "allow_preview": False,
        "description": ""})}
