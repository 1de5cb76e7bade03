"""An honest queue: a job no capacity of the deployment can serve is refused at admission (the default,
`admission.unplaceable: refuse`), with the pool's series field and a hint, unless the submitter allows it to wait
(`--allow-pending`, meta `allow_pending: true`, check body `allow_pending`) or the console queues such jobs
(`admission.unplaceable: queue`). A waiting job shows its reason and its place in the queue (`sf job status`)."""

from __future__ import annotations

import json
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from starforge.console.settings import SettingsError, load_settings
from tests.e2e.conftest import make_researcher
from tests.integration.conftest import ConsoleProcess, make_console, unique
from tests.integration.helpers import spec_for, submit

POOL_SERIES = "spec.resources.pools[0].series"


@pytest.fixture(scope="module")
def strict(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleProcess]:
    """A CPU-only console (2 slots) with the default, `admission.unplaceable: refuse`, said explicitly (the test
    harness queues by default)."""
    proc = make_console(tmp_path_factory, "sqlite", config={"capacity": {"cpu": 2},
                                                            "admission": {"unplaceable": "refuse"}})
    proc.start()
    yield proc
    proc.stop()
    shutil.rmtree(proc.state_dir / "runs", ignore_errors=True)


def _refusal(problems: list[dict[str, object]]) -> dict[str, object]:
    [problem] = [p for p in problems if p["code"] == "series_no_capacity"]
    return problem


def test_a_series_without_capacity_is_refused_with_its_field_and_a_hint(strict: ConsoleProcess) -> None:
    with strict.client(strict.token_for(unique())) as api:
        answer = submit(api, spec_for(api, series="h200", gpus=8))
        assert answer.status_code == 400, answer.text
        problem = _refusal(answer.json()["problems"])
        assert problem["field"] == POOL_SERIES
        assert "no h200 capacity" in str(problem["message"])
        assert "cpu" in str(problem["hint"]) and "--allow-pending" in str(problem["hint"])
        assert problem["data"] == {"got": "h200", "allowed": ["cpu"]}
        assert api.get("/api/jobs/mine").json()["jobs"] == []  # nothing was stored

        too_big = submit(api, spec_for(api, series="cpu", gpus=3))  # 3 slots at once, the deployment has 2
        assert too_big.status_code == 400, too_big.text
        assert "needs 3 cpu slots but the deployment has 2" in str(_refusal(too_big.json()["problems"])["message"])

        dry = api.post("/api/admission/check", json={"spec": spec_for(api, series="h200", gpus=8)}).json()
        assert dry["ok"] is False and _refusal(dry["problems"])["field"] == POOL_SERIES
        allowed = api.post("/api/admission/check",
                           json={"spec": spec_for(api, series="h200", gpus=8), "allow_pending": True}).json()
        assert allowed["ok"] is True, allowed
        odd = api.post("/api/admission/check", json={"spec": spec_for(api), "allow_pending": "yes"})
        assert odd.status_code == 422 and odd.json()["problems"][0]["field"] == "allow_pending"
        odd_meta = submit(api, spec_for(api), extra_meta={"allow_pending": "yes"})
        assert odd_meta.status_code == 400
        assert odd_meta.json()["problems"][0]["field"] == "X-Forge-Meta.allow_pending"


def test_allow_pending_admits_a_job_that_waits_with_its_reason_and_place(strict: ConsoleProcess) -> None:
    with strict.client(strict.token_for(unique())) as api:
        first = submit(api, spec_for(api, series="h200", gpus=8), extra_meta={"allow_pending": True})
        second = submit(api, spec_for(api, series="h200", gpus=8), extra_meta={"allow_pending": True})
        assert first.status_code == second.status_code == 202, first.text
        rows = [api.get("/api/job", params={"id": r.json()["job_id"]}).json() for r in (first, second)]
        assert [r["status"] for r in rows] == ["pending", "pending"]
        assert "no h200 capacity in this deployment" in rows[0]["message"]
        assert rows[1]["queue_position"] == rows[0]["queue_position"] + 1
        assert rows[0]["queue_length"] == rows[1]["queue_length"] >= 2


def test_the_cli_refuses_dry_runs_and_allows_pending(strict: ConsoleProcess, tmp_path: Path) -> None:
    me = make_researcher(strict, tmp_path)
    assert me.sf("new", "big", "--method", "tinyrl/grpo").returncode == 0
    me.commit("an experiment")

    refused = me.sf("submit", "big", "--profile", "h200:8", "--json")
    assert refused.returncode == 1, refused.stderr
    assert _refusal(json.loads(refused.stdout)["problems"])["field"] == POOL_SERIES
    human = me.sf("submit", "big", "--profile", "h200:8")
    assert human.returncode == 1 and POOL_SERIES in human.stderr and "--allow-pending" in human.stderr

    dry = me.sf("submit", "big", "--profile", "h200:8", "--dry-run", "--json")
    assert dry.returncode == 1, dry.stderr
    assert _refusal(json.loads(dry.stdout)["problems"])["field"] == POOL_SERIES
    dry_allowed = me.sf("submit", "big", "--profile", "h200:8", "--dry-run", "--allow-pending")
    assert dry_allowed.returncode == 0, dry_allowed.stderr

    admitted = me.json("submit", "big", "--profile", "h200:8", "--allow-pending")
    assert admitted["status"] == "pending" and admitted["queued"] is True
    job = admitted["job_id"]
    row = me.json("job", "status", job)
    assert "no h200 capacity" in row["message"] and row["queue_position"] >= 1 and row["queue_length"] >= 1
    shown = me.sf("job", "status", job)
    assert shown.returncode == 0, shown.stderr
    lines = dict(line.split(None, 1) for line in shown.stdout.splitlines())
    assert "no h200 capacity" in lines["reason"]
    assert lines["queue"].startswith(f"{row['queue_position']}") and f"of {row['queue_length']} waiting" in lines["queue"]


def test_the_queue_setting_admits_and_is_checked(tmp_path: Path) -> None:
    from starforge.console.app import bootstrap_admin, create_app

    assert load_settings(state_dir=tmp_path / "a").unplaceable == "refuse"
    config = tmp_path / "console.yaml"
    config.write_text("admission:\n  unplaceable: maybe\n")
    with pytest.raises(SettingsError, match="admission.unplaceable"):
        load_settings(config, state_dir=tmp_path / "b")
    config.write_text("capacity: {cpu: 1}\nrun_background: false\nadmission:\n  unplaceable: queue\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # alembic's, about its own configuration
        app = create_app(load_settings(config, state_dir=tmp_path / "state"))
    rt = app.state.runtime
    token = bootstrap_admin(rt)
    with TestClient(app, headers={"Authorization": f"Bearer {token}"}) as api:
        answer = submit(api, spec_for(api, series="h200", gpus=8))  # type: ignore[arg-type]
        assert answer.status_code == 202, answer.text
        assert api.get("/api/job", params={"id": answer.json()["job_id"]}).json()["status"] == "pending"
    rt.db.dispose()
