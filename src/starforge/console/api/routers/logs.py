"""`GET /api/job/logs/stream`: a run's log as Server-Sent Events, resumable, ending with the final status."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from ....contract import Problem
from ...runtime import Runtime
from ...services import job_reads, logs
from ...services.accounts import UserView
from ...services.errors import Rejected
from ..deps import current_user, refuse_nul_parameters, runtime

router = APIRouter(dependencies=[Depends(refuse_nul_parameters)])

KEEPALIVE_SECONDS = 15.0
MAX_TAIL = 1_000_000  # lines replayed on connect; 0 replays the whole log
_MAX_EVENT_ID_DIGITS = 19  # an event id is a byte offset in the log
IDLE_SLEEP = 0.05
STATUS_EVERY = 0.25


def format_event(data: bytes, event_id: int, event: str = "log") -> str:
    """Frame one SSE event whose `data` reproduces `data` exactly when the client joins the lines with newlines."""
    text = data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    lines = "".join(f"data: {line}\n" for line in text.split("\n"))
    return f"id: {event_id}\nevent: {event}\n{lines}\n"


def _start_offset(path: Path, tail: int, resume: str | None) -> int:
    if resume is not None and resume != "":
        if not (resume.isascii() and resume.isdigit() and len(resume) <= _MAX_EVENT_ID_DIGITS):
            raise Rejected("Invalid request", [Problem("from", "invalid_request", "from must be an event id",
                                                       "send the id of the last event received (a byte offset)")],
                           status=422)
        size = path.stat().st_size if path.is_file() else 0
        return min(int(resume), size)
    return logs.tail_offset(path, tail)


async def _events(request: Request, rt: Runtime, user: UserView, ref: str, path: Path,
                  offset: int) -> AsyncIterator[str]:
    yield ": stream open\n\n"
    last_sent = time.monotonic()
    last_status = 0.0
    while True:
        data, new_offset = await run_in_threadpool(logs.read_from, path, offset)
        if data:
            yield format_event(data, new_offset)
            offset, last_sent = new_offset, time.monotonic()
            continue
        now = time.monotonic()
        if now - last_status >= STATUS_EVERY:
            last_status = now
            status, terminal, run_dir = await run_in_threadpool(job_reads.log_state, rt, user, ref)
            if run_dir and path != logs.log_path(run_dir):
                path = logs.log_path(run_dir)
            if terminal:
                rest, end = await run_in_threadpool(logs.read_from, path, offset, 1 << 30)
                if rest:
                    yield format_event(rest, end)
                yield f"id: {end}\nevent: end\ndata: {status}\n\n"
                return
        if await request.is_disconnected():
            return
        if now - last_sent >= KEEPALIVE_SECONDS:
            yield ": keepalive\n\n"
            last_sent = now
        await asyncio.sleep(IDLE_SLEEP)


@router.get("/api/job/logs/stream")
async def stream(
    request: Request,
    id: str = "",
    tail: int = Query(2000, ge=0, le=MAX_TAIL, description="lines to replay first; 0 replays the whole log"),
    resume: str | None = Query(None, alias="from"),
    rt: Runtime = Depends(runtime),
) -> StreamingResponse:
    """Replay the last `tail` lines (0 = all) or everything after `from`, then follow until the job ends."""
    user: UserView = await run_in_threadpool(current_user, request)
    _status, _terminal, run_dir = await run_in_threadpool(job_reads.log_state, rt, user, id)
    path = logs.log_path(run_dir) if run_dir else rt.settings.state_dir / "missing.log"
    offset = _start_offset(path, tail, resume or request.headers.get("last-event-id"))
    return StreamingResponse(_events(request, rt, user, id, path, offset), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
