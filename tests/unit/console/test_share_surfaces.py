"""The fair-share surfaces on an in-process console: `GET /api/admin/shares` and `PUT /api/admin/shares/{username}`
(administrators only; a bad weight refused at `weight` with a hint), `sf admin share show|set`, and the web's Shares
page with its weight form.

The lines come from `quota.shares.report`, the scheduler's own accounting: the surface tests give it fixed lines (so
they say exactly what each surface shows); the last test runs on the real report and weight."""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from starforge.cli.cmd_admin import app as admin_cli
from starforge.cli.cmd_admin import share_rows
from starforge.client import Console
from starforge.console import operator
from starforge.console.app import create_app
from starforge.console.services.quota import shares
from starforge.console.settings import load_settings
from tests.integration import helpers

URL = "http://console.test"


@dataclass(frozen=True)
class Line:
    """A line as `shares.report` gives it (its `ShareLine`)."""

    user_id: int
    username: str
    weight: float
    share: dict[str, float] = field(default_factory=dict)
    usage_gpu_hours: dict[str, float] = field(default_factory=dict)
    allocated: dict[str, int] = field(default_factory=dict)
    borrowed: dict[str, int] = field(default_factory=dict)
    waiting_jobs: int = 0


@dataclass
class World:
    app: Any
    rt: Any
    client: TestClient
    admin: dict[str, str]
    operator: dict[str, str]
    weights: list[tuple[int, float]]


@pytest.fixture()
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # alembic's, about its own configuration
        app = create_app(load_settings(state_dir=tmp_path / "state", run_background=False, capacity={"cpu": 2}))
    rt = app.state.runtime
    admin = {"Authorization": f"Bearer {operator.create_token(rt.db, 'root', 'admin', create=True)}"}
    user = {"Authorization": f"Bearer {operator.create_token(rt.db, 'bob', 'operator', create=True)}"}
    weights: list[tuple[int, float]] = []
    lines = [Line(1, "root", 1.0), Line(2, "bob", 2.0, share={"h200": 5.3333, "cpu": 2.0},
                                        usage_gpu_hours={"h200": 12.5}, allocated={"h200": 8}, borrowed={"h200": 3},
                                        waiting_jobs=4)]
    monkeypatch.setattr(shares, "report", lambda db, *, settings, capacity, now: lines, raising=False)
    monkeypatch.setattr(shares, "set_weight", lambda db, user_id, weight, *, now: weights.append((user_id, weight)),
                        raising=False)
    with TestClient(app) as client:
        yield World(app, rt, client, admin, user, weights)
    rt.db.dispose()


def test_the_api_shows_every_accounts_share_to_administrators_only(world: World) -> None:
    answer = world.client.get("/api/admin/shares", headers=world.admin)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["fair_share"] == {"enabled": True, "half_life_hours": 168.0, "default_weight": 1.0}
    assert body["preemption"] == {"policy": "off", "grace_seconds": 120.0}
    bob = body["shares"][1]
    assert bob == {"user_id": 2, "username": "bob", "weight": 2.0, "share": {"h200": 5.3333, "cpu": 2.0},
                   "usage_gpu_hours": {"h200": 12.5}, "allocated": {"h200": 8}, "borrowed": {"h200": 3},
                   "waiting_jobs": 4}
    refused = world.client.get("/api/admin/shares", headers=world.operator)
    assert refused.status_code == 403 and refused.json()["detail"] == "administrators only"
    assert world.client.put("/api/admin/shares/bob", headers=world.operator, json={"weight": 9}).status_code == 403


def test_a_weight_is_set_and_a_bad_one_refused_at_its_field(world: World) -> None:
    done = world.client.put("/api/admin/shares/bob", headers=world.admin, json={"weight": 2})
    assert done.status_code == 200 and done.json() == {"username": "bob", "weight": 2.0}
    with world.rt.db.read() as db:
        from starforge.console.services.accounts import credentials as accounts

        bob_id = accounts.get_user(db, "bob").id
    assert world.weights == [(bob_id, 2.0)]
    for bad, code in ((0, "out_of_range"), (-1, "out_of_range"), (1e9, "out_of_range"), ("2", "not_a_number"),
                      (True, "not_a_number"), (None, "not_a_number")):
        refused = world.client.put("/api/admin/shares/bob", headers=world.admin, json={"weight": bad})
        assert refused.status_code == 400, bad
        [problem] = refused.json()["problems"]
        assert (problem["field"], problem["code"]) == ("weight", code), bad
        assert "twice the share" in problem["hint"]
    missing = world.client.put("/api/admin/shares/nobody", headers=world.admin, json={"weight": 1})
    assert missing.status_code == 404
    assert world.weights == [(bob_id, 2.0)]  # nothing else was written


def test_sf_admin_share_show_and_set(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    token = world.admin["Authorization"].removeprefix("Bearer ")
    transport = helpers.forwarding(world.client)
    monkeypatch.setattr(Console, "from_home", classmethod(lambda cls, *a, **k: cls(URL, token, transport=transport)))
    runner = CliRunner()
    shown = runner.invoke(admin_cli, ["share", "show"])
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    assert lines[0].startswith("fair share on: usage decays with a half-life of 168 h")
    assert lines[2].split() == ["ACCOUNT", "WEIGHT", "SERIES", "SHARE", "USAGE", "GPU-H", "ALLOCATED", "BORROWED",
                                "WAITING"]
    assert lines[3].split() == ["root", "1", "-", "-", "-", "-", "-", "0"]
    assert lines[4].split() == ["bob", "2", "cpu", "2", "-", "-", "-", "4"]
    assert lines[5].split() == ["h200", "5.33", "12.5", "8", "3"]  # the same account's next series
    as_json = runner.invoke(admin_cli, ["share", "show", "--json"])
    assert json.loads(as_json.stdout)["shares"][1]["borrowed"] == {"h200": 3}
    done = runner.invoke(admin_cli, ["share", "set", "bob", "1.5"])
    assert done.exit_code == 0 and "bob now has weight 1.5" in done.stderr
    refused = runner.invoke(admin_cli, ["share", "set", "bob", "0"])
    assert refused.exit_code == 1 and "weight: must be above 0" in refused.stderr, refused.stderr
    assert runner.invoke(admin_cli, ["share", "set", "bob", "lots"]).exit_code == 2  # not a number: refused by sf


def test_share_rows_put_an_accounts_weight_and_waiting_jobs_on_its_first_row() -> None:
    rows = share_rows([{"username": "ann", "weight": 0.5, "share": {"cpu": 1}, "waiting_jobs": 0},
                       {"username": "ben", "weight": 1, "waiting_jobs": 2}])
    assert rows == [["ann", "0.5", "cpu", "1", "-", "-", "-", "0"], ["ben", "1", "-", "-", "-", "-", "-", "2"]]


def _signed_in(world: World, headers: dict[str, str]) -> tuple[TestClient, str]:
    browser = TestClient(world.app, headers={"Accept": "text/html"}, follow_redirects=False)
    assert browser.post("/ui/signin", data={"token": headers["Authorization"].removeprefix("Bearer ")}).status_code == 303
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', browser.get("/").text)
    assert found
    return browser, found.group(1)


def test_the_shares_page_shows_each_account_and_sets_a_weight(world: World) -> None:
    browser, csrf = _signed_in(world, world.admin)
    page = browser.get("/ui/admin/shares")
    assert page.status_code == 200 and 'href="/ui/admin/shares"' in page.text
    row = re.search(r'<tr data-account="bob">(.*?)</tr>', page.text, re.S)
    assert row and [re.sub("<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row.group(1))] == [
        "bob", "2.0", "cpu", "2.0", "—", "—", "—", "4"]
    assert "5.33" in page.text and "12.5" in page.text
    saved = browser.post("/ui/admin/shares", data={"username": "bob", "weight": "3", "csrf": csrf})
    assert saved.status_code == 303 and saved.headers["location"] == "/ui/admin/shares?done=weight"
    assert world.weights[-1][1] == 3.0
    refused = browser.post("/ui/admin/shares", data={"username": "bob", "weight": "-2", "csrf": csrf})
    assert refused.status_code == 400 and "must be above 0 and at most 10000" in refused.text
    assert browser.post("/ui/admin/shares", data={"username": "bob", "weight": "3"}).status_code == 403  # no CSRF
    user_browser, user_csrf = _signed_in(world, world.operator)
    assert user_browser.get("/ui/admin/shares").status_code == 403
    assert 'href="/ui/admin/shares"' not in user_browser.get("/").text
    assert user_browser.post("/ui/admin/shares", data={"username": "bob", "weight": "3",
                                                       "csrf": user_csrf}).status_code == 403
    assert len(world.weights) == 1


@pytest.mark.skipif(not hasattr(shares, "report") or not hasattr(shares, "set_weight"),
                    reason="quota.shares.report and set_weight land with the fair-share branch")
def test_a_weight_set_over_the_api_is_in_the_report(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        app = create_app(load_settings(state_dir=tmp_path / "state", run_background=False, capacity={"cpu": 2}))
    rt = app.state.runtime
    admin = {"Authorization": f"Bearer {operator.create_token(rt.db, 'root', 'admin', create=True)}"}
    operator.create_token(rt.db, "bob", "operator", create=True)
    with TestClient(app) as client:
        assert client.put("/api/admin/shares/bob", headers=admin, json={"weight": 2.5}).status_code == 200
        lines = {line["username"]: line for line in client.get("/api/admin/shares", headers=admin).json()["shares"]}
    rt.db.dispose()
    assert lines["bob"]["weight"] == 2.5 and lines["root"]["weight"] == 1.0
    assert set(lines["bob"]) == {"user_id", "username", "weight", "share", "usage_gpu_hours", "allocated",
                                 "borrowed", "waiting_jobs"}
