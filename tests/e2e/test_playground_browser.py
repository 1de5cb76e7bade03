"""The playground with a real service: Debian's chromium, driven by Playwright, chats with a tiny model served by
`transformers serve` in a real job, streamed through the console's proxy; `sf serve chat` streams from it too, and
the `openai` example of docs/serving.md runs as pasted with a key of the service.

The operator builds the serving runtime once (`sf console runtime build serving-transformers-5.24.0`, cached outside
the clone) and makes a tiny Llama-style model with its interpreter (`starforge.trainers.tiny_model`: random weights,
nothing downloaded) under the console's `model_roots`; the researcher starts a service of that folder with `sf serve
start PATH --wait` and the browser picks it in the playground. One console, one service and one browser for the
module. Every request the page makes is recorded, and none may leave the console.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.e2e.conftest import SF, Researcher, make_researcher
from tests.e2e.test_web_browser import Browsers, browser  # noqa: F401  (the module's chromium)
from tests.integration.conftest import DEFAULT_CONFIG, RUNTIME_CACHE, ConsoleProcess, make_console
from tests.integration.helpers import stop_every_service
from tests.integration.test_sdk_docs import REPO, python_blocks

RUNTIME = "serving-transformers-5.24.0"
READY_S = 900  # a cold start loads the runtime and the model on a busy 2-core machine


@dataclass
class World:
    """The module's console, its tiny model's folder, the researcher and the ready service."""

    console: ConsoleProcess
    model: Path
    me: Researcher
    service: dict[str, Any]


def _config(tmp: Path, models: Path) -> dict[str, Any]:
    return {**DEFAULT_CONFIG, "model_roots": [str(models)], "admission": {"unplaceable": "queue"},
            "runtimes": {"cache_dir": str(RUNTIME_CACHE), "hub_cache": str(tmp / "hub")}}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("playground")
    models = tmp / "models"
    models.mkdir()
    config = tmp / "console.yaml"
    config.write_text(yaml.safe_dump(_config(tmp, models)), encoding="utf-8")
    built = subprocess.run([*SF, "console", "runtime", "build", RUNTIME, "--kind", "cpu", "--config", str(config),
                            "--json"], capture_output=True, text=True, timeout=1800, stdin=subprocess.DEVNULL)
    assert built.returncode == 0, built.stderr[-4000:]
    outside = tmp / "operator"
    outside.mkdir()
    made = subprocess.run([*SF, "console", "runtime", "run", RUNTIME, "--kind", "cpu", "--config", str(config), "--",
                           "-m", "starforge.trainers.tiny_model", "../models/tiny-llama", "--data", "../data"],
                          cwd=outside, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert made.returncode == 0, made.stderr[-4000:]
    # random weights decode greedily to one special token (an empty answer): the model's own generation config
    # samples instead, so the answer has text to stream
    generation = models / "tiny-llama" / "generation_config.json"
    generation.write_text(json.dumps({**json.loads(generation.read_text()), "do_sample": True}), encoding="utf-8")
    console = make_console(tmp_path_factory, "sqlite", config=_config(tmp, models))
    console.start()
    try:
        me = make_researcher(console, tmp / "researcher", "pg", lab=False)
        me.lab.mkdir()  # no lab is needed to serve a model: `sf serve` runs anywhere
        started = me.sf("serve", "start", str(models / "tiny-llama"), "--wait", "--json", timeout=READY_S)
        assert started.returncode == 0, started.stderr[-4000:]
        service = json.loads(started.stdout)
        assert service["status"] == "ready", service
        yield World(console, models / "tiny-llama", me, service)
    finally:
        with console.client(console.token_for(me.user)) as api:
            stop_every_service(api)
        console.stop()
        shutil.rmtree(console.state_dir / "runs", ignore_errors=True)


@pytest.fixture
def browsers(browser: Any, world: World) -> Iterator[Browsers]:  # noqa: F811
    opened = Browsers(browser, world.console)
    yield opened
    for context in opened.contexts:
        context.close()


def _service(world: World) -> dict[str, Any]:
    return dict(world.me.api(f"/api/services/{world.service['id']}"))


def test_sf_serve_chat_streams_an_answer(world: World) -> None:
    sid = world.service["id"]
    said = world.me.sf("serve", "chat", sid, "Hello", "--max-tokens", "8")
    assert said.returncode == 0, said.stderr
    assert said.stdout.strip(), said.stderr
    whole = world.me.json("serve", "chat", sid, "Hello", "--max-tokens", "8")
    assert whole["id"] == sid and whole["content"].strip()
    # another account's token and no token: the service does not exist for them / they are not let in
    other = world.console.token_for("pgother")
    url = f"{world.console.url}/api/services/{sid}/v1/models"
    assert httpx.get(url, headers={"Authorization": f"Bearer {other}"}).status_code == 404
    assert httpx.get(url).status_code == 401


def test_the_openai_example_of_the_serving_page_runs_as_pasted_with_a_key(world: World) -> None:
    """docs/serving.md's ```python block, run as is in a new interpreter with a key of the service."""
    sid = world.service["id"]
    blocks = python_blocks(REPO / "docs" / "serving.md")
    assert len(blocks) == 1 and "from openai import OpenAI" in blocks[0]
    key = world.me.sf("serve", "key", "add", sid, "--name", "docs")
    assert key.returncode == 0, key.stderr
    env = {**world.me.env, "SERVICE_URL": world.console.url + world.service["url"], "SERVICE_KEY": key.stdout.strip()}
    ran = subprocess.run([sys.executable, "-c", blocks[0]], env=env, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr[-4000:]
    # the answer, then the streamed one, each ended by a newline (random weights may write newlines of their own)
    assert ran.stdout.count("\n") >= 2 and ran.stdout.strip(), ran.stdout


def test_the_playground_streams_an_answer_then_extends_and_stops(browsers: Browsers, world: World,
                                                                tmp_path: Path) -> None:
    sid = world.service["id"]
    visit = browsers.signed_in(world.me.token)
    page = visit.page
    page.goto("/ui/playground")
    assert page.locator('nav[aria-label="Main"] a[aria-current="page"]').inner_text() == "Playground"
    page.locator(f'nav.services a[href="/ui/playground/{sid}"]').click()
    page.wait_for_url(f"**/ui/playground/{sid}")
    assert str(world.model) in page.locator("dl.facts").inner_text()
    assert page.locator(f'dl.facts a[href="/ui/jobs/{sid}"]').count() == 1  # its own job's page

    # count how often the answer grows: streamed token by token, it grows more than once before it is done
    page.evaluate("""() => {
      window.__grew = 0;
      new MutationObserver(() => { window.__grew += 1; }).observe(document.getElementById('chat-log'),
        {subtree: true, childList: true, characterData: true});
    }""")
    page.get_by_label("Message").fill("Hello there")
    page.get_by_label("Max tokens").fill("12")
    with page.expect_response(lambda r: r.url.endswith(f"/api/services/{sid}/v1/chat/completions")) as answered:
        page.get_by_role("button", name="Send").click()
    assert answered.value.status == 200
    assert answered.value.headers["content-type"].startswith("text/event-stream")
    reply = page.locator("li.chat-assistant")
    reply.and_(page.locator("[data-done]")).wait_for(timeout=120_000)
    assert reply.get_attribute("data-done") == "true", reply.inner_text()
    assert reply.locator(".said").inner_text().strip()
    assert page.evaluate("window.__grew") > 2  # the user's line, the empty answer, then more than one piece
    assert page.locator("li.chat-user").inner_text().endswith("Hello there")
    page.screenshot(path=str(tmp_path / "playground.png"), full_page=True)

    before = _service(world)["expires_at"]
    page.get_by_label("Hours").fill("2")
    page.get_by_role("button", name="Extend").click()
    page.wait_for_url(f"**/ui/playground/{sid}")
    assert _service(world)["expires_at"] > before

    page.get_by_role("button", name="Stop service").click()
    page.wait_for_url(f"**/ui/playground/{sid}")
    assert _service(world)["status"] == "stopped"
    assert page.locator("#chat").count() == 0
    assert visit.foreign() == []


def test_a_chat_with_a_service_not_ready_says_why(browsers: Browsers, world: World) -> None:
    with httpx.Client(base_url=world.console.url, headers={"Authorization": f"Bearer {world.me.token}"}) as api:
        made = api.post("/api/services", json={"model": "org/tiny", "profile": "h200", "gpus": 8})  # no h200 here
        assert made.status_code == 202, made.text
        sid = made.json()["id"]
        try:
            page = browsers.signed_in(world.me.token).page
            page.goto(f"/ui/playground/{sid}")
            assert "is queued" in page.locator("#chat-wait").inner_text()
            page.get_by_label("Message").fill("anyone there?")
            page.get_by_role("button", name="Send").click()
            failed = page.locator("li.chat-failed")
            failed.wait_for()
            assert failed.get_attribute("data-done") == "failed"
            assert f"service {sid} is queued" in failed.inner_text()
            assert page.get_by_role("button", name="Send").is_enabled()
        finally:
            api.post(f"/api/services/{sid}/stop")
