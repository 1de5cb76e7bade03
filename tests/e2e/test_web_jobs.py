"""The jobs list in a real browser (Debian's chromium, driven by Playwright, against a real console process): the
columns the reader hides stay hidden across a reload (localStorage), and ticking two runs enables "Compare selected",
whose form opens `/ui/compare?runs=A&runs=B`. No request leaves the console.

The browser and the per-user contexts are test_web_browser.py's fixtures; the jobs wait (no h200 GPUs here), so the
module needs no runtime and no job ever runs.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.e2e import test_web_browser as shared
from tests.e2e.test_web_browser import Browsers
from tests.integration.conftest import ConsoleProcess, unique
from tests.integration.helpers import admitted, spec_for, submit

browser, browsers = shared.browser, shared.browsers  # that module's fixtures (one chromium, a context per user)


def _waiting(api: httpx.Client, name: str) -> str:
    return admitted(submit(api, spec_for(api, exp=f"experiments/{name}", series="h200", gpus=8)), "pending")


def test_a_hidden_column_stays_hidden_after_a_reload(browsers: Browsers, console: ConsoleProcess,
                                                     tmp_path: Path) -> None:
    user = unique("cols")
    with console.client(console.token_for(user)) as api:
        job = _waiting(api, "columns")
    visit = browsers.signed_in(console.token_for(user))
    page = visit.page
    page.goto("/")
    profile = page.locator('#jobs th[data-col="profile"]')
    assert profile.is_visible()
    page.get_by_text("Columns", exact=True).click()  # the menu the script shows
    page.get_by_label("Profile", exact=True).uncheck()
    assert profile.is_hidden() and page.locator(f'tr[data-job="{job}"] td[data-col="profile"]').is_hidden()
    page.screenshot(path=str(tmp_path / "jobs-columns.png"))
    page.reload()
    page.locator("#columns-menu:not([hidden])").wait_for()  # the script ran again and read the stored choice
    assert profile.is_hidden() and page.locator('#jobs th[data-col="recipe"]').is_visible()
    assert not page.get_by_label("Profile", exact=True).is_checked()
    page.get_by_text("Columns", exact=True).click()
    page.get_by_label("Profile", exact=True).check()
    assert profile.is_visible()
    page.set_viewport_size({"width": 390, "height": 800})  # a phone: the table becomes a list of labelled cells
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.screenshot(path=str(tmp_path / "jobs-narrow.png"))
    assert visit.foreign() == [], visit.foreign()


def test_two_ticked_runs_open_the_comparison(browsers: Browsers, console: ConsoleProcess) -> None:
    user = unique("pick")
    with console.client(console.token_for(user)) as api:
        older, newer = _waiting(api, "pick-a"), _waiting(api, "pick-b")
    visit = browsers.signed_in(console.token_for(user))
    page = visit.page
    page.goto("/")
    button = page.locator("#compare-selected")
    assert button.is_disabled()  # with the script: nothing to compare until two runs are ticked
    page.get_by_label(f"Select pick-b ({newer}) to compare").check()
    assert button.is_disabled()
    page.get_by_label(f"Select pick-a ({older}) to compare").check()
    assert button.is_enabled() and button.inner_text() == "Compare 2 selected"
    button.click()
    page.wait_for_url(f"**/ui/compare?runs={newer}&runs={older}")  # listed newest first; the page is another part's
    assert page.url == f"{console.url}/ui/compare?runs={newer}&runs={older}"
    assert visit.foreign() == [], visit.foreign()
