"""Inference services against a real console: a tiny model served by `transformers serve` in a sandboxed job,
reached only through the console's proxy with the official `openai` client (streamed and not); strangers and
anonymous callers refused; a service key that works until revoked; the idle TTL stopping the service; and every
bad request refused at its field with nothing started.

The serving runtime is built once into the shared test cache (`sf console runtime build`), and the tiny model is
made on that runtime's interpreter (`sf console runtime run … -m starforge.trainers.tiny_model`) under a folder
the console lists in `model_roots`: nothing is downloaded.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.integration.conftest import (
    DEFAULT_CONFIG,
    RUNTIME_CACHE,
    SF,
    ConsoleProcess,
    make_console,
    unique,
)
from tests.integration.helpers import spec_for, submit, wait_for_status

RUNTIME = "serving-transformers-5.24.0"
IDLE_TTL_HOURS = 0.006  # about 22 s: the proxy's polls keep the service alive while it starts, then it idles out
READY_TIMEOUT = 600  # a cold runtime build (CI) happens inside the first service's start


@dataclass
class World:
    console: ConsoleProcess
    model: Path
    token: str
    user: str


def _config(tmp: Path, models: Path) -> dict[str, Any]:
    return {**DEFAULT_CONFIG, "model_roots": [str(models)],
            "serving": {"default_ttl_hours": 1, "max_ttl_hours": 2, "idle_ttl_hours": IDLE_TTL_HOURS},
            "runtimes": {"cache_dir": str(RUNTIME_CACHE), "hub_cache": str(tmp / "hub")}}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("serving")
    models = tmp / "models"
    models.mkdir()
    config = tmp / "console.yaml"
    config.write_text(yaml.safe_dump(_config(tmp, models)), encoding="utf-8")
    built = subprocess.run([SF, "console", "runtime", "build", RUNTIME, "--kind", "cpu", "--config", str(config),
                            "--json"], capture_output=True, text=True, timeout=1800, stdin=subprocess.DEVNULL)
    assert built.returncode == 0, built.stderr[-4000:]
    made = subprocess.run([SF, "console", "runtime", "run", RUNTIME, "--kind", "cpu", "--config", str(config), "--",
                           "-m", "starforge.trainers.tiny_model", str(models / "tiny")],
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert made.returncode == 0, made.stderr[-4000:]
    assert (models / "tiny" / "chat_template.jinja").is_file() or "chat_template" in (
        models / "tiny" / "tokenizer_config.json").read_text()
    console = make_console(tmp_path_factory, "sqlite", config=_config(tmp, models))
    console.start()
    user = unique("svc")
    try:
        yield World(console, models / "tiny", console.token_for(user), user)
    finally:
        console.stop()
        shutil.rmtree(console.state_dir / "runs", ignore_errors=True)


def _api(world: World, token: str | None = None) -> httpx.Client:
    return world.console.client(token or world.token)


def _wait_service(api: httpx.Client, sid: str, statuses: set[str], timeout: float, *, poll: str = "") -> dict[str, Any]:
    """Wait until the service is in one of `statuses`, asking `poll` (a proxied path) meanwhile when given."""
    deadline = time.monotonic() + timeout
    view: dict[str, Any] = {}
    while time.monotonic() < deadline:
        if poll:
            api.get(f"/api/services/{sid}/v1/{poll}")  # 503 while it starts; each ask moves its idle TTL
        view = api.get(f"/api/services/{sid}").json()
        if view["status"] in statuses:
            return view
        if view["status"] == "failed":
            raise AssertionError(f"service {sid} failed: {view}")
        time.sleep(0.5)
    raise AssertionError(f"service {sid} did not reach {sorted(statuses)} in {timeout:.0f} s: {view}")


def _job_log(world: World, sid: str) -> str:
    """Return the end of the service job's log (what its server said), for a failure message."""
    logs = sorted(world.console.state_dir.glob(f"runs/*/*/{sid}/logs/*"))
    return "\n".join(p.read_text(errors="replace")[-3000:] for p in logs if p.is_file()) or "(no log)"


def test_a_served_tiny_model_answers_through_the_proxy_and_stops_once_idle(world: World) -> None:
    from openai import AuthenticationError, NotFoundError, OpenAI

    with _api(world) as api:
        # it lives IDLE_TTL_HOURS unless used; while it starts, the polls of its API are what keeps it alive
        started = api.post("/api/services", json={"model": str(world.model), "name": "tiny-chat",
                                                  "ttl_hours": IDLE_TTL_HOURS})
        assert started.status_code == 202, started.text
        view = started.json()
        sid = view["id"]
        assert view["server"] == "transformers" and view["status"] == "queued" and view["model_path"]
        assert view["url"] == f"/api/services/{sid}/v1" and view["idle_ttl_s"] == pytest.approx(IDLE_TTL_HOURS * 3600)
        starting = api.get(f"/api/services/{sid}/v1/models")
        assert starting.status_code == 503 and "detail" in starting.json()
        try:
            ready = _wait_service(api, sid, {"ready"}, READY_TIMEOUT, poll="models")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{_job_log(world, sid)}") from None
        assert ready["name"] == "tiny-chat"

    base = f"{world.console.url}{view['url']}"
    client = OpenAI(base_url=base, api_key=world.token, max_retries=0, timeout=60)
    model_id = client.models.list().data[0].id
    answer = client.chat.completions.create(model=model_id, messages=[{"role": "user", "content": "What is one plus"
                                                                       " two?"}], max_tokens=6)
    assert answer.object == "chat.completion" and answer.choices[0].finish_reason in ("length", "stop")
    assert answer.usage is not None and answer.usage.completion_tokens > 0
    chunks = list(client.chat.completions.create(model=model_id, messages=[{"role": "user", "content": "hi"}],
                                                 max_tokens=6, stream=True))
    assert len(chunks) >= 2 and all(c.object == "chat.completion.chunk" for c in chunks)
    assert chunks[-1].choices[0].finish_reason in ("length", "stop")

    stranger = world.console.token_for(unique("other"))
    with pytest.raises(NotFoundError):
        OpenAI(base_url=base, api_key=stranger, max_retries=0).models.list()
    with pytest.raises(AuthenticationError):
        OpenAI(base_url=base, api_key="not-a-token", max_retries=0).models.list()
    with httpx.Client(base_url=world.console.url, timeout=30) as anonymous:
        for method in ("GET", "POST", "OPTIONS", "DELETE"):
            refused = anonymous.request(method, f"/api/services/{sid}/v1/chat/completions")
            assert refused.status_code == 401 and refused.json()["detail"], (method, refused.text)
    with _api(world, stranger) as other:
        for path in (f"/api/services/{sid}", f"/api/services/{sid}/keys"):
            assert other.get(path).status_code == 404
        assert other.post(f"/api/services/{sid}/stop").status_code == 404
        assert other.get("/api/services").json() == {"services": []}

    with httpx.Client(base_url=world.console.url, timeout=60, follow_redirects=False,
                      headers={"Accept": "text/html"}) as browser:  # the owner's web session, as the playground uses it
        assert browser.post("/ui/signin", data={"token": world.token}).status_code == 303
        csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', browser.get("/").text)
        assert csrf, "the jobs page carries no CSRF token"
        chat = {"model": model_id, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
        assert browser.get(f"/api/services/{sid}/v1/models").status_code == 200
        forged = browser.post(f"/api/services/{sid}/v1/chat/completions", json=chat)
        assert forged.status_code == 403 and "CSRF" in forged.json()["detail"]
        sent = browser.post(f"/api/services/{sid}/v1/chat/completions", json=chat,
                            headers={"X-CSRF-Token": csrf.group(1)})
        assert sent.status_code == 200 and sent.json()["object"] == "chat.completion", sent.text
        assert browser.get("/api/services").status_code == 401  # the session opens the proxy only

    with _api(world) as api:
        made = api.post(f"/api/services/{sid}/keys", json={"name": "notebook"})
        assert made.status_code == 201, made.text
        key = made.json()
        assert key["key"].startswith("sfk-") and key["key"].startswith(key["prefix"])
        listed = api.get(f"/api/services/{sid}/keys").json()["keys"]
        assert [k["id"] for k in listed] == [key["id"]] and "key" not in listed[0]
        keyed = OpenAI(base_url=base, api_key=key["key"], max_retries=0)
        assert keyed.chat.completions.create(model=model_id, messages=[{"role": "user", "content": "hi"}],
                                             max_tokens=2).choices
        with pytest.raises(AuthenticationError):  # a key reaches nothing but its service's API
            OpenAI(base_url=f"{world.console.url}/api", api_key=key["key"], max_retries=0).models.list()
        revoked = api.delete(f"/api/services/{sid}/keys/{key['id']}")
        assert revoked.status_code == 200 and revoked.json()["revoked_at"]
        with pytest.raises(AuthenticationError):
            keyed.models.list()

        used = api.get(f"/api/services/{sid}").json()
        assert used["expires_at"] >= time.time() + IDLE_TTL_HOURS * 3600 - 30  # the last request moved it
        ended = _wait_service(api, sid, {"stopped"}, 120)  # nobody asks any more: the idle TTL stops it
        assert ended["stop_reason"] == "idle TTL expired", ended
        job = wait_for_status(api, sid, {"stopped", "succeeded"}, timeout=60)
        assert job["status"] in ("stopped", "succeeded")
        gone = api.get(f"/api/services/{sid}/v1/models")
        assert gone.status_code == 409 and "stopped" in gone.json()["detail"]
        assert all(s["id"] != sid for s in api.get("/api/services").json()["services"])
        assert any(s["id"] == sid for s in api.get("/api/services", params={"all": "true"}).json()["services"])


def _refusal(api: httpx.Client, body: dict[str, Any]) -> list[tuple[str, str]]:
    before = api.get("/api/services", params={"all": "true"}).json()["services"]
    refused = api.post("/api/services", json=body)
    assert refused.status_code in (403, 422), refused.text
    answer = refused.json()
    assert answer["detail"] and all(p["hint"] for p in answer["problems"]), answer
    assert api.get("/api/services", params={"all": "true"}).json()["services"] == before  # nothing started
    return [(p["field"], p["code"]) for p in answer["problems"]]


def test_bad_requests_are_refused_at_their_field_and_start_nothing(world: World) -> None:
    with _api(world) as api:
        waiting = submit(api, spec_for(api, series="h200", gpus=8, exp="experiments/nockpt"), profile="h200")
        assert waiting.status_code in (200, 202), waiting.text
        run = waiting.json()["job_id"]
        api.post("/api/job/stop", params={"id": run})
        assert _refusal(api, {"model": "run:r-0000000000"}) == [("model", "model_run_unknown")]
        assert _refusal(api, {"model": f"run:{run}"}) == [("model", "model_no_checkpoint")]
        assert _refusal(api, {"model": "nobody/nothing@1"}) == [("model", "model_unknown")]
        assert _refusal(api, {"model": "/etc"}) == [("model", "model_path_refused")]
        assert _refusal(api, {"model": str(world.model), "ttl_hours": 3}) == [("ttl_hours", "ttl_over_cap")]
        assert _refusal(api, {"model": str(world.model), "gpus": 64}) == [("gpus", "quota_exceeded")]
        playground = api.post("/api/playground/start", json={"model": "run:r-0000000000", "gpus": 0})
        assert playground.status_code == 422 and playground.json()["problems"][0]["field"] == "model"
        assert api.get("/api/playground").json() == {"servings": []}
    with httpx.Client(base_url=world.console.url, timeout=30) as anonymous:
        for method, path in (("POST", "/api/services"), ("GET", "/api/services"), ("GET", "/api/playground")):
            refused = anonymous.request(method, path, json={"model": str(world.model)})
            assert refused.status_code == 401 and refused.json()["detail"]


def test_the_playground_shapes_of_the_official_client(world: World) -> None:
    with _api(world) as api:
        started = api.post("/api/playground/start", json={"model": str(world.model), "gpus": 0, "ttl_s": 1800})
        assert started.status_code == 202, started.text
        body = started.json()
        assert set(body) >= {"run_id", "model", "port", "expires_at"} and body["model"] == str(world.model)
        assert "T" in body["expires_at"] and body["expires_at"].endswith("+00:00")
        listed = api.get("/api/playground").json()["servings"]
        assert [s["run_id"] for s in listed] == [body["run_id"]]
        assert set(listed[0]) == {"run_id", "status", "gpus", "model", "expires_at"}
        extended = api.post(f"/api/playground/{body['run_id']}/extend", json={"extra_s": 600})
        assert extended.status_code == 200 and extended.json()["expires_at"] > body["expires_at"]
        stopped = api.post(f"/api/playground/{body['run_id']}/stop")
        assert stopped.status_code == 200, stopped.text
        assert api.get(f"/api/services/{body['run_id']}").json()["status"] == "stopped"
        assert json.loads(json.dumps(api.get("/api/playground").json())) == {"servings": []}
