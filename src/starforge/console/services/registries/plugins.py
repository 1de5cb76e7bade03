"""Plugins: published tar.gz packages, immutable per version, pinned by their directory digest.

Tier: query (runs over the caller's session; never begins or commits a transaction).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ....bundle import BundleLimits, UnsafeBundle, directory_digest, extract_bundle
from ....contract import Problem, is_safe_segment
from ....safeyaml import YamlRefused, load_yaml_bounded
from ...store.models import Plugin
from ..accounts import roles
from ..accounts.credentials import UserView
from ..errors import Conflict, Forbidden, NotFound, Rejected
from . import benchmark_packs

__all__ = [
    "MAX_MANIFEST_BYTES",
    "MAX_PACKAGE_BYTES",
    "MAX_SUMMARY",
    "PluginView",
    "get_plugin",
    "list_plugins",
    "publish",
    "set_enabled",
]

_MANIFEST = "plugin.yaml"
MAX_PACKAGE_BYTES = 256 * 1024 * 1024  # a published package, compressed
_LIMITS = BundleLimits(max_bytes=MAX_PACKAGE_BYTES, max_files=5_000)
MAX_MANIFEST_BYTES = 64 * 1024  # plugin.yaml holds four short keys
MAX_SUMMARY = 1000  # characters stored and listed by GET /api/plugins
_MAX_SEGMENT = 128  # plugins.name and plugins.version columns
_MAX_KIND = 16  # plugins.kind column
_MAX_OWNER = 64  # a username


@dataclass(frozen=True)
class PluginView:
    """One published plugin version."""

    owner: str
    name: str
    version: str
    kind: str
    digest: str
    summary: str
    enabled: bool
    visibility: str
    path: str
    size_bytes: int
    created_by: str
    created_at: float

    @property
    def id(self) -> str:
        """Return `<owner>/<name>`."""
        return f"{self.owner}/{self.name}"

    def to_dict(self) -> dict[str, object]:
        """Return the wire form of `GET /api/plugins/{owner}/{name}`."""
        return {
            "id": self.id, "version": self.version, "kind": self.kind, "summary": self.summary,
            "enabled": self.enabled, "digest": self.digest, "size_bytes": self.size_bytes,
            "created_by": self.created_by, "created_at": self.created_at,
        }


def _view(row: Plugin) -> PluginView:
    # rows published before summaries were bounded may hold huge ones: never serve more than the bound
    return PluginView(row.owner, row.name, row.version, row.kind, row.digest, row.summary[:MAX_SUMMARY],
                      bool(row.enabled),
                      row.visibility, row.path, row.size_bytes, row.created_by, row.created_at)


def _text_field(data: dict[str, Any], key: str, default: str, limit: int, hint: str) -> tuple[str, list[Problem]]:
    value = data.get(key)
    if not value:
        return default, []
    if isinstance(value, (dict, list)):
        return default, [Problem(f"{_MANIFEST}.{key}", "invalid_request", f"{key} must be text, not a collection", hint)]
    text = str(value)
    if len(text) > limit:
        return default, [Problem(f"{_MANIFEST}.{key}", "value_too_long",
                                 f"{key} is {len(text)} characters long; at most {limit} are stored", hint)]
    return text, []


def _load_manifest(file: Path) -> tuple[Any, list[Problem]]:
    hint = f"write {_MANIFEST} as a small UTF-8 YAML mapping (name, version, kind, summary) without alias tricks"
    if file.stat().st_size > MAX_MANIFEST_BYTES:
        return None, [Problem(_MANIFEST, "yaml_refused", f"{_MANIFEST} is larger than {MAX_MANIFEST_BYTES} bytes",
                              hint)]
    try:
        return load_yaml_bounded(file.read_text(encoding="utf-8"), max_bytes=MAX_MANIFEST_BYTES, what=_MANIFEST), []
    except UnicodeDecodeError:
        return None, [Problem(_MANIFEST, "yaml_refused", f"{_MANIFEST} is not UTF-8 text", hint)]
    except YamlRefused as exc:
        return None, [Problem(_MANIFEST, "yaml_refused", f"{_MANIFEST} was refused: {exc.reason}", hint)]


def _read_manifest(root: Path) -> tuple[dict[str, str], list[Problem]]:
    file = root / _MANIFEST
    if not file.is_file():
        return {}, [Problem("bundle", "invalid_request", f"the package has no {_MANIFEST}",
                            "add plugin.yaml with name, version and summary at the package root")]
    data, problems = _load_manifest(file)
    if problems:
        return {}, problems
    data = data if isinstance(data, dict) else {}
    out: dict[str, str] = {}
    for key in ("name", "version"):
        value = data.get(key)
        if not isinstance(value, str) or not is_safe_segment(value.strip()):
            problems.append(Problem(f"{_MANIFEST}.{key}", "not_a_safe_segment", f"{key} must be a safe segment",
                                    "use letters, digits, '.', '_' and '-', starting with a letter or digit"))
        elif len(value.strip()) > _MAX_SEGMENT:
            problems.append(Problem(f"{_MANIFEST}.{key}", "value_too_long",
                                    f"{key} is at most {_MAX_SEGMENT} characters", "shorten it"))
        else:
            out[key] = value.strip()
    out["summary"], found = _text_field(data, "summary", "", MAX_SUMMARY,
                                        f"keep the summary to one paragraph of at most {MAX_SUMMARY} characters")
    problems += found
    out["kind"], found = _text_field(data, "kind", "plugin", _MAX_KIND, f"a short word of at most {_MAX_KIND} "
                                                                        "characters, such as plugin")
    problems += found
    return out, problems


def _check_owner(owner: str) -> None:
    if len(owner) > _MAX_OWNER or not is_safe_segment(owner):
        raise Rejected("The plugin package was refused", [
            Problem("owner", "not_a_safe_segment", f"owner {owner[:80]!r} is not a valid namespace",
                    f"name an account: a safe segment of at most {_MAX_OWNER} characters")])


def publish(db: Session, user: UserView, owner: str, data: bytes, store_root: Path) -> PluginView:
    """Unpack a hostile-safe package, compute its digest and register `<owner>/<name>@<version>` (409 if it exists)."""
    if not roles.acts_for(user, owner):
        raise Forbidden(f"you may publish only under your own namespace ({user.username})")
    if not roles.can_publish(user):
        raise Forbidden("viewers cannot publish plugins")
    _check_owner(owner)
    store_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=store_root) as tmp:
        staging = Path(tmp) / "pkg"
        staging.mkdir()
        try:
            extract_bundle(data, staging, _LIMITS, skip_prefixes=())
        except UnsafeBundle as exc:
            raise Rejected("The plugin package was refused", exc.problems) from exc
        manifest, problems = _read_manifest(staging)
        if not problems and manifest.get("kind") == benchmark_packs.KIND:
            problems = benchmark_packs.check_publish(db, owner, staging)
            if problems:
                raise Rejected("The benchmark pack was refused", problems)
        if problems:
            raise Rejected("The plugin package was refused", problems)
        name, version = manifest["name"], manifest["version"]
        if db.scalar(select(Plugin.id).where(Plugin.owner == owner, Plugin.name == name, Plugin.version == version)):
            raise Conflict(f"plugin {owner}/{name}@{version} is already published; versions are immutable")
        digest = directory_digest(staging)
        final = store_root / owner / name / version
        final.parent.mkdir(parents=True, exist_ok=True)
        if final.exists():
            shutil.rmtree(final)
        staging.rename(final)
    row = Plugin(owner=owner, name=name, version=version, kind=manifest.get("kind", "plugin"), digest=digest,
                 summary=manifest.get("summary", ""), enabled=True, visibility="public", path=str(final),
                 size_bytes=len(data), created_by=user.username, created_at=time.time())
    db.add(row)
    db.flush()
    return _view(row)


def get_plugin(db: Session, owner: str, name: str, version: str | None = None) -> PluginView:
    """Return a version (the latest when none is given) or raise NotFound."""
    query = select(Plugin).where(Plugin.owner == owner, Plugin.name == name)
    if version:
        query = query.where(Plugin.version == version)
    row = db.scalars(query.order_by(Plugin.created_at.desc(), Plugin.id.desc())).first()
    if row is None:
        raise NotFound(f"no plugin {owner}/{name}" + (f"@{version}" if version else ""))
    return _view(row)


def list_plugins(db: Session) -> list[dict[str, object]]:
    """Return one summary per plugin id with its latest version."""
    latest: dict[str, PluginView] = {}
    for row in db.scalars(select(Plugin).order_by(Plugin.created_at, Plugin.id)):
        view = _view(row)
        latest[view.id] = view
    return [
        {"id": v.id, "kind": v.kind, "latest_version": v.version, "enabled": v.enabled, "summary": v.summary}
        for v in latest.values()
    ]


def set_enabled(db: Session, user: UserView, owner: str, name: str, enabled: bool, version: str | None = None) -> int:
    """Enable or disable a plugin (every version, or one); returns how many versions changed."""
    if not roles.acts_for(user, owner):
        raise Forbidden("only the owner or an administrator may change a plugin")
    if not roles.can_publish(user):
        raise Forbidden("viewers cannot change plugins")
    query = select(Plugin).where(Plugin.owner == owner, Plugin.name == name)
    if version:
        query = query.where(Plugin.version == version)
    rows = list(db.scalars(query))
    if not rows:
        raise NotFound(f"no plugin {owner}/{name}")
    for row in rows:
        row.enabled = enabled
    return len(rows)
