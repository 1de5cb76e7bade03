"""`IngestClient` against a real server: body and headers, retries with backoff, refusals, unreachable consoles."""

from __future__ import annotations

import socket

import pytest

from starforge.runner import IngestClient, IngestRefused, IngestUnavailable

from .conftest import RUN_ID, TOKEN, IngestServer


def _client(server: IngestServer, sleeps: list[float]) -> IngestClient:
    return IngestClient(server.endpoint + "/", RUN_ID, TOKEN, sleep=sleeps.append)


def test_post_sends_json_with_run_id_and_token(ingest: IngestServer) -> None:
    assert _client(ingest, []).post("hparams", {"params": {"lr": 0.1}, "run_id": "r-forged"}) == {"ok": True}

    [request] = ingest.requests
    assert request.path == "hparams"
    assert request.body == {"run_id": RUN_ID, "params": {"lr": 0.1}}  # the client's run id always wins
    assert request.headers["x-starforge-token"] == TOKEN
    assert request.headers["content-type"] == "application/json"


def test_typed_methods_build_the_wire_bodies(ingest: IngestServer) -> None:
    client = _client(ingest, [])
    client.lifecycle("running", note="x")
    client.logs(["part one ", "part two\n"], eof=True)
    client.metrics([{"key": "a", "step": 1, "value": 0.5, "ts": "t"}])
    client.hparams({"lr": 0.1})
    client.artifact("checkpoint", "/out/step_3", format="npz", step=3, size_bytes=None)

    bodies = {r.path: r.body for r in ingest.requests}
    assert bodies["lifecycle"]["event"] == "running" and bodies["lifecycle"]["note"] == "x"
    assert bodies["lifecycle"]["ts"].endswith("Z") and "T" in bodies["lifecycle"]["ts"]
    assert bodies["logs"] == {"run_id": RUN_ID, "chunks": ["part one ", "part two\n"], "eof": True}
    assert bodies["metrics"]["points"] == [{"key": "a", "step": 1, "value": 0.5, "ts": "t"}]
    assert bodies["artifact"] == {
        "run_id": RUN_ID,
        "kind": "checkpoint",
        "path": "/out/step_3",
        "format": "npz",
        "step": 3,
    }
    with pytest.raises(ValueError):
        client.lifecycle("paused")
    with pytest.raises(ValueError):
        client.artifact("weights", "/x")


@pytest.mark.parametrize("status", [500, 503, 429])
def test_retryable_statuses_are_retried_with_backoff(ingest: IngestServer, status: int) -> None:
    sleeps: list[float] = []
    ingest.answer_next("metrics", status, status)
    assert _client(ingest, sleeps).metrics([]) == {"ok": True}
    assert [r.status for r in ingest.of("metrics")] == [status, status, 200]
    assert sleeps == [0.5, 1.0]


def test_three_failures_raise_unavailable(ingest: IngestServer) -> None:
    sleeps: list[float] = []
    ingest.answer_always("metrics", 502)
    with pytest.raises(IngestUnavailable) as caught:
        _client(ingest, sleeps).metrics([])
    assert caught.value.status == 502 and caught.value.detail == "scripted 502"
    assert len(ingest.of("metrics")) == 3 and sleeps == [0.5, 1.0]


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_other_4xx_are_refused_at_once(ingest: IngestServer, status: int) -> None:
    sleeps: list[float] = []
    ingest.answer_next("lifecycle", status)
    with pytest.raises(IngestRefused) as caught:
        _client(ingest, sleeps).lifecycle("starting")
    assert caught.value.status == status
    assert str(caught.value) == f"HTTP {status}: scripted {status}"
    assert len(ingest.of("lifecycle")) == 1 and sleeps == []


def test_network_errors_are_retried_then_unavailable() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again at once: nothing listens there
    sleeps: list[float] = []
    client = IngestClient(f"http://127.0.0.1:{port}/api/ingest", RUN_ID, TOKEN, sleep=sleeps.append)
    with pytest.raises(IngestUnavailable) as caught:
        client.hparams({})
    assert caught.value.status is None and "cannot reach" in caught.value.detail
    assert sleeps == [0.5, 1.0]


def test_the_token_never_appears_in_repr() -> None:
    assert TOKEN not in repr(IngestClient("http://127.0.0.1:1", RUN_ID, TOKEN))
