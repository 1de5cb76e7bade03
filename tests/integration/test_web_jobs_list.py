"""The jobs list's columns over HTTP: duration, the primary metric's last value (read in one query), sweep and
follow-up marks, attempts, a note only where the reason says something, the column menu and the comparison form.

The console application on SQLite in a temporary state directory, without background loops, driven by Starlette's
test client as a browser would; the jobs and their metric points are written straight into the store (the page,
not the submission path, is tested), with fixed times so every duration is known.
"""

from __future__ import annotations

import html
import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy import Engine, event
from starlette.testclient import TestClient

from starforge.console.app import create_app
from starforge.console.services.accounts import credentials as accounts
from starforge.console.services.jobs.metrics import record_points
from starforge.console.settings import load_settings
from starforge.console.store.models import Job, Sweep

HTML = {"Accept": "text/html"}
JSON = {"Accept": "application/json"}
SWEEP = "sweep-lr-20261201-000000"
T0 = 1_790_000_000.0  # submission times of the jobs below (their durations use their own start and end)


@dataclass
class Listing:
    """The in-process console and a session cookie per user."""

    app: FastAPI
    tokens: dict[str, str]

    def browser(self, user: str) -> TestClient:
        """Return a client signed in through the sign-in form as `user`."""
        client = TestClient(self.app, headers=HTML, follow_redirects=False)
        assert client.post("/ui/signin", data={"token": self.tokens[user]}).status_code == 303
        return client


def _job(user_id: int, ref: str, **fields: Any) -> Job:
    values: dict[str, Any] = {"username": "ada", "name": ref, "exp": "experiments/lr", "profile": "cpu",
                              "recipe": "tinyrl/grpo", "status": "succeeded", "reason": "exit code 0",
                              "requested_gpus": 1, "spec_json": json.dumps({"spec": {}}), "submitted_at": T0}
    return Job(id=ref, user_id=user_id, **(values | fields))


@pytest.fixture(scope="module")
def listing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Listing]:
    state = Path(tmp_path_factory.mktemp("web-jobs-list")) / "state"
    app = create_app(load_settings(state_dir=state, run_background=False))
    with app.state.runtime.db.write() as db:
        ada = accounts.create_user(db, "ada", "operator")
        eve = accounts.create_user(db, "eve", "operator")
        tokens = {"ada": accounts.issue_api_token(db, ada, "t"), "eve": accounts.issue_api_token(db, eve, "t")}
        db.add(Sweep(id=SWEEP, user_id=ada.id, exp="experiments/lr", created_at=T0))
        db.add_all([
            _job(ada.id, "r-done", started_at=T0 + 10, finished_at=T0 + 10 + 3725),  # 1 h 02 min 05 s
            _job(ada.id, "r-swept", sweep_id=SWEEP, submitted_at=T0 + 1, started_at=T0 + 5, finished_at=T0 + 50),
            _job(ada.id, "r-export", recipe="custom/custom", action="export", parent_id="r-done",
                 submitted_at=T0 + 2, started_at=T0 + 60, finished_at=T0 + 62),
            _job(ada.id, "r-failed", status="failed", reason="CUDA out of memory at step 12", attempts=3, restarts=2,
                 submitted_at=T0 + 3, started_at=T0 + 100, finished_at=T0 + 200),
            _job(ada.id, "r-waits", status="pending", reason="waiting for capacity: no h200 GPUs free",
                 submitted_at=time.time() - 725),
            _job(eve.id, "r-eves", username="eve"),
        ])
    with app.state.runtime.db.write() as db:
        record_points(db, "r-done", [{"key": "train/reward", "step": s, "value": s / 10} for s in range(1, 51)])
        record_points(db, "r-done", [{"key": "train/loss", "step": s, "value": 9.0} for s in range(1, 51)])
        record_points(db, "r-swept", [{"key": "reward", "step": 1, "value": 0.25},  # the recipe's alias
                                      {"key": "reward", "step": 2, "value": 0.5}])
        record_points(db, "r-export", [{"key": "train/loss", "step": 1, "value": 1.5}])
        record_points(db, "r-eves", [{"key": "train/reward", "step": 1, "value": 99.0}])
    yield Listing(app, tokens)
    app.state.runtime.db.dispose()


def _cells(page: str) -> dict[str, dict[str, str]]:
    """Return `{job_ref: {column key: text}}` of the page's table (`job` for the Job cell)."""
    found = {}
    for ref, row in re.findall(r'<tr data-job="([^"]+)">(.*?)</tr>', page, re.S):
        cells = {key: " ".join(html.unescape(re.sub(r"<[^>]+>", " ", text)).split())
                 for key, text in re.findall(r'<td data-col="([a-z]+)"[^>]*>(.*?)</td>', row, re.S)}
        job = re.search(r'</td>\s*<td>(.*?)</td>', row, re.S)
        assert job
        found[ref] = cells | {"job": job.group(1)}
    return found


def test_the_columns_say_how_long_what_metric_and_how_many_attempts(listing: Listing) -> None:
    page = listing.browser("ada").get("/")
    assert page.status_code == 200
    cells = _cells(page.text)
    assert set(cells) == {"r-done", "r-swept", "r-export", "r-failed", "r-waits"}  # only ada's own
    assert cells["r-done"]["duration"] == "1 h 02 min"
    assert cells["r-swept"]["duration"] == "45 s" and cells["r-export"]["duration"] == "2 s"
    assert cells["r-waits"]["duration"].startswith("waiting 12 min")
    # two recipes with different primary metrics: the header says so and each value names its metric
    assert '<th scope="col" data-col="metric">Primary metric</th>' in page.text
    assert cells["r-done"]["metric"] == "train/reward 5"  # the last of 50 points, not train/loss
    assert cells["r-swept"]["metric"] == "train/reward 0.5"  # reported under the recipe's alias `reward`
    assert cells["r-export"]["metric"] == "train/loss 1.5"
    assert cells["r-failed"]["metric"] == ""  # nothing reported
    assert cells["r-failed"]["attempts"] == "3 (2 restarts)" and cells["r-done"]["attempts"] == ""


def test_one_recipe_names_its_metric_in_the_header(listing: Listing) -> None:
    page = listing.browser("ada").get("/", params={"sweep": SWEEP})
    assert '<th scope="col" data-col="metric">train/reward</th>' in page.text
    assert _cells(page.text)["r-swept"]["metric"] == "0.5"


def test_the_note_drops_the_noise_and_keeps_what_tells_something(listing: Listing) -> None:
    cells = _cells(listing.browser("ada").get("/").text)
    assert '<th scope="col" data-col="note">Note</th>' in listing.browser("ada").get("/").text
    assert cells["r-done"]["note"] == ""  # "exit code 0" on a succeeded job says nothing
    assert cells["r-failed"]["note"] == "CUDA out of memory at step 12"
    assert cells["r-waits"]["note"] == "waiting for capacity: no h200 GPUs free"


def test_sweep_runs_and_follow_ups_are_marked_with_links(listing: Listing) -> None:
    cells = _cells(listing.browser("ada").get("/").text)
    assert (f'<a class="mark" href="/ui/sweeps/{SWEEP}" aria-label="run of sweep {SWEEP}"'
            in cells["r-swept"]["job"])
    assert '<a class="mark" href="/ui/jobs/r-done" aria-label="export of job r-done"' in cells["r-export"]["job"]
    assert 'class="mark"' not in cells["r-done"]["job"]


def test_the_table_is_a_form_selecting_runs_for_the_comparison(listing: Listing) -> None:
    page = listing.browser("ada").get("/").text
    form = page.split('<form method="get" action="/ui/compare" id="compare-form"', 1)[1].split("</form>", 1)[0]
    assert re.findall(r'<input type="checkbox" name="runs" value="([^"]+)"', form) == [
        "r-waits", "r-failed", "r-export", "r-swept", "r-done"]  # newest first, as listed
    assert '<button type="submit" id="compare-selected"' in form
    assert re.findall(r'<input [^>]*name="', form) == ['<input type="checkbox" name="'] * 5  # nothing else sent
    assert 'id="columns-menu" hidden' in page and page.count('data-column="') == 10  # shown by the script only
    assert "/ui/compare?exp=" not in page and "/ui/compare?sweep=" not in page
    by_exp = listing.browser("ada").get("/", params={"exp": "lr"}).text
    assert '<a href="/ui/compare?exp=lr">Compare this experiment\'s runs</a>' in by_exp
    by_sweep = listing.browser("ada").get("/", params={"sweep": SWEEP}).text
    assert f'<a href="/ui/compare?sweep={SWEEP}">Compare this sweep\'s runs</a>' in by_sweep


def test_the_live_cells_read_as_the_page_renders_them(listing: Listing) -> None:
    browser = listing.browser("ada")
    cells = _cells(browser.get("/").text)
    live = {j["job_ref"]: j for j in browser.get("/ui/api/jobs", headers=JSON).json()["jobs"]}
    assert set(live) == set(cells)
    for ref, job in live.items():
        assert (job["metric"], job["attempts"], job["message"]) == (
            cells[ref]["metric"], cells[ref]["attempts"], cells[ref]["note"]), ref
        if ref != "r-waits":  # its wait grows by the second
            assert job["duration"] == cells[ref]["duration"], ref


def test_the_last_values_of_a_page_take_one_query(listing: Listing) -> None:
    statements: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(statement)

    browser = listing.browser("ada")
    event.listen(Engine, "before_cursor_execute", seen)  # every engine: this module's console is the only one
    try:
        assert browser.get("/").status_code == 200
    finally:
        event.remove(Engine, "before_cursor_execute", seen)
    assert sum("FROM metrics" in s for s in statements) == 1, statements
