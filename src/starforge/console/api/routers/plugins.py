"""Plugin registry endpoints: publish (immutable versions), list, show, enable/disable, download."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from ...services.accounts.credentials import UserView
from ...services.context import Runtime
from ...services.registries import plugin_packages
from ...services.registries.plugins import MAX_PACKAGE_BYTES
from ..body import read_json_object, spooled_body
from ..deps import current_user, refuse_nul_parameters, runtime, upload_dir
from ._openapi import PLUGIN_PACKAGE, PLUGIN_PATCH

router = APIRouter(dependencies=[Depends(refuse_nul_parameters)])


@router.post("/api/plugins/publish", openapi_extra=PLUGIN_PACKAGE)
async def publish(request: Request, owner: str = "", user: UserView = Depends(current_user),
                  rt: Runtime = Depends(runtime), spool: Path = Depends(upload_dir)) -> dict[str, Any]:
    """Publish a plugin package (tar.gz with plugin.yaml); republishing a version is 409.

    The caller is authenticated before any of the body is read; the body is then spooled to disk, never memory."""
    async with spooled_body(request, limit=MAX_PACKAGE_BYTES, directory=spool) as upload:
        return await run_in_threadpool(plugin_packages.publish, rt=rt, user=user, owner=owner, upload=upload)


@router.get("/api/plugins")
def list_plugins(_user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """List plugins with their latest version."""
    return plugin_packages.list_plugins(rt=rt)


@router.get("/api/plugins/{owner}/{name}")
def show_plugin(owner: str, name: str, version: str = "", _user: UserView = Depends(current_user),
                rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Show one plugin version (the latest by default)."""
    return plugin_packages.show(rt=rt, owner=owner, name=name, version=version)


@router.patch("/api/plugins/{owner}/{name}", openapi_extra=PLUGIN_PATCH)
async def patch_plugin(owner: str, name: str, request: Request, user: UserView = Depends(current_user),
                       rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Enable or disable a plugin `{enabled, version?}`."""
    body = await read_json_object(request)
    return await run_in_threadpool(plugin_packages.set_enabled, rt=rt, user=user, owner=owner, name=name, body=body)


@router.get("/api/plugins/{owner}/{name}/package")
def package(owner: str, name: str, version: str = "", _user: UserView = Depends(current_user),
            rt: Runtime = Depends(runtime)) -> Response:
    """Download a plugin version as a deterministic tar.gz of its directory."""
    return Response(content=plugin_packages.package(rt=rt, owner=owner, name=name, version=version),
                    media_type="application/gzip")
