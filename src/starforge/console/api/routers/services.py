"""Inference services (`sf serve`): start, list, show, extend, stop, their keys, and the proxy to their OpenAI API;
and the official client's `/api/playground/*` shapes over the same services."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool
from starlette.responses import StreamingResponse

from ...services.accounts.credentials import UserView
from ...services.context import Runtime
from ...services.serving import keys, lifecycle, playground
from ..body import read_json_object
from ..deps import current_user, refuse_nul_parameters, runtime
from ..service_proxy import proxy
from ._openapi import (
    PLAYGROUND_EXTEND,
    PLAYGROUND_START,
    SERVICE_EXTEND,
    SERVICE_KEY,
    SERVICE_PROXY,
    SERVICE_START,
)

router = APIRouter(dependencies=[Depends(refuse_nul_parameters)])
# no HEAD: an answer to it carries no body, so a refusal could not say why (the OpenAI API has no HEAD)
_PROXY_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


@router.post("/api/services", openapi_extra=SERVICE_START)
async def start_service(request: Request, user: UserView = Depends(current_user),
                        rt: Runtime = Depends(runtime)) -> JSONResponse:
    """Start a service on `{model, gpus?, ttl_hours?, profile?, name?}`; 202 with the service (queued)."""
    body = await read_json_object(request)
    outcome = await run_in_threadpool(lifecycle.start, rt, user=user, body=body)
    return JSONResponse(outcome.body, status_code=outcome.status_code)


@router.get("/api/services")
def list_services(all: bool = Query(False, description="include stopped and failed services"),  # noqa: A002
                  user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """List the caller's services, newest first."""
    return lifecycle.list_services(rt, user=user, include_stopped=all)


@router.get("/api/services/{service_id}")
def show_service(service_id: str, user: UserView = Depends(current_user),
                 rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Show one service of the caller (another account's is 404)."""
    return lifecycle.get(rt, user=user, service_id=service_id)


@router.post("/api/services/{service_id}/extend", openapi_extra=SERVICE_EXTEND)
async def extend_service(service_id: str, request: Request, user: UserView = Depends(current_user),
                         rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Move the service's expiry by `{hours}` (capped by the operator)."""
    body = await read_json_object(request)
    return await run_in_threadpool(lifecycle.extend, rt, user=user, service_id=service_id, body=body)


@router.post("/api/services/{service_id}/stop")
def stop_service(service_id: str, user: UserView = Depends(current_user),
                 rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Stop the service."""
    return lifecycle.stop(rt, user=user, service_id=service_id)


@router.post("/api/services/{service_id}/keys", status_code=201, openapi_extra=SERVICE_KEY)
async def create_key(service_id: str, request: Request, user: UserView = Depends(current_user),
                     rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Create an API key of the service (`{name}`); the key is shown in this answer only."""
    body = await read_json_object(request)
    return await run_in_threadpool(keys.create_key, rt, user=user, service_id=service_id, body=body)


@router.get("/api/services/{service_id}/keys")
def list_keys(service_id: str, user: UserView = Depends(current_user),
              rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """List the service's keys (prefixes, never the secrets)."""
    return keys.list_keys(rt, user=user, service_id=service_id)


@router.delete("/api/services/{service_id}/keys/{key_id}")
def revoke_key(service_id: str, key_id: int = Path(ge=1, le=2**63 - 1), user: UserView = Depends(current_user),
               rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Revoke one key of the service."""
    return keys.revoke_key(rt, user=user, service_id=service_id, key_id=key_id)


async def service_api(service_id: str, path: str, request: Request,
                      rt: Runtime = Depends(runtime)) -> StreamingResponse:
    """The service's OpenAI-compatible API, streamed; the owner's token, a key of this service, or the owner's web
    session (with its CSRF token to change anything)."""
    return await proxy(request, rt, service_id, path)


for _method in _PROXY_METHODS:  # one operation per method: the schema's operation ids stay unique
    router.add_api_route("/api/services/{service_id}/v1/{path:path}", service_api, methods=[_method],
                         operation_id=f"service_api_{_method.lower()}", response_class=StreamingResponse,
                         openapi_extra=SERVICE_PROXY if _method in ("POST", "PUT", "PATCH") else None)


@router.post("/api/playground/start", openapi_extra=PLAYGROUND_START)
async def playground_start(request: Request, user: UserView = Depends(current_user),
                           rt: Runtime = Depends(runtime)) -> JSONResponse:
    """The official client's `sf serve start`: `{model, gpus, ttl_s?}` → `{run_id, model, port, expires_at}`."""
    body = await read_json_object(request)
    outcome = await run_in_threadpool(playground.start, rt, user=user, body=body)
    return JSONResponse(outcome.body, status_code=outcome.status_code)


@router.get("/api/playground")
def playground_list(user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """The official client's `sf serve ls`: `{"servings": [{run_id, status, gpus, model, expires_at}]}`."""
    return playground.listing(rt, user=user)


@router.post("/api/playground/{run_id}/stop")
def playground_stop(run_id: str, user: UserView = Depends(current_user),
                    rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """The official client's `sf serve stop`."""
    return playground.stop(rt, user=user, run_id=run_id)


@router.post("/api/playground/{run_id}/extend", openapi_extra=PLAYGROUND_EXTEND)
async def playground_extend(run_id: str, request: Request, user: UserView = Depends(current_user),
                            rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """The official client's `sf serve extend`: `{extra_s}` → `{expires_at}`."""
    body = await read_json_object(request)
    return await run_in_threadpool(playground.extend, rt, user=user, run_id=run_id, body=body)
