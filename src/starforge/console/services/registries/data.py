"""Data assets: admin-registered `<owner>/<name>@<version>` directories with visibility and per-user grants."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from ....contract import Problem, VersionedRef
from ...store.models import AssetGrant, DataAsset
from ..accounts import UserView
from ..errors import Conflict, Rejected

__all__ = ["KINDS", "AssetView", "can_read", "list_assets", "register", "resolve", "version_exists"]

KINDS = ("corpus", "dataset", "volume", "environment")


@dataclass(frozen=True)
class AssetView:
    """One registered version of a data asset."""

    kind: str
    owner: str
    name: str
    version: str
    path: str
    visibility: str
    grants: tuple[str, ...] = ()

    @property
    def ref(self) -> str:
        """Return `<owner>/<name>@<version>`."""
        return f"{self.owner}/{self.name}@{self.version}"

    def to_dict(self) -> dict[str, object]:
        """Return the wire form."""
        return {
            "kind": self.kind,
            "id": f"{self.owner}/{self.name}",
            "version": self.version,
            "path": self.path,
            "visibility": self.visibility,
            "grants": list(self.grants),
        }


def _grants(db: Session, kind: str, owner: str, name: str) -> tuple[str, ...]:
    rows = db.scalars(
        select(AssetGrant.username).where(AssetGrant.kind == kind, AssetGrant.owner == owner, AssetGrant.name == name)
    )
    return tuple(sorted(rows))


def _view(db: Session, row: DataAsset) -> AssetView:
    return AssetView(row.kind, row.owner, row.name, row.version, row.path, row.visibility,
                     _grants(db, row.kind, row.owner, row.name))


def register(
    db: Session, kind: str, ref: VersionedRef, path: str, *, visibility: str = "private", grants: tuple[str, ...] = ()
) -> AssetView:
    """Register a version of an asset at an existing directory; versions are immutable."""
    problems = []
    if kind not in KINDS:
        problems.append(Problem("kind", "invalid_request", f"kind must be one of {', '.join(KINDS)}"))
    if not ref.version:
        problems.append(Problem("ref", "version_required", "register a specific version: <owner>/<name>@<version>"))
    if visibility not in ("private", "public"):
        problems.append(Problem("visibility", "invalid_request", "visibility must be private or public"))
    directory = Path(path).expanduser()
    if not directory.is_dir():
        problems.append(Problem("path", "invalid_request", f"{path} is not a directory on the console machine"))
    if problems:
        raise Rejected("Invalid registration", problems)
    exists = db.scalar(
        select(DataAsset).where(
            DataAsset.kind == kind, DataAsset.owner == ref.owner, DataAsset.name == ref.name,
            DataAsset.version == ref.version,
        )
    )
    if exists is not None:
        raise Conflict(f"{kind} {ref} is already registered; versions are immutable")
    row = DataAsset(kind=kind, owner=ref.owner, name=ref.name, version=ref.version,
                    path=str(directory.resolve()), visibility=visibility, created_at=time.time())
    db.add(row)
    for username in grants:
        if username not in _grants(db, kind, ref.owner, ref.name):
            db.add(AssetGrant(kind=kind, owner=ref.owner, name=ref.name, username=username))
    db.flush()
    return _view(db, row)


def can_read(asset: AssetView, user: UserView) -> bool:
    """Return True when `user` may read `asset`: its owner, an admin, a grantee, or anyone when public."""
    return (
        user.is_admin or asset.visibility == "public" or asset.owner == user.username or user.username in asset.grants
    )


def resolve(db: Session, kind: str, ref: VersionedRef, user: UserView) -> AssetView | None:
    """Return the version `ref` names (the latest when it names none) if it exists and `user` may read it."""
    query = select(DataAsset).where(DataAsset.kind == kind, DataAsset.owner == ref.owner, DataAsset.name == ref.name)
    if ref.version:
        query = query.where(DataAsset.version == ref.version)
    row = db.scalars(query.order_by(DataAsset.created_at.desc(), DataAsset.id.desc())).first()
    if row is None:
        return None
    view = _view(db, row)
    return view if can_read(view, user) else None


def version_exists(db: Session, kind: str, ref: VersionedRef) -> bool:
    """Return True when this exact version is already registered (an output version must be free)."""
    return db.scalar(
        select(DataAsset.id).where(
            DataAsset.kind == kind, DataAsset.owner == ref.owner, DataAsset.name == ref.name,
            DataAsset.version == ref.version,
        )
    ) is not None


def list_assets(db: Session, kind: str, user: UserView) -> list[AssetView]:
    """Return the versions of `kind` that `user` may read, grouped by id, newest first."""
    rows = db.scalars(select(DataAsset).where(DataAsset.kind == kind).order_by(DataAsset.owner, DataAsset.name,
                                                                                 DataAsset.created_at.desc()))
    return [view for view in (_view(db, row) for row in rows) if can_read(view, user)]
