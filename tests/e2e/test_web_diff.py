"""The diff page and a failed job's page in a real browser (Debian's chromium, Playwright) against a real console:
two runs with different learning rates name that difference first; a failed job says why in words at the top, its
history has no JSON; no request leaves the console and the pages send the console's headers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.e2e.test_web_browser import TINYRL_CONFIG, Browsers, browser, browsers
from tests.integration.conftest import ConsoleProcess, unique
from tests.integration.helpers import admitted, bundle, spec_for, submit, wait_for_end

__all__ = ["browser", "browsers"]  # the fixtures of test_web_browser.py, reused


def _run(api: httpx.Client, exp: str, config: str, **hyper: Any) -> str:
    data = bundle({f"experiments/{exp}/config.yaml": config})
    spec = spec_for(api, exp=f"experiments/{exp}", hyperparams={"max_num_steps": 3, **hyper})
    return admitted(submit(api, spec, data=data))


def test_the_diff_page_names_the_learning_rate_first(browsers: Browsers, console: ConsoleProcess,
                                                     tmp_path: Path) -> None:
    token = console.token_for(unique("diff"))
    with console.client(token) as api:
        a = _run(api, "lr-a", TINYRL_CONFIG.read_text(), learning_rate=1e-5)
        b = _run(api, "lr-a", TINYRL_CONFIG.read_text(), learning_rate=1e-4)
        for job in (a, b):
            wait_for_end(api, job, timeout=300)
        headers = api.get(f"/ui/diff?a={a}&b={b}", headers={"Accept": "text/html"}).headers
    assert headers["content-security-policy"].startswith("default-src 'self'")
    visit = browsers.signed_in(token)
    page = visit.page
    page.goto(f"/ui/jobs/{a}")
    page.get_by_label("Compare with…").fill(b)
    page.get_by_role("button", name="Show the diff").click()
    page.wait_for_url("**/ui/diff?**")
    assert page.locator("#diff-summary").inner_text() == "learning_rate: 1e-05 → 0.0001"
    first = page.locator("section.diff-section h2").first
    assert first.inner_text() == "Hyperparameters"
    assert "hyperparameters.learning_rate" in page.locator("section.diff-section table").first.inner_text()
    assert page.locator("#h-diff-metrics").count() == 1
    page.screenshot(path=str(tmp_path / "diff.png"), full_page=True)
    page.goto("/ui/diff?a=nonsense&b=" + b)
    assert "is not a run id" in page.get_by_role("alert").inner_text()
    assert visit.foreign() == [], visit.foreign()


def test_a_failed_job_says_why_in_words(browsers: Browsers, console: ConsoleProcess, tmp_path: Path) -> None:
    token = console.token_for(unique("fail"))
    with console.client(token) as api:
        job = _run(api, "broken", "grpo:\n  no_such_setting: 1\n")
        assert wait_for_end(api, job, timeout=300)["status"] == "failed"
    visit = browsers.signed_in(token)
    page = visit.page
    page.goto(f"/ui/jobs/{job}")
    headline = page.locator(".failure [data-failure]").inner_text()
    assert "no_such_setting" in headline and not headline.startswith("exit code")
    assert page.locator(".failure .hint").inner_text().startswith("exit code ")
    history = page.locator("#history").inner_text()
    assert "Failed (was running)" in history and "{" not in history
    assert page.locator("#h-inputs").count() == 1 and page.locator(".lineage-self").count() == 1
    page.screenshot(path=str(tmp_path / "failed.png"), full_page=True)
    assert visit.foreign() == [], visit.foreign()
