"""`GET /metrics`: the console's metrics in Prometheus' text format, for an administrator's API token or a scrape
token (never anonymous, never a web session)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from ...services.context import Runtime
from ...services.observability import scrape
from ..deps import bearer_token, runtime

router = APIRouter()


@router.get("/metrics", include_in_schema=False)
async def metrics(request: Request, rt: Runtime = Depends(runtime)) -> Response:
    """Return this console's metrics (401 without a token, 403 for a token of an account that is no administrator)."""
    scraped = await run_in_threadpool(scrape, rt=rt, token=bearer_token(request))
    return Response(scraped.body, media_type=scraped.content_type)
