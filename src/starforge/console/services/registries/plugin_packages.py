"""The plugin registry as the API runs it: publish a package, list, show, enable or disable, download.

Tier: use case (each function owns one transaction; `registries.plugins` holds the queries and the store).
Downloads are packed the way bundles are (deterministic tar.gz, members relative to the plugin's root), so the
client's directory digest of the unpacked package equals the published one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ....bundle import BundleFile, pack_bytes
from ..accounts.credentials import UserView
from ..context import Runtime
from ..uploads import SpooledBody
from . import plugins

__all__ = ["list_plugins", "package", "publish", "set_enabled", "show"]


def publish(rt: Runtime, *, user: UserView, owner: str, upload: SpooledBody) -> dict[str, Any]:
    """Publish a spooled package (tar.gz with plugin.yaml) under `owner` (the caller's namespace when empty);
    republishing a version is 409. Blocking: call it in the threadpool, while the spooled body is open."""
    with rt.db.write() as db:
        view = plugins.publish(db, user, owner or user.username, upload.read_bytes(),
                               rt.settings.state_dir / "plugins")
    return {"id": view.id, "version": view.version, "kind": view.kind, "digest": view.digest,
            "size_bytes": view.size_bytes}


def list_plugins(rt: Runtime) -> dict[str, Any]:
    """Return `{plugins: [...]}`: one summary per plugin with its latest version."""
    with rt.db.read() as db:
        return {"plugins": plugins.list_plugins(db)}


def show(rt: Runtime, *, owner: str, name: str, version: str = "") -> dict[str, Any]:
    """Return one plugin version (the latest when `version` is empty)."""
    with rt.db.read() as db:
        return plugins.get_plugin(db, owner, name, version or None).to_dict()


def set_enabled(rt: Runtime, *, user: UserView, owner: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
    """Enable or disable a plugin from `{enabled (default true), version?}` and say how many versions changed."""
    enabled = bool(body.get("enabled", True))
    version = str(body.get("version") or "") or None
    with rt.db.write() as db:
        count = plugins.set_enabled(db, user, owner, name, enabled, version)
    return {"id": f"{owner}/{name}", "versions_affected": count}


def package(rt: Runtime, *, owner: str, name: str, version: str = "") -> bytes:
    """Return a plugin version (the latest when `version` is empty) as a deterministic tar.gz of its directory."""
    with rt.db.read() as db:
        view = plugins.get_plugin(db, owner, name, version or None)
    root = Path(view.path)
    files = [BundleFile(p.relative_to(root).as_posix(), p) for p in sorted(root.rglob("*")) if p.is_file()]
    data, _info = pack_bytes(files)
    return data
