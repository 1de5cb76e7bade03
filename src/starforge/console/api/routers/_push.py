"""One route shape for every pushed asset (`POST /api/datasets/push`, `/api/corpora/push`, `/api/models/push`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool

from ...services.accounts.credentials import UserView
from ...services.context import Runtime
from ...services.registries import push as dataset_push
from ..body import spooled_body
from ..deps import current_user, runtime, upload_dir
from ._openapi import ASSET_PUSH, DATASET_PUSH

__all__ = ["add_push_route"]


def _push(kind: str) -> Callable[..., Awaitable[dict[str, Any]]]:
    async def push(request: Request, name: str = "", version: str = "", visibility: str = "private",
                   owner: str = "", description: str = "", user: UserView = Depends(current_user),
                   rt: Runtime = Depends(runtime), spool: Path = Depends(upload_dir)) -> dict[str, Any]:
        """Push `<owner>/<name>@<version>` (owner: the caller) from a gzip tar body; re-pushing a version is 409.

        The caller is authenticated before any of the body is read; the body is then spooled to disk, never memory."""
        async with spooled_body(request, limit=rt.settings.max_dataset_bytes, directory=spool) as upload:
            return await run_in_threadpool(dataset_push.push, rt=rt, user=user, kind=kind, owner=owner, name=name,
                                           version=version, visibility=visibility, description=description,
                                           upload=upload)

    return push


def add_push_route(router: APIRouter, kind: str, path: str) -> None:
    """Serve `POST path`: push a new version of `kind` (one of `dataset_push.PUSH_KINDS`) from a gzip tar body."""
    router.add_api_route(path, _push(kind), methods=["POST"], name=f"push_{kind}",
                         openapi_extra=DATASET_PUSH if kind == "dataset" else ASSET_PUSH)
