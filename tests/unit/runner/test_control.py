"""`ControlWatch` against an in-test HTTP server standing for the console's ingest `control` endpoint."""

from __future__ import annotations

import threading
from typing import Any

from starforge.runner._control import ControlWatch
from starforge.runner._ingest import IngestClient

from .conftest import RUN_ID, TOKEN, IngestServer

IDLE = {"action": "", "reason": "", "deadline": None}
CHECKPOINT = {"action": "checkpoint", "reason": "preempted by job j-42", "deadline": 1900000000.0}


class Recorder:
    """Collects what the watch did: its checkpoint calls and its status lines."""

    def __init__(self) -> None:
        self.reasons: list[str] = []
        self.lines: list[str] = []
        self.acted = threading.Event()

    def checkpoint(self, reason: str) -> None:
        self.reasons.append(reason)
        self.acted.set()


def _client(ingest: IngestServer) -> IngestClient:
    return IngestClient(ingest.endpoint, RUN_ID, TOKEN, backoff=())


def _watch(ingest: IngestServer, recorder: Recorder) -> ControlWatch:
    return ControlWatch(_client(ingest), recorder.checkpoint, say=recorder.lines.append, interval=0.01)


def _answers(*replies: dict[str, Any]) -> Any:
    queue = list(replies)
    return lambda: queue.pop(0) if len(queue) > 1 else queue[0]


def test_the_client_posts_an_empty_body_with_the_run_and_its_token(ingest: IngestServer) -> None:
    ingest.reply("control", lambda: CHECKPOINT)
    assert _client(ingest).control() == CHECKPOINT
    [request] = ingest.of("control")
    assert request.body == {"run_id": RUN_ID} and request.headers["x-starforge-token"] == TOKEN


def test_a_checkpoint_answer_acts_once_with_its_reason_and_ends_the_polling(ingest: IngestServer) -> None:
    ingest.reply("control", _answers(IDLE, IDLE, CHECKPOINT))
    recorder = Recorder()
    watch = _watch(ingest, recorder).start()
    assert recorder.acted.wait(10)
    watch.join(10)
    assert not watch.alive
    assert recorder.reasons == ["preempted by job j-42"] and watch.requested
    assert len(ingest.of("control")) == 3 and recorder.lines == []


def test_a_checkpoint_without_a_reason_still_acts(ingest: IngestServer) -> None:
    ingest.reply("control", lambda: {"action": "checkpoint"})
    recorder = Recorder()
    _watch(ingest, recorder).start().join(10)
    assert recorder.reasons == ["no reason given"]


def test_a_console_without_the_endpoint_ends_the_polling_silently(ingest: IngestServer) -> None:
    ingest.answer_always("control", 404)
    recorder = Recorder()
    watch = _watch(ingest, recorder).start()
    watch.join(10)
    assert not watch.alive and len(ingest.of("control")) == 1
    assert recorder.reasons == [] and recorder.lines == [] and not watch.requested


def test_errors_are_reported_once_and_the_polling_goes_on(ingest: IngestServer) -> None:
    ingest.answer_next("control", 503, 500, 403)
    ingest.reply("control", lambda: CHECKPOINT)
    recorder = Recorder()
    watch = _watch(ingest, recorder).start()
    assert recorder.acted.wait(10)
    watch.join(10)
    assert len(ingest.of("control")) == 4
    assert len(recorder.lines) == 1 and "HTTP 503" in recorder.lines[0] and recorder.lines[0].startswith("warning:")


def test_an_unknown_or_idle_answer_does_nothing(ingest: IngestServer) -> None:
    ingest.reply("control", lambda: {"action": "dance"})
    recorder = Recorder()
    watch = _watch(ingest, recorder)
    assert watch.poll() is True
    ingest.reply("control", lambda: {"ok": True})  # what a console answers that does not know the endpoint's body
    assert watch.poll() is True
    assert recorder.reasons == [] and not watch.requested


def test_once_stopped_the_watch_never_acts(ingest: IngestServer) -> None:
    ingest.reply("control", lambda: CHECKPOINT)
    recorder = Recorder()
    watch = _watch(ingest, recorder)
    watch.stop()
    assert watch.poll() is False
    assert recorder.reasons == [] and not watch.requested


def test_the_watch_asks_as_often_as_the_console_says(ingest: IngestServer) -> None:
    watch = _watch(ingest, Recorder())
    for said, followed in ((15.0, 15.0), (0.0, 0.5), (1e9, 60.0), ("soon", 60.0), (True, 60.0)):
        ingest.reply("control", lambda said=said: {**IDLE, "poll_seconds": said})
        assert watch.poll() is True and watch.interval == followed
