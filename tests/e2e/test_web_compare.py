"""The comparison page, the sweep's charts and a job's charts in a real browser (Debian's chromium, Playwright): three
runs of one account with different learning rates drawn as three uPlot curves; the learning_rate row marked as
differing and a shared input not; hovering shows a value; a drag zooms the x axis and a double-click resets it; the
sweep page draws its charts; no request leaves the console, and each page sends the headers of docs/security.md.

The runs wait in the queue (no h200 GPUs here); their points go in through the ingest route a job's runner uses, with
a run token made for each as the console makes one at launch.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import httpx

from starforge.console.api.routers.web import PAGE_HEADERS
from starforge.console.services.accounts import credentials as accounts
from tests.e2e.test_web_browser import TINYRL_CONFIG, Browsers, browser, browsers  # noqa: F401  (the module's chromium)
from tests.integration.conftest import ConsoleProcess, unique
from tests.integration.helpers import admitted, bundle, spec_for, submit

RATES = (0.0001, 0.001, 0.01)
STEPS = 300


def _runs(console: ConsoleProcess, api: httpx.Client, token: str, sweep: str) -> list[str]:
    """Three waiting runs of a sweep, their points sent through the ingest route a job's runner uses."""
    runs = [_sweep_run(api, sweep, rate) for rate in RATES]
    for i, run in enumerate(runs):
        with console.database().write() as db:
            run_token = accounts.issue_run_token(db, accounts.authenticate(db, token), run)
        points = [{"key": key, "step": step, "value": value, "ts": 1_700_000_000.0 + step}
                  for step in range(STEPS)
                  for key, value in (("train/reward", math.log1p(step) * (i + 1)), ("train/loss", 1.0 / (step + 1 + i)))]
        sent = api.post("/api/ingest/metrics", headers={"X-StarForge-Token": run_token},
                        json={"run_id": run, "points": points})
        assert sent.status_code == 200, sent.text
    return runs


def _sweep_run(api: httpx.Client, sweep: str, rate: float) -> str:
    spec = spec_for(api, exp="experiments/cmp-toy", series="h200", gpus=8,
                    hyperparams={"max_num_steps": 12, "learning_rate": rate})
    data = bundle({"experiments/cmp-toy/config.yaml": TINYRL_CONFIG.read_text()})
    sent = submit(api, spec, data=data, extra_meta={"sweep_id": sweep, "sweep_params": {"learning_rate": str(rate)}})
    return admitted(sent, "pending")


def _headers_hold(answer: Any) -> None:
    assert answer is not None and answer.status == 200
    got = answer.headers
    for name, value in PAGE_HEADERS.items():
        assert got[name.lower()] == value, name


def _range(chart: Any) -> tuple[float, float]:
    return float(chart.get_attribute("data-x-min")), float(chart.get_attribute("data-x-max"))


def test_three_runs_compared_hovered_zoomed_and_the_sweep_charted(browsers: Browsers, console: ConsoleProcess,  # noqa: F811
                                                                   tmp_path: Path) -> None:
    user = unique("cmp")
    sweep = f"sweep-{user}-20260101-120000"
    token = console.token_for(user)
    with console.client(token) as api:
        runs = _runs(console, api, token, sweep)
    visit = browsers.signed_in(token)
    page = visit.page
    _headers_hold(page.goto("/ui/compare?runs=" + ",".join(runs)))
    chart = page.locator('figure[data-chart][data-drawn="true"]', has_text="train/reward")
    chart.wait_for()
    assert chart.get_attribute("data-series") == "3"
    assert chart.locator("canvas").count() >= 1 and chart.locator("svg.chart").count() == 0  # uPlot replaced the SVG
    names = chart.locator(".chart-legend-name").all_inner_texts()
    assert names == [f"learning_rate={rate:g}" for rate in RATES]
    assert "differs" in (page.locator('tr[data-row="hyperparameters.learning_rate"]').get_attribute("class") or "")
    assert "differs" not in (page.locator('tr[data-row="recipe.name"]').get_attribute("class") or "")
    assert page.locator('tr[data-row="hyperparameters.learning_rate"] .sr-only').inner_text() == "differs"

    values = chart.locator(".chart-legend-value")
    assert values.all_inner_texts() == ["—"] * 3
    over = chart.locator(".u-over")
    box = over.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.5)
    page.wait_for_function("el => el.textContent !== '—'", arg=values.first.element_handle())
    shown = values.all_inner_texts()
    assert all(text != "—" for text in shown) and float(shown[0].rstrip("kM")) > 0
    assert chart.locator(".chart-legend-x").inner_text().startswith("step ")

    full = _range(chart)
    page.mouse.move(box["x"] + box["width"] * 0.2, box["y"] + box["height"] * 0.5)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.5, steps=5)
    page.mouse.up()
    page.wait_for_function("([el, max]) => parseFloat(el.dataset.xMax) < max", arg=[chart.element_handle(), full[1]])
    zoomed = _range(chart)
    assert full[0] < zoomed[0] < zoomed[1] < full[1]
    page.screenshot(path=str(tmp_path / "compare-zoomed.png"), full_page=True)
    over.dblclick(position={"x": box["width"] * 0.5, "y": box["height"] * 0.5})
    page.wait_for_function("([el, max]) => parseFloat(el.dataset.xMax) >= max", arg=[chart.element_handle(), full[1]])
    assert _range(chart) == full

    page.get_by_label("Log scale (y)").check()  # real labelled controls: the charts are drawn again
    page.get_by_label("Smoothing").fill("0.9")
    page.get_by_label("X axis").select_option("relative")
    chart.locator("canvas").first.wait_for()
    assert chart.get_attribute("data-series") == "3"
    page.screenshot(path=str(tmp_path / "compare.png"), full_page=True)
    page.emulate_media(color_scheme="dark")
    page.reload()
    chart.wait_for()
    page.screenshot(path=str(tmp_path / "compare-dark.png"), full_page=True)

    _headers_hold(page.goto(f"/ui/sweeps/{sweep}"))
    drawn = page.locator('figure[data-chart][data-drawn="true"]')
    drawn.first.wait_for()
    assert drawn.count() == 2  # the ranking metric over steps, and final value by learning_rate
    assert drawn.first.get_attribute("data-series") == "3"
    assert page.evaluate("[...document.querySelectorAll('figure[data-chart] canvas')].every(c => c.width > 0)")
    page.get_by_role("link", name="Compare these runs").click()
    page.wait_for_url(f"**/ui/compare?sweep={sweep}")
    page.locator('figure[data-chart][data-drawn="true"]').first.wait_for()

    _headers_hold(page.goto(f"/ui/jobs/{runs[0]}"))
    page.locator('#charts figure[data-chart][data-drawn="true"]').first.wait_for()
    assert page.locator("#charts figure[data-chart]").count() == 2
    assert visit.foreign() == [], visit.foreign()
    assert any("/ui/static/vendor/uplot/uPlot.iife.min.js" in url for url in visit.requests)
