"""The web console in a real browser: Debian's chromium, driven by Playwright, against a real console process.

One console and one browser for the module; each user gets a browser context of its own (its own cookies). Every
request a page makes is recorded, and none may leave the console. Screenshots go to pytest's temporary folder.
Without chromium (or Playwright) the module skips loudly, and fails under CI (`STARFORGE_REQUIRE_SERVICES=1`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from starforge.console.web import COOKIE
from tests.conftest import require_service, service_unavailable
from tests.integration.conftest import ConsoleProcess, unique
from tests.integration.helpers import admitted, bundle, spec_for, submit

HOW = "run `scripts/services.sh up` (installs Debian's chromium) and `pip install -e .[dev]` (Playwright)"
TINYRL_CONFIG = Path(__file__).resolve().parents[2] / "src/starforge/recipes/builtin/tinyrl/grpo/template/config.yaml"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = require_service("Chromium", "STARFORGE_CHROMIUM", HOW)
    if not os.access(executable, os.X_OK):
        service_unavailable("Chromium", f"STARFORGE_CHROMIUM={executable} is not an executable", HOW)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        service_unavailable("Playwright", "the playwright package is not installed", HOW)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, headless=True,
                                              args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        yield launched
        launched.close()


@dataclass
class Visit:
    """One user's browser context on the console, with every URL its pages requested."""

    page: Any
    origin: str
    requests: list[str] = field(default_factory=list)

    def foreign(self) -> list[str]:
        """Return the requests that did not go to the console."""
        return [url for url in self.requests if not url.startswith(self.origin + "/")]


@dataclass
class Browsers:
    """Signs users in, each in a fresh browser context; every context is closed after the test (open log streams
    would otherwise hold the console's shutdown)."""

    browser: Any
    console: ConsoleProcess
    contexts: list[Any] = field(default_factory=list)

    def sign_in(self, token: str) -> Visit:
        """Open the console in a fresh context and sign in through the form, as a person would."""
        context = self.browser.new_context(base_url=self.console.url, viewport={"width": 1400, "height": 900})
        self.contexts.append(context)
        context.set_default_timeout(15_000)
        visit = Visit(context.new_page(), self.console.url)
        visit.page.on("request", lambda request: visit.requests.append(request.url))
        visit.page.goto("/")
        visit.page.get_by_label("API token").fill(token)
        visit.page.get_by_role("button", name="Sign in").click()
        visit.page.wait_for_url(self.console.url + "/")
        return visit

    def signed_in(self, token: str) -> Visit:
        """Open the console in a fresh context holding a session made through the sign-in form over HTTP (quicker
        than typing; `sign_in` covers the form in the browser)."""
        made = httpx.post(f"{self.console.url}/ui/signin", data={"token": token})
        assert made.status_code == 303, made.text
        context = self.browser.new_context(base_url=self.console.url, viewport={"width": 1400, "height": 900})
        self.contexts.append(context)
        context.set_default_timeout(15_000)
        context.add_cookies([{"name": COOKIE, "value": made.cookies[COOKIE], "url": self.console.url}])
        visit = Visit(context.new_page(), self.console.url)
        visit.page.on("request", lambda request: visit.requests.append(request.url))
        return visit


@pytest.fixture
def browsers(browser: Any, console: ConsoleProcess) -> Iterator[Browsers]:
    opened = Browsers(browser, console)
    yield opened
    for context in opened.contexts:
        context.close()


def _submit(api: httpx.Client, name: str, status: str = "submitted", **spec_extra: Any) -> str:
    data = bundle({f"experiments/{name}/config.yaml": TINYRL_CONFIG.read_text()})
    return admitted(submit(api, spec_for(api, exp=f"experiments/{name}", **spec_extra), data=data), status)


def _waiting_job(api: httpx.Client, name: str) -> str:
    """Submit a job that waits (no h200 GPUs on this console), so it can be stopped at leisure."""
    return _submit(api, name, "pending", series="h200", gpus=8)


def test_a_tinyrl_job_runs_live_with_its_log_and_chart(browsers: Browsers, console: ConsoleProcess,
                                                       tmp_path: Path) -> None:
    user = unique("web")
    with console.client(console.token_for(user)) as api:
        visit = browsers.sign_in(console.token_for(user))
        job = _submit(api, "live-toy", hyperparams={"max_num_steps": 12})
        page = visit.page
        page.reload()
        page.get_by_role("link", name="live-toy").click()
        page.wait_for_url(f"**/ui/jobs/{job}")
        page.locator("#job [data-status]", has_text="succeeded").wait_for(timeout=120_000)
        page.locator("#log[data-ended='succeeded']").wait_for()  # the SSE stream ran to its end event
        assert "step" in page.locator("#log").inner_text()
        chart = page.locator('#charts figure[data-chart][data-drawn="true"] canvas').first  # uPlot, live
        chart.wait_for()
        assert chart.is_visible()
        assert page.locator("#charts figcaption", has_text="train/reward").count() == 1
        page.locator("#history td", has_text="succeeded").first.wait_for()  # refreshed in place as the job ended
        page.screenshot(path=str(tmp_path / "job.png"), full_page=True)
        page.goto("/")
        row = page.locator(f'tr[data-job="{job}"]')
        assert row.locator("[data-status]").inner_text() == "succeeded"
        page.screenshot(path=str(tmp_path / "jobs.png"))
        page.set_viewport_size({"width": 390, "height": 800})  # a phone, in the dark theme
        page.emulate_media(color_scheme="dark")
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")  # reflowed, no sideways scroll
        page.screenshot(path=str(tmp_path / "jobs-narrow-dark.png"))
    assert visit.foreign() == [], visit.foreign()
    assert any(url.endswith(f"/ui/jobs/{job}/logs") for url in visit.requests)


def test_stopping_and_who_may_see_and_stop(browsers: Browsers, console: ConsoleProcess, tmp_path: Path) -> None:
    owner, viewer, other = unique("own"), unique("view"), unique("oth")
    tokens = {name: console.token_for(name) for name in (owner, viewer, other)}
    with console.client(tokens[owner]) as api, console.client(tokens[viewer]) as as_viewer:
        mine = _waiting_job(api, "stop-me")
        watched = _waiting_job(as_viewer, "watch-me")
    with console.client(console.admin_token) as admin:
        assert admin.patch(f"/api/admin/users/{viewer}/role", params={"role": "viewer"}).status_code == 200

    visit = browsers.sign_in(tokens[owner])
    page = visit.page
    page.goto(f"/ui/jobs/{mine}")
    page.get_by_role("button", name="Stop job").click()
    page.locator("#job [data-status]", has_text="stopped").wait_for()
    assert page.get_by_role("button", name="Stop job").count() == 0
    page.screenshot(path=str(tmp_path / "stopped.png"))

    seen = browsers.signed_in(tokens[viewer])
    seen.page.goto(f"/ui/jobs/{watched}")
    seen.page.locator("#job [data-status]").wait_for()
    assert watched in seen.page.content()
    assert seen.page.get_by_role("button", name="Stop job").count() == 0

    stranger = browsers.signed_in(tokens[other])
    stranger.page.goto("/")
    assert stranger.page.get_by_role("heading", name="Jobs").is_visible()
    assert mine not in stranger.page.content() and watched not in stranger.page.content()
    answer = stranger.page.goto(f"/ui/jobs/{mine}")
    assert answer is not None and answer.status == 404
    assert stranger.page.get_by_role("heading", name="Not found").is_visible()

    for each in (visit, seen, stranger):
        assert each.foreign() == [], each.foreign()
    with console.client(tokens[viewer]) as as_viewer:
        assert as_viewer.get("/api/job", params={"id": watched}).json()["status"] != "stopped"
