"""The web console's benchmark parts: a run's scores table on its job page, and the compare page of two runs (a
table with the verdicts and a bar chart per suite), with the console's security headers; another account's run is
a 404 there too.

In process: the console application on SQLite without background loops, driven by Starlette's test client as a
browser would; the scores arrive through the real job-side ingest path with each run's own token.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from starforge.console.app import create_app
from starforge.console.services.accounts import credentials as accounts
from starforge.console.settings import load_settings
from tests.integration.helpers import admitted, spec_for, submit
from tests.integration.test_web_pages import Console


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    state = Path(tmp_path_factory.mktemp("web-benchmarks")) / "state"
    app = create_app(load_settings(state_dir=state, run_background=False, capacity={"cpu": 2}))
    tokens = {}
    with app.state.runtime.db.write() as db:
        for name in ("alice", "bob"):
            tokens[name] = accounts.issue_api_token(db, accounts.create_user(db, name, "operator"), "web tests")
    found = Console(app, tokens, {})
    with found.api("alice") as api:
        for name, values in (("base", [0.5, 0.5, 0.5]), ("other", [0.75, 0.75, 0.75])):
            job = admitted(submit(api, spec_for(api, exp=f"experiments/{name}")))
            found.jobs[name] = job
            with app.state.runtime.db.write() as db:
                run_token = accounts.issue_run_token(db, accounts.authenticate(db, tokens["alice"]), job)
            answer = api.post("/api/ingest/benchmark", headers={"X-StarForge-Token": run_token}, json={
                "run_id": job, "runner": "lm-eval", "model": "tiny",
                "scores": [{"benchmark": "basic-arithmetic", "metric": "exact_match", "value": v, "repeat": i}
                           for i, v in enumerate(values)]})
            assert answer.status_code == 200, answer.text
    yield found
    app.state.runtime.db.dispose()


def _text(page: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


def test_the_job_page_shows_the_run_s_scores(console: Console) -> None:
    page = console.browser("alice").get(f"/ui/jobs/{console.jobs['other']}")
    assert page.status_code == 200
    section = re.search(r'<h2 id="h-benchmarks">.*?</section>', page.text, re.S)
    assert section is not None
    assert "basic-arithmetic exact_match 0.7500 0.0000 3" in _text(section.group(0))
    assert 'action="/ui/benchmarks/compare"' in section.group(0)
    live = console.browser("alice").get(f"/ui/jobs/{console.jobs['other']}/live").json()
    assert "0.7500" in live["benchmarks"]


def test_the_compare_page_shows_the_verdicts_and_a_chart_per_suite(console: Console) -> None:
    runs = f"{console.jobs['base']},{console.jobs['other']}"
    page = console.browser("alice").get("/ui/benchmarks/compare", params={"runs": runs})
    assert page.status_code == 200, page.text
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert page.headers["x-content-type-options"] == "nosniff"
    text = _text(page.text)
    assert f"basic-arithmetic exact_match {console.jobs['other']} 0.7500 0.0000 3 +0.2500 better" in text
    assert page.text.count('<svg class="chart"') == 1 and page.text.count('class="chart-bar ') == 2
    assert "http://" not in page.text.replace("http://www.w3.org/2000/svg", "")  # nothing loaded from elsewhere
    assert console.browser("bob").get("/ui/benchmarks/compare", params={"runs": runs}).status_code == 404
    chooser = console.browser("alice").get("/ui/benchmarks/compare")  # no runs yet: the runs with scores to pick
    assert chooser.status_code == 200 and 'aria-current="page">Benchmarks' in chooser.text
    listed = _text(chooser.text)
    assert all(f"{console.jobs[n]}" in listed for n in ("base", "other")) and "basic-arithmetic" in listed
    assert console.jobs["base"] not in console.browser("bob").get("/ui/benchmarks/compare").text
    assert console.browser().get("/ui/benchmarks/compare", params={"runs": runs}).status_code in (303, 401)


def _scores(console: Console, job: str, value: float) -> None:
    with console.app.state.runtime.db.write() as db:
        run_token = accounts.issue_run_token(db, accounts.authenticate(db, console.tokens["bob"]), job)
    with console.api("bob") as api:
        answer = api.post("/api/ingest/benchmark", headers={"Authorization": f"Bearer {run_token}"}, json={
            "run_id": job, "runner": "lm-eval", "model": "tiny",
            "scores": [{"benchmark": "basic-choice", "metric": "acc", "value": value, "repeat": i} for i in (0, 1)]})
        assert answer.status_code == 200, answer.text


def test_a_sweep_s_runs_are_ranked_by_a_benchmark_score(console: Console) -> None:
    from tests.integration.test_sweeps import _points, _post_sweep

    with console.api("bob") as api:
        made = _post_sweep(api, _points(api, [{"max_num_steps": 2}, {"max_num_steps": 3}, {"max_num_steps": 4}]))
        assert made.status_code in (200, 202), made.text
        sweep_id = made.json()["sweep_id"]
        jobs = [j["job_id"] for j in made.json()["jobs"]]
    for job, value in zip(jobs, (0.25, 0.75), strict=False):  # the third run reported no score
        _scores(console, job, value)
    with console.api("bob") as api:
        shown = api.get(f"/api/sweeps/{sweep_id}", params={"metric": "bench/basic-choice/acc"}).json()
        assert api.get(f"/api/sweeps/{sweep_id}", params={"metric": "bench/nope/acc"}).status_code == 422
    assert (shown["metric"], shown["direction"], shown["best"]) == ("bench/basic-choice/acc", "higher", jobs[1])
    assert [(r["job_id"], r["rank"], r["value"]) for r in shown["runs"]] == [(jobs[1], 1, 0.75), (jobs[0], 2, 0.25),
                                                                             (jobs[2], None, None)]
