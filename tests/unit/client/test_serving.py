"""What `Console.serving` puts on the wire and how it reads the answers, through httpx's transport seam."""

from __future__ import annotations

import json

import httpx
import pytest

from starforge.client import Console, Maintenance, NotFound, Rejected, Unavailable, chat_deltas

URL = "http://console.test"
SERVICE = {"id": "r-1", "model": "run:r-0", "status": "ready", "url": "/api/services/r-1/v1"}


def _sse(*events: object) -> bytes:
    return b"".join(b"data: " + (e if isinstance(e, bytes) else json.dumps(e).encode()) + b"\n\n" for e in events)


def _delta(text: str) -> dict[str, object]:
    return {"choices": [{"index": 0, "delta": {"content": text}}]}


def console(handler) -> tuple[Console, list[httpx.Request]]:  # type: ignore[no-untyped-def]
    seen: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        request.read()
        seen.append(request)
        return handler(request)

    return Console(URL, token="tok", transport=httpx.MockTransport(record)), seen


def test_start_sends_only_what_was_given() -> None:
    c, seen = console(lambda r: httpx.Response(202, json={**SERVICE, "status": "queued"}))
    assert c.serving.start("run:r-0", gpus=1, ttl_hours=2)["status"] == "queued"
    c.serving.start("org/tiny")
    assert [json.loads(r.content) for r in seen] == [{"model": "run:r-0", "gpus": 1, "ttl_hours": 2.0},
                                                    {"model": "org/tiny", "gpus": 0}]
    assert seen[0].headers["authorization"] == "Bearer tok" and seen[0].url.path == "/api/services"


def test_a_refusal_keeps_its_field() -> None:
    body = {"detail": "The service was refused", "problems": [
        {"field": "model", "code": "unknown_run", "message": "no run r-x of yours", "hint": "list them"}]}
    c, _ = console(lambda r: httpx.Response(422, json=body))
    with pytest.raises(Rejected) as refused:
        c.serving.start("run:r-x")
    assert [(p.field, p.hint) for p in refused.value.problems] == [("model", "list them")]


def test_list_keys_and_paths() -> None:
    def answer(r: httpx.Request) -> httpx.Response:
        if r.url.path.endswith("/keys") and r.method == "GET":
            return httpx.Response(200, json={"keys": [{"id": 3, "prefix": "sfk-ab"}]})
        if r.method == "DELETE":
            return httpx.Response(200, json={"id": 3, "revoked_at": 5.0})
        return httpx.Response(200, json={"services": [SERVICE, "junk"]})

    c, seen = console(answer)
    assert c.serving.list(all=True) == [SERVICE]
    assert c.serving.keys("r-1") == [{"id": 3, "prefix": "sfk-ab"}]
    assert c.serving.revoke_key("r-1", 3)["revoked_at"] == 5.0
    assert [f"{r.method} {r.url.raw_path.decode()}" for r in seen] == [
        "GET /api/services?all=true", "GET /api/services/r-1/keys", "DELETE /api/services/r-1/keys/3"]
    assert c.serving.url("r-1") == "http://console.test/api/services/r-1/v1"


def test_chat_streams_the_deltas_with_the_served_model() -> None:
    def answer(r: httpx.Request) -> httpx.Response:
        if r.url.path.endswith("/v1/models"):
            return httpx.Response(200, json={"object": "list", "data": [{"id": "/models/tiny"}]})
        return httpx.Response(200, content=_sse(_delta("Hel"), {"choices": []}, _delta("lo"), b"[DONE]", _delta("x")),
                              headers={"content-type": "text/event-stream"})

    c, seen = console(answer)
    assert list(c.serving.chat("r-1", "hi", max_tokens=5)) == ["Hel", "lo"]
    sent = json.loads(seen[-1].content)
    assert sent == {"model": "/models/tiny", "messages": [{"role": "user", "content": "hi"}], "stream": True,
                    "max_tokens": 5}
    assert seen[-1].url.path == "/api/services/r-1/v1/chat/completions"


def test_a_starting_service_is_unavailable_not_maintenance() -> None:
    c, _ = console(lambda r: httpx.Response(503, json={"detail": "service r-1 is starting"}))
    with pytest.raises(Unavailable) as refused:
        list(c.serving.chat("r-1", "hi", model="m"))
    assert not isinstance(refused.value, Maintenance)
    assert "starting" in refused.value.detail and "sf job logs r-1" in refused.value.hint


def test_a_foreign_service_is_not_found() -> None:
    c, _ = console(lambda r: httpx.Response(404, json={"detail": "no service r-1"}))
    with pytest.raises(NotFound):
        list(c.serving.chat("r-1", "hi"))


def test_chat_deltas_survive_split_chunks_and_raise_a_stream_error() -> None:
    raw = _sse(_delta("a"), _delta("é"))
    assert list(chat_deltas(iter([raw[i:i + 3] for i in range(0, len(raw), 3)]))) == ["a", "é"]
    with pytest.raises(Exception, match="boom"):
        list(chat_deltas(iter([_sse({"error": {"message": "boom"}})])))
