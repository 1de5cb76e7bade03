"""The stdio log window: log streams get an idle read timeout and resume from an event id; nothing else changes."""

from __future__ import annotations

import httpx

from starforge.mcp.stdio import StreamWindow


def _seen(window: StreamWindow, url: str) -> httpx.Request:
    captured: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        captured.append(request)
        return httpx.Response(200, text="")

    window.network = lambda _url: httpx.MockTransport(handler)
    with httpx.Client(transport=window) as client:
        client.get(url, timeout=httpx.Timeout(5.0, read=None))
    return captured[0]


def test_a_log_stream_gets_the_idle_timeout_and_the_resume_header() -> None:
    request = _seen(StreamWindow(idle=0.5, resume_from="1234"), "http://console/api/job/logs/stream?id=r-1&tail=5")
    assert request.extensions["timeout"]["read"] == 0.5
    assert request.headers["Last-Event-ID"] == "1234"


def test_other_requests_pass_unchanged() -> None:
    request = _seen(StreamWindow(idle=0.5, resume_from="1234"), "http://console/api/jobs/mine")
    assert request.extensions["timeout"]["read"] is None
    assert "Last-Event-ID" not in request.headers
    tail = _seen(StreamWindow(idle=0.5), "http://console/api/job/logs/stream?id=r-1")
    assert "Last-Event-ID" not in tail.headers
