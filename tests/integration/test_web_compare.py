"""The comparison page over HTTP, in process (no browser): three of alice's runs of different learning rates with
their SVG fallbacks and the inputs table (the differing row marked, a shared one not), chosen by `runs` (comma list
or repeated), by sweep or by experiment; another account's run is a 404 page, too many or unknown runs a clear
refusal; the sweep page links to the comparison and carries its charts' data."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from starforge.console.app import create_app
from starforge.console.services.accounts import credentials as accounts
from starforge.console.services.jobs.decimate import MAX_WIRE_POINTS
from starforge.console.services.jobs.metrics import record_points
from starforge.console.settings import load_settings
from tests.integration.helpers import admitted, spec_for, submit
from tests.integration.test_web_pages import Console

SWEEP = "sweep-cmp-20260101-120000"
RATES = (0.0001, 0.001, 0.01)


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    state = Path(tmp_path_factory.mktemp("web-compare")) / "state"
    app = create_app(load_settings(state_dir=state, run_background=False, capacity={"cpu": 8}))
    with app.state.runtime.db.write() as db:
        tokens = {name: accounts.issue_api_token(db, accounts.create_user(db, name, "operator"), "compare tests")
                  for name in ("alice", "bob")}
    built = Console(app, tokens, {})
    with built.api("alice") as api:
        spec = spec_for(api, exp="experiments/cmp", hyperparams={"max_num_steps": 2})
        for rate in RATES:
            spec["spec"]["hyperparams"]["learning_rate"] = rate
            sent = submit(api, spec, extra_meta={"sweep_id": SWEEP, "sweep_params": {"learning_rate": str(rate)}})
            built.jobs[str(rate)] = admitted(sent, "submitted")
    with built.api("bob") as api:
        built.jobs["bob"] = admitted(submit(api, spec_for(api, exp="experiments/bobs")), "submitted")
    with app.state.runtime.db.write() as db:
        for i, rate in enumerate(RATES):
            steps = 5000 if i == 0 else 10  # one long series: decimated on the wire
            record_points(db, built.jobs[str(rate)], [{"key": "train/reward", "value": step * rate, "step": step}
                                                      for step in range(steps)])
            record_points(db, built.jobs[str(rate)], [{"key": "train/loss", "value": 1.0 + i, "step": 1}])
        record_points(db, built.jobs[str(RATES[0])], [{"key": "only/first", "value": 1.0, "step": 1}])
    yield built
    app.state.runtime.db.dispose()


def _runs(console: Console) -> list[str]:
    return [console.jobs[str(rate)] for rate in RATES]


def _payloads(page: str) -> list[dict[str, object]]:
    return [json.loads(block) for block in re.findall(r'<script type="application/json" class="chart-data">(.*?)'
                                                      r'</script>', page, re.S)]


def _row(page: str, name: str) -> str:
    found = re.search(rf'<tr data-row="{re.escape(name)}"[^>]*>.*?</tr>', page, re.S)
    assert found, f"no row {name}"
    return found.group(0)


def test_three_runs_compared_with_fallback_charts_and_the_differing_input_marked(console: Console) -> None:
    runs = _runs(console)
    page = console.browser("alice").get("/ui/compare", params={"runs": ",".join(runs)})
    assert page.status_code == 200 and "default-src 'self'" in page.headers["content-security-policy"]
    shared = page.text.split('id="h-curves"', 1)[1].split("only some runs", 1)[0]
    assert shared.count('<svg class="chart"') == 2  # train/loss and train/reward: the SVG fallback without JS
    assert shared.count('<polyline class="chart-line chart-run-') == 6  # three runs on each
    payloads = _payloads(page.text)
    assert [p["key"] for p in payloads] == ["train/loss", "train/reward", "only/first"]
    reward = payloads[1]["runs"]
    assert [r["name"] for r in reward] == [f"learning_rate={rate:g}" for rate in RATES]  # type: ignore[index]
    assert len(reward[0]["x"]) <= MAX_WIRE_POINTS and reward[0]["x"][-1] == 4999  # type: ignore[index]
    assert 'class="differs"' in _row(page.text, "hyperparameters.learning_rate")
    assert "differs" not in _row(page.text, "recipe.name") and "differs" not in _row(page.text, "hyperparameters.max_num_steps")
    assert 'class="differs"' in _row(page.text, "final train/loss")
    for run in runs:
        assert f'href="/ui/jobs/{run}"' in page.text
    for other in runs[1:]:
        assert f'href="/ui/diff?a={runs[0]}&amp;b={other}"' in page.text
    repeated = console.browser("alice").get("/ui/compare", params=[("runs", r) for r in runs])
    assert _payloads(repeated.text) == payloads  # a form of checkboxes sends `runs` repeated: the same page


def test_a_sweep_or_an_experiment_names_its_runs(console: Console) -> None:
    browser = console.browser("alice")
    by_sweep = browser.get("/ui/compare", params={"sweep": SWEEP})
    by_exp = browser.get("/ui/compare", params={"exp": "experiments/cmp"})
    for page in (by_sweep, by_exp):
        assert page.status_code == 200
        assert all(f'href="/ui/jobs/{run}"' in page.text for run in _runs(console))
    sweep = browser.get(f"/ui/sweeps/{SWEEP}")
    assert f'href="/ui/compare?sweep={SWEEP}"' in sweep.text
    kinds = [p["kind"] for p in _payloads(sweep.text)]
    assert kinds == ["line", "scatter"]  # the ranking metric over steps; final value by learning_rate
    scatter = _payloads(sweep.text)[1]
    assert scatter["xlog"] is True and scatter["x"] == list(RATES)


def test_refusals_are_pages(console: Console) -> None:
    browser = console.browser("alice")
    foreign = browser.get("/ui/compare", params={"runs": f"{_runs(console)[0]},{console.jobs['bob']}"})
    assert foreign.status_code == 404 and "Not found" in foreign.text and console.jobs["bob"] in foreign.text
    unknown = browser.get("/ui/compare", params={"runs": "r-nosuchrun"})
    assert unknown.status_code == 404 and "r-nosuchrun" in unknown.text
    many = browser.get("/ui/compare", params={"runs": ",".join(f"r-x{i}" for i in range(21))})
    assert many.status_code == 400 and "at most 20" in many.text
    assert "default-src 'self'" in many.headers["content-security-policy"]
    form = browser.get("/ui/compare")
    assert form.status_code == 200 and form.text.count('type="checkbox" name="runs"') == 3
    assert 'href="/ui/compare" aria-current="page"' in form.text


def test_a_new_point_is_drawn_though_the_series_was_remembered(console: Console) -> None:
    run = console.jobs[str(RATES[1])]
    browser = console.browser("alice")

    def loss() -> dict[str, object]:
        payloads = _payloads(browser.get("/ui/compare", params={"runs": run}).text)
        return next(p for p in payloads if p["key"] == "train/loss")["runs"][0]  # type: ignore[index, no-any-return]

    assert loss()["y"] == [2.0] and loss()["y"] == [2.0]  # the second view from memory, the same
    with console.app.state.runtime.db.write() as db:
        record_points(db, run, [{"key": "train/loss", "value": 0.5, "step": 2}])
    assert loss()["y"] == [2.0, 0.5] and loss()["x"] == [1, 2]
