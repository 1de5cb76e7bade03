"""Model registry endpoints: push a model folder as an immutable version, list and show the models you may use."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from ...services.accounts.credentials import UserView
from ...services.context import Runtime
from ...services.registries import assets
from ..deps import current_user, refuse_nul_parameters, runtime
from ._push import add_push_route

router = APIRouter(dependencies=[Depends(refuse_nul_parameters)])
add_push_route(router, "model", "/api/models/push")


@router.get("/api/models")
def list_models(user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """List the models the caller may use (own, public, granted), each with its versions newest first."""
    return assets.models(rt=rt, user=user)


@router.get("/api/models/{owner}/{name}")
def show_model(owner: str, name: str, user: UserView = Depends(current_user),
               rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Show one model the caller may use with its versions; an unknown or foreign model is 404."""
    return assets.model(rt=rt, user=user, owner=owner, name=name)
