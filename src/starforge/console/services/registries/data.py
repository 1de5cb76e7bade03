"""Data assets: `<owner>/<name>@<version>` directories (corpora, datasets, models, volumes, environments) with
visibility and per-user grants.

Administrators register existing directories (`register`); users push datasets, corpora and models, which the
console unpacks into its state folder and records with `add_version` (`services/dataset_push.py`). Versions are
immutable either way, and admission resolves both alike (`resolve`, with `can_read`).

Tier: query (runs over the caller's session; never begins or commits a transaction).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ....contract import Problem, VersionedRef, is_safe_segment, parse_versioned_ref
from ...store.models import AssetGrant, DataAsset
from ..accounts import roles
from ..accounts.credentials import UserView
from ..errors import Conflict, Rejected

__all__ = [
    "KINDS",
    "AssetView",
    "add_version",
    "can_read",
    "list_assets",
    "register",
    "register_request",
    "resolve",
    "version_exists",
]

KINDS = ("corpus", "dataset", "volume", "environment", "model")
_MAX_OWNER = 64  # data_assets.owner and asset_grants.username columns
_MAX_NAME = 128  # data_assets.name and data_assets.version columns


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
    created_at: float = 0.0

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
                     _grants(db, row.kind, row.owner, row.name), row.created_at)


def _directory(path: str) -> Path | None:
    try:
        directory = Path(path).expanduser()
        return directory if path and directory.is_dir() else None
    except (OSError, ValueError):  # a NUL byte, an unknown ~user, an unreadable parent
        return None


def _check_ref(ref: VersionedRef) -> list[Problem]:
    problems = []
    if not ref.version:
        problems.append(Problem("ref", "version_required", "register a specific version: <owner>/<name>@<version>",
                                "add @<version>, e.g. alice/handbook@v1"))
    for part, value, limit in (("owner", ref.owner, _MAX_OWNER), ("name", ref.name, _MAX_NAME),
                               ("version", ref.version, _MAX_NAME)):
        if len(value) > limit:
            problems.append(Problem(f"ref.{part}", "value_too_long", f"the {part} is longer than {limit} characters",
                                    f"shorten the {part} to at most {limit} characters"))
    return problems


def _check_fields(kind: str, path: str, visibility: str, grants: tuple[str, ...]) -> list[Problem]:
    problems = []
    if kind not in KINDS:
        problems.append(Problem("kind", "invalid_request", f"kind must be one of {', '.join(KINDS)}",
                                f"send one of {', '.join(KINDS)}"))
    if _directory(path) is None:
        problems.append(Problem("path", "invalid_request", f"{path[:200]!r} is not a directory on the console machine",
                                "register an existing directory by its absolute path"))
    if visibility not in ("private", "public"):
        problems.append(Problem("visibility", "invalid_request", "visibility must be private or public",
                                "send private or public"))
    for index, username in enumerate(grants):
        if len(username) > _MAX_OWNER or not is_safe_segment(username):
            problems.append(Problem(f"grants[{index}]", "not_a_safe_segment", f"{username[:80]!r} is not a username",
                                    f"name an account: a safe segment of at most {_MAX_OWNER} characters"))
    return problems


def register(
    db: Session, kind: str, ref: VersionedRef, path: str, *, visibility: str = "private", grants: tuple[str, ...] = ()
) -> AssetView:
    """Register a version of an asset at an existing directory; versions are immutable."""
    problems = _check_ref(ref) + _check_fields(kind, path, visibility, grants)
    directory = _directory(path)
    if problems or directory is None:
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


def add_version(db: Session, kind: str, ref: VersionedRef, path: str, *, visibility: str = "private") -> AssetView:
    """Record a new version at `path`, which the caller fills in the same transaction (a pushed dataset is moved
    into place after its row is written); an existing version, even one written concurrently, is a Conflict."""
    problems = _check_ref(ref)
    if visibility not in ("private", "public"):
        problems.append(Problem("visibility", "invalid_request", "visibility must be private or public",
                                "send private or public"))
    if problems:
        raise Rejected(f"Invalid {kind}", problems)
    if version_exists(db, kind, ref):
        raise Conflict(f"{kind} {ref} already exists; versions are immutable: push a new version")
    row = DataAsset(kind=kind, owner=ref.owner, name=ref.name, version=ref.version, path=path, visibility=visibility,
                    created_at=time.time())
    db.add(row)
    try:
        db.flush()  # PostgreSQL: a concurrent insert of this version waits here, then fails on the unique key
    except IntegrityError as exc:
        raise Conflict(f"{kind} {ref} already exists; versions are immutable: push a new version") from exc
    return _view(db, row)


def _text(body: dict[str, Any], key: str, default: str, problems: list[Problem]) -> str:
    value = body.get(key)
    if value is None or value == "":
        return default
    if not isinstance(value, str):
        problems.append(Problem(key, "not_a_string", f"{key} must be a string", f"send {key} as a JSON string"))
        return default
    return value


def register_request(db: Session, body: dict[str, Any]) -> AssetView:
    """Register what an administrator's request `{kind, ref, path, visibility?, grants?}` describes, refusing every
    malformed field at once."""
    problems: list[Problem] = []
    kind = _text(body, "kind", "", problems)
    raw_ref = _text(body, "ref", "", problems).strip()
    path = _text(body, "path", "", problems)
    visibility = _text(body, "visibility", "private", problems)
    raw_grants = body.get("grants") or []
    if not isinstance(raw_grants, list) or not all(isinstance(g, str) for g in raw_grants):
        problems.append(Problem("grants", "not_a_list", "grants must be a list of usernames",
                                "send [\"alice\", \"bob\"], or leave it out"))
        raw_grants = []
    ref, found = parse_versioned_ref(raw_ref, "ref") if raw_ref else (None, [
        Problem("ref", "invalid_reference", "ref is required", "send <owner>/<name>@<version>")])
    problems += found + (_check_ref(ref) if ref is not None else [])
    problems += _check_fields(kind, path, visibility, tuple(raw_grants))
    if problems or ref is None:
        raise Rejected("Invalid registration", problems)
    return register(db, kind, ref, path, visibility=visibility, grants=tuple(raw_grants))


def can_read(asset: AssetView, user: UserView) -> bool:
    """Return True when `user` may read `asset`: its owner, an admin, a grantee, or anyone when public."""
    return (
        roles.sees_all_data(user) or asset.visibility == "public" or asset.owner == user.username
        or user.username in asset.grants
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


def list_assets(db: Session, kind: str, reader: UserView | None) -> list[AssetView]:
    """Return the versions of `kind` that `reader` may read (every version when None: the console's operator on
    its own machine), grouped by id, newest first."""
    rows = db.scalars(select(DataAsset).where(DataAsset.kind == kind).order_by(DataAsset.owner, DataAsset.name,
                                                                                 DataAsset.created_at.desc()))
    views = (_view(db, row) for row in rows)
    return [view for view in views if reader is None or can_read(view, reader)]
