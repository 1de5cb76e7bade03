"""Plugin registry endpoints: publish (immutable versions), list, show, enable/disable, download."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from ....bundle import BundleFile, pack_bytes
from ...runtime import Runtime
from ...services.accounts import UserView
from ...services.registries import plugins
from ..body import read_body, read_json
from ..deps import current_user, runtime

router = APIRouter()


@router.post("/api/plugins/publish")
async def publish(request: Request, owner: str = "", rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Publish a plugin package (tar.gz with plugin.yaml); republishing a version is 409."""
    data = await read_body(request, 256 * 1024 * 1024)
    user: UserView = await run_in_threadpool(current_user, request)
    store = rt.settings.state_dir / "plugins"
    store.mkdir(parents=True, exist_ok=True)

    def work() -> dict[str, Any]:
        with rt.db.write() as db:
            view = plugins.publish(db, user, owner or user.username, data, store)
        return {"id": view.id, "version": view.version, "kind": view.kind, "digest": view.digest,
                "size_bytes": view.size_bytes}

    return await run_in_threadpool(work)


@router.get("/api/plugins")
def list_plugins(_user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """List plugins with their latest version."""
    with rt.db.read() as db:
        return {"plugins": plugins.list_plugins(db)}


@router.get("/api/plugins/{owner}/{name}")
def show_plugin(owner: str, name: str, version: str = "", _user: UserView = Depends(current_user),
                rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Show one plugin version (the latest by default)."""
    with rt.db.read() as db:
        return plugins.get_plugin(db, owner, name, version or None).to_dict()


@router.patch("/api/plugins/{owner}/{name}")
async def patch_plugin(owner: str, name: str, request: Request, rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Enable or disable a plugin `{enabled, version?}`."""
    body = await read_json(request)
    user: UserView = await run_in_threadpool(current_user, request)

    def work() -> dict[str, Any]:
        with rt.db.write() as db:
            count = plugins.set_enabled(db, user, owner, name, bool(body.get("enabled", True)),
                                        str(body.get("version") or "") or None)
        return {"id": f"{owner}/{name}", "versions_affected": count}

    return await run_in_threadpool(work)


@router.get("/api/plugins/{owner}/{name}/package")
def package(owner: str, name: str, version: str = "", _user: UserView = Depends(current_user),
            rt: Runtime = Depends(runtime)) -> Response:
    """Download a plugin version as a deterministic tar.gz of its directory."""
    from pathlib import Path

    with rt.db.read() as db:
        view = plugins.get_plugin(db, owner, name, version or None)
    root = Path(view.path)
    files = [BundleFile(p.relative_to(root).as_posix(), p) for p in sorted(root.rglob("*")) if p.is_file()]
    data, _info = pack_bytes(files)
    return Response(content=data, media_type="application/gzip")


