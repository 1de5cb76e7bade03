"""The web console's sweeps pages and admin forms in process: a sweep's runs ranked and sorted as the API ranks them,
the jobs page's sweep filter, foreign sweeps as 404 pages; accounts, API tokens (the secret shown once) and quotas
made from the admin page with the API's services, each refusal shown at its field."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from starforge.console.app import create_app
from starforge.console.services.accounts import credentials as accounts
from starforge.console.services.jobs.metrics import record_points
from starforge.console.settings import load_settings
from tests.integration.helpers import admitted, spec_for, submit
from tests.integration.test_web_pages import Console

SWEEP = "sweep-toy-20260101-120000"
RATES = (0.05, 0.1, 0.2)
REWARDS = (0.5, 0.9, 0.7)  # the run of 0.1 is best by reward
LOSSES = (0.3, 0.4, 0.1)  # the run of 0.2 is best by loss


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    state = Path(tmp_path_factory.mktemp("web-sweeps")) / "state"
    app = create_app(load_settings(state_dir=state, run_background=False, capacity={"cpu": 8}))
    tokens = {}
    with app.state.runtime.db.write() as db:
        for name, role in {"root": "admin", "alice": "operator", "bob": "operator"}.items():
            tokens[name] = accounts.issue_api_token(db, accounts.create_user(db, name, role), "web tests")
    built = Console(app, tokens, {})  # its jobs: alice's sweep runs, by learning rate, in submission order
    with built.api("alice") as api:
        spec = spec_for(api, hyperparams={"max_num_steps": 2})
        for rate in RATES:  # the official client's way: each run names the sweep and its point
            spec["spec"]["hyperparams"]["learning_rate"] = rate
            sent = submit(api, spec, extra_meta={"sweep_id": SWEEP, "sweep_params": {"learning_rate": str(rate)}})
            built.jobs[str(rate)] = admitted(sent, "submitted")  # 8 CPU slots for these 4 jobs
        alone = submit(api, spec_for(api, exp="experiments/alone"))
        admitted(alone, "submitted")
    with app.state.runtime.db.write() as db:
        for run, reward, loss in zip(built.jobs.values(), REWARDS, LOSSES, strict=True):
            record_points(db, run, [{"key": "train/reward", "value": 0.1, "step": 1},
                                    {"key": "train/reward", "value": reward, "step": 2},
                                    {"key": "train/loss", "value": loss, "step": 2}])
    yield built
    app.state.runtime.db.dispose()


def _runs(console: Console) -> list[str]:
    return list(console.jobs.values())


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    assert found, "the page carries no CSRF token"
    return found.group(1)


def _row_order(page: str) -> list[str]:
    table = page.split('<table class="runs">', 1)[1].split("</table>", 1)[0]
    return re.findall(r'<tr data-job="([^"]+)"', table)


def _field_problem(page: str, field_id: str) -> str:
    found = re.search(rf'id="{field_id}"[^>]*aria-invalid="true".*?id="{field_id}-problem"[^>]*>([^<]*)<', page,
                      re.S)
    assert found, f"no problem shown at {field_id}"
    return found.group(1)


def test_the_sweeps_page_lists_the_callers_sweeps(console: Console) -> None:
    page = console.browser("alice").get("/ui/sweeps")
    assert page.status_code == 200 and f'href="/ui/sweeps/{SWEEP}"' in page.text
    assert f'href="/?sweep={SWEEP}"' in page.text and 'href="/ui/sweeps" aria-current="page"' in page.text
    assert SWEEP not in console.browser("bob").get("/ui/sweeps").text


def test_a_sweep_page_ranks_its_runs_like_the_api_and_marks_the_best(console: Console) -> None:
    browser, runs = console.browser("alice"), _runs(console)
    api = console.api("alice").get(f"/api/sweeps/{SWEEP}").json()
    page = browser.get(f"/ui/sweeps/{SWEEP}")
    assert page.status_code == 200
    assert _row_order(page.text) == [r["job_id"] for r in api["runs"]] == [runs[1], runs[2], runs[0]]
    best = re.search(r'<tr data-job="([^"]+)" class="best">', page.text)
    assert best and best.group(1) == api["best"] == runs[1]
    assert page.text.count('class="best"') == 1 and "higher is better" in page.text
    for run in runs:
        assert f'href="/ui/jobs/{run}"' in page.text  # each run links to its job page
    assert ">learning_rate<" in page.text and ">0.9<" in page.text and ">train/loss<" in page.text
    by_loss = browser.get(f"/ui/sweeps/{SWEEP}", params={"metric": "train/loss"})
    assert _row_order(by_loss.text) == [runs[2], runs[0], runs[1]] and "lower is better" in by_loss.text
    assert re.search(rf'<tr data-job="{runs[2]}" class="best">', by_loss.text)
    assert '<option value="train/loss" selected>' in by_loss.text


def test_a_metric_no_run_reported_is_shown_at_the_metric_field(console: Console) -> None:
    page = console.browser("alice").get(f"/ui/sweeps/{SWEEP}", params={"metric": "nope"})
    assert page.status_code == 200 and 'id="metric" name="metric" aria-invalid="true"' in page.text
    assert "metric: no metric &#39;nope&#39; in this sweep" in page.text
    runs = _runs(console)
    assert _row_order(page.text) == [runs[1], runs[2], runs[0]]  # the default ranking


def test_the_runs_table_sorts_by_any_column_with_aria_sort(console: Console) -> None:
    browser, runs = console.browser("alice"), _runs(console)
    page = browser.get(f"/ui/sweeps/{SWEEP}")
    assert '<th scope="col" aria-sort="ascending"><a href=' in page.text  # the rank column, by default
    link = re.search(r'<a href="([^"]*sort=param%3Alearning_rate[^"]*)">learning_rate', page.text)
    assert link, "the learning_rate header is no sorting link"
    ascending = browser.get(link.group(1).replace("&amp;", "&"))
    assert _row_order(ascending.text) == runs  # 0.05, 0.1, 0.2
    assert re.search(r'aria-sort="ascending"><a href="[^"]*dir=desc[^"]*">learning_rate', ascending.text)
    descending = browser.get(f"/ui/sweeps/{SWEEP}", params={"sort": "metric:train/loss", "dir": "desc"})
    assert _row_order(descending.text) == [runs[1], runs[0], runs[2]]  # 0.4, 0.3, 0.1
    assert re.search(r'aria-sort="descending"><a href="[^"]*">train/loss', descending.text)
    unknown = browser.get(f"/ui/sweeps/{SWEEP}", params={"sort": "<script>", "dir": "up"})
    assert unknown.status_code == 200 and _row_order(unknown.text) == [runs[1], runs[2], runs[0]]


def test_a_foreign_or_unknown_sweep_is_a_404_page(console: Console) -> None:
    bob = console.browser("bob")
    for path in (f"/ui/sweeps/{SWEEP}", "/ui/sweeps/sweep-nobody-20260101-000000", f"/?sweep={SWEEP}"):
        page = bob.get(path)
        assert page.status_code == 404 and "Not found" in page.text and "no sweep" in page.text, path
        assert not any(run in page.text for run in _runs(console))
    assert console.browser("root").get(f"/ui/sweeps/{SWEEP}").status_code == 200  # as the API: an admin sees it


def test_the_jobs_page_filters_by_sweep_and_a_job_links_its_sweep(console: Console) -> None:
    browser = console.browser("alice")
    everything = browser.get("/")
    assert "experiments/alone" in everything.text
    page = browser.get("/", params={"sweep": SWEEP})
    assert page.status_code == 200 and all(run in page.text for run in _runs(console))
    assert "experiments/alone" not in page.text and f'value="{SWEEP}"' in page.text
    assert f"sweep={SWEEP}" in page.text.split('data-live="', 1)[1].split('"', 1)[0]  # the live updates keep it
    live = browser.get("/ui/api/jobs", params={"sweep": SWEEP}, headers={"Accept": "application/json"}).json()
    assert sorted(j["job_ref"] for j in live["jobs"]) == sorted(console.jobs.values())
    job = browser.get(f"/ui/jobs/{_runs(console)[0]}")
    assert f'Part of sweep <a href="/ui/sweeps/{SWEEP}">' in job.text


def test_the_admin_forms_are_for_administrators_with_their_csrf_token(console: Console) -> None:
    alice = console.browser("alice")
    own = _csrf(alice.get("/").text)
    forms = {"/ui/admin/users": {"username": "mallory"}, "/ui/admin/tokens": {"username": "alice"},
             "/ui/admin/quotas": {"username": "alice", "max_concurrent_gpus": "1000"},
             "/ui/admin/tokens/1/revoke": {}}
    for path, form in forms.items():
        assert alice.post(path, data={**form, "csrf": own}).status_code == 403, path
    assert alice.get("/ui/admin", params={"user": "alice"}).status_code == 403
    root = console.browser("root")
    for path, form in forms.items():
        assert root.post(path, data=form).status_code == 403, path  # no CSRF token
    users = {u["username"] for u in console.api("root").get("/api/admin/users").json()["users"]}
    assert "mallory" not in users
    assert console.api("root").get("/api/admin/quotas/alice").json()["max_concurrent_gpus"] != 1000


def test_creating_an_account_shows_its_first_token_once(console: Console) -> None:
    root = console.browser("root")
    csrf = _csrf(root.get("/ui/admin").text)
    made = root.post("/ui/admin/users", data={"username": "carol", "role": "viewer", "email": "c@example.com",
                                              "csrf": csrf})
    assert made.status_code == 200 and "Account carol created (viewer)" in made.text
    secret = re.search(r'<input id="secret" value="([^"]+)"', made.text)
    assert secret and "shown only this once" in made.text and 'data-copy="secret"' in made.text
    assert TestClient(console.app, headers={"Authorization": f"Bearer {secret.group(1)}"}).get(
        "/api/whoami").json()["username"] == "carol"
    assert secret.group(1) not in root.get("/ui/admin", params={"user": "carol"}).text  # never again
    assert made.headers["cache-control"] == "no-store"


@pytest.mark.parametrize(("form", "field_id", "status", "says"), [
    ({"username": "../etc"}, "new-username", 400, "is not a valid username"),
    ({"username": "x" * 65}, "new-username", 400, "at most 64 characters"),
    ({"username": "ALICE"}, "new-username", 409, "already exists"),
    ({"username": "dave", "role": "emperor"}, "new-role", 400, "role must be one of"),
])
def test_a_refused_account_is_shown_at_its_field(console: Console, form: dict[str, str], field_id: str, status: int,
                                                 says: str) -> None:
    root = console.browser("root")
    page = root.post("/ui/admin/users", data={**form, "csrf": _csrf(root.get("/ui/admin").text)})
    assert page.status_code == status and says in _field_problem(page.text, field_id)
    assert f'value="{form["username"]}"' in page.text  # what was typed is kept
    assert "dave" not in {u["username"] for u in console.api("root").get("/api/admin/users").json()["users"]}


def test_an_accounts_tokens_are_created_shown_once_listed_and_revoked(console: Console) -> None:
    root = console.browser("root")
    page = root.get("/ui/admin", params={"user": "bob"})
    assert page.status_code == 200 and "API tokens of bob" in page.text
    made = root.post("/ui/admin/tokens", data={"username": "bob", "name": "ci-nightly", "expires_in": "604800",
                                               "csrf": _csrf(page.text)})
    assert made.status_code == 200 and "created for bob" in made.text
    secret = re.search(r'<input id="secret" value="([^"]+)"', made.text)
    assert secret
    bob = TestClient(console.app, headers={"Authorization": f"Bearer {secret.group(1)}"})
    assert bob.get("/api/whoami").status_code == 200
    listed = {t["name"]: t for t in console.api("root").get("/api/admin/tokens", params={"username": "bob"}).json()[
        "tokens"]}
    token = listed["ci-nightly"]
    assert token["expires_at"] is not None and token["status"] == "active"
    page = root.get("/ui/admin", params={"user": "bob"})
    assert f'<tr data-token="{token["id"]}">' in page.text and "ci-nightly" in page.text
    assert secret.group(1) not in page.text
    revoked = root.post(f"/ui/admin/tokens/{token['id']}/revoke", data={"csrf": _csrf(page.text)})
    assert revoked.status_code == 303 and revoked.headers["location"].startswith("/ui/admin?user=bob&done=revoked")
    assert bob.get("/api/whoami").status_code == 401
    assert "API token revoked" in root.get(revoked.headers["location"]).text
    missing = root.post("/ui/admin/tokens/999999/revoke", data={"csrf": _csrf(page.text)})
    assert missing.status_code == 404 and "no API token" in missing.text


def test_a_refused_token_is_shown_at_its_field(console: Console) -> None:
    root = console.browser("root")
    csrf = _csrf(root.get("/ui/admin").text)
    bad = root.post("/ui/admin/tokens", data={"username": "bob", "name": "x", "expires_in": "soon", "csrf": csrf})
    assert bad.status_code == 400 and "expires_in must be a number" in _field_problem(bad.text, "token-expires")
    long = root.post("/ui/admin/tokens", data={"username": "bob", "name": "n" * 200, "csrf": csrf})
    assert long.status_code == 400 and "at most 128" in _field_problem(long.text, "token-name")
    nobody = root.post("/ui/admin/tokens", data={"username": "nobody", "name": "x", "csrf": csrf})
    assert nobody.status_code == 404 and "nobody" in _field_problem(nobody.text, "pick-user")
    unknown = root.get("/ui/admin", params={"user": "nobody"})
    assert unknown.status_code == 200 and "nobody" in _field_problem(unknown.text, "pick-user")


def test_a_quota_is_edited_like_sf_admin_quota_set(console: Console) -> None:
    root = console.browser("root")
    page = root.get("/ui/admin", params={"user": "bob"})
    before = console.api("root").get("/api/admin/quotas/bob").json()
    form = {"username": "bob", "max_concurrent_gpus": "4", "max_concurrent_jobs": "", "daily_gpu_hours": "12.5",
            "priority": "-3", "max_job_hours": "2", "allowed_profiles": "cpu, h200", "csrf": _csrf(page.text)}
    saved = root.post("/ui/admin/quotas", data=form)
    assert saved.status_code == 303 and "done=quota" in saved.headers["location"]
    after = console.api("root").get("/api/admin/quotas/bob").json()
    assert (after["max_concurrent_gpus"], after["daily_gpu_hours"], after["priority"], after["max_job_hours"]) == (
        4, 12.5, -3, 2.0)
    assert after["max_concurrent_jobs"] == before["max_concurrent_jobs"]  # blank keeps its value
    assert after["allowed_profiles"] == ["cpu", "h200"]
    shown = root.get(saved.headers["location"])
    assert "Quota saved." in shown.text and 'value="cpu, h200"' in shown.text and 'value="12.5"' in shown.text


@pytest.mark.parametrize(("field", "value", "field_id", "says"), [
    ("max_concurrent_gpus", "lots", "q-gpus", "must be a whole number"),
    ("max_concurrent_jobs", "1.5", "q-jobs", "must be a whole number"),
    ("daily_gpu_hours", "-1", "q-daily", "must be from 0"),
    ("max_job_hours", "nan", "q-hours", "NaN and infinities are refused"),
])
def test_a_refused_quota_is_shown_at_its_field_and_changes_nothing(console: Console, field: str, value: str,
                                                                   field_id: str, says: str) -> None:
    root = console.browser("root")
    before = console.api("root").get("/api/admin/quotas/alice").json()
    page = root.get("/ui/admin", params={"user": "alice"})
    form = {"username": "alice", "max_concurrent_gpus": "7", field: value}  # a good value beside the bad one
    refused = root.post("/ui/admin/quotas", data={**form, "csrf": _csrf(page.text)})
    assert refused.status_code == 400 and says in _field_problem(refused.text, field_id)
    assert f'value="{value}"' in refused.text  # the typed value is kept beside its problem
    assert console.api("root").get("/api/admin/quotas/alice").json() == before
