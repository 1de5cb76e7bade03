"""`GET /api/job/logs/stream`: a run's log as Server-Sent Events, resumable, ending with the final status."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from ...services.accounts.credentials import UserView
from ...services.context import Runtime
from ...services.logs import stream as log_stream
from ..deps import current_user, refuse_nul_parameters, runtime

router = APIRouter(dependencies=[Depends(refuse_nul_parameters)])


@router.get("/api/job/logs/stream")
async def stream(
    request: Request,
    id: str = "",
    tail: int = Query(2000, ge=0, le=log_stream.MAX_TAIL, description="lines to replay first; 0 replays the whole log"),
    resume: str | None = Query(None, alias="from"),
    follow: bool = Query(True, description="false: send what the log holds now, then `end` with the job's status"),
    rt: Runtime = Depends(runtime),
) -> StreamingResponse:
    """Replay the last `tail` lines (0 = all) or everything after `from`, then follow until the job ends (or, with
    `follow=false`, end at once with the job's current status)."""
    # the caller is resolved after the query is validated: a malformed `tail` is a 422 for anyone, as it always was
    user: UserView = await current_user(request)
    opened = await run_in_threadpool(log_stream.open_stream, rt=rt, user=user, ref=id, tail=tail,
                                     resume=resume or request.headers.get("last-event-id"), follow=follow)
    return StreamingResponse(opened.frames(is_disconnected=request.is_disconnected), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
