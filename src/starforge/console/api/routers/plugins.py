"""Plugin registry endpoints: publish (immutable versions), list, show, enable/disable, download."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from ....bundle import BundleFile, pack_bytes
from ...runtime import Runtime
from ...services.accounts import UserView
from ...services.registries import plugins
from ..body import Upload, read_json_object, spooled_body
from ..deps import current_user, refuse_nul_parameters, runtime, upload_dir
from ._openapi import PLUGIN_PACKAGE, PLUGIN_PATCH

router = APIRouter(dependencies=[Depends(refuse_nul_parameters)])


@router.post("/api/plugins/publish", openapi_extra=PLUGIN_PACKAGE)
async def publish(request: Request, owner: str = "", user: UserView = Depends(current_user),
                  rt: Runtime = Depends(runtime), spool: Path = Depends(upload_dir)) -> dict[str, Any]:
    """Publish a plugin package (tar.gz with plugin.yaml); republishing a version is 409.

    The caller is authenticated before any of the body is read; the body is then spooled to disk, never memory."""
    async with spooled_body(request, limit=plugins.MAX_PACKAGE_BYTES, directory=spool) as upload:
        return await run_in_threadpool(_publish, rt, user, owner or user.username, upload)


def _publish(rt: Runtime, user: UserView, owner: str, upload: Upload) -> dict[str, Any]:
    with rt.db.write() as db:
        view = plugins.publish(db, user, owner, upload.read_bytes(), rt.settings.state_dir / "plugins")
    return {"id": view.id, "version": view.version, "kind": view.kind, "digest": view.digest,
            "size_bytes": view.size_bytes}


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


@router.patch("/api/plugins/{owner}/{name}", openapi_extra=PLUGIN_PATCH)
async def patch_plugin(owner: str, name: str, request: Request, user: UserView = Depends(current_user),
                       rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Enable or disable a plugin `{enabled, version?}`."""
    body = await read_json_object(request)

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
    with rt.db.read() as db:
        view = plugins.get_plugin(db, owner, name, version or None)
    root = Path(view.path)
    files = [BundleFile(p.relative_to(root).as_posix(), p) for p in sorted(root.rglob("*")) if p.is_file()]
    data, _info = pack_bytes(files)
    return Response(content=data, media_type="application/gzip")
