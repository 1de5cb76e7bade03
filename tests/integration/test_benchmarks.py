"""Benchmark scores through a real console: the job-side ingest path stores them (both header styles, a repeated
report replaces its rows, a bad one stores nothing and names every field, a token only for its own run), the reads
(`GET /api/benchmarks`, a job's scores, its status), the comparison of two runs, `sf bench ls|compare` and `sf job
status` in text and JSON, and admission refusing an unknown suite at its field."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.integration.conftest import ConsoleProcess, unique
from tests.integration.helpers import spec_for, wait_for_status
from tests.integration.test_cli_account import sf, token_login
from tests.integration.test_console_ingest import _sleeper, _token_from_logs


@dataclass(frozen=True)
class Runs:
    """Two running jobs of one account, each with its own run token, and another account's token."""

    user: str
    api_token: str
    base: str
    other: str
    base_token: str
    other_token: str
    stranger_token: str


@pytest.fixture(scope="module")
def runs(console: ConsoleProcess) -> Iterator[Runs]:
    user = unique("bench")
    token = console.token_for(user)
    with console.client(token) as api:
        base, other = _sleeper(api, "bench-a"), _sleeper(api, "bench-b")
        found = Runs(user, token, base, other, _token_from_logs(console, api, base),
                     _token_from_logs(console, api, other), console.token_for(unique("stranger")))
        yield found
        for job in (base, other):
            api.post("/api/job/stop", params={"id": job})
        for job in (base, other):
            wait_for_status(api, job, ("stopped", "failed", "succeeded"))


def _scores(values: dict[str, list[float]], metric: str = "exact_match") -> list[dict[str, object]]:
    return [{"benchmark": bench, "metric": metric, "value": v, "repeat": i, "stderr": 0.01}
            for bench, vs in values.items() for i, v in enumerate(vs)]


def _report(console: ConsoleProcess, run: str, token: str, scores: list[dict[str, object]], *,
            bearer: bool = False) -> httpx.Response:
    header = {"Authorization": f"Bearer {token}"} if bearer else {"X-StarForge-Token": token}
    return httpx.post(f"{console.url}/api/ingest/benchmark", headers=header, timeout=30,
                      json={"run_id": run, "runner": "lm-eval", "model": "tiny", "scores": scores})


def test_ingest_stores_replaces_and_refuses_whole(console: ConsoleProcess, runs: Runs) -> None:
    first = _report(console, runs.base, runs.base_token, _scores({"basic-arithmetic": [0.2, 0.2, 0.2]}))
    assert first.status_code == 200 and first.json()["written"] == 3
    again = _report(console, runs.base, runs.base_token, _scores({"basic-arithmetic": [0.5, 0.5, 0.5]}), bearer=True)
    assert again.status_code == 200
    bad = _report(console, runs.base, runs.base_token, [
        {"benchmark": "basic-arithmetic", "metric": "exact_match", "value": 0.9, "repeat": 3},
        {"benchmark": "basic-arithmetic", "metric": "", "value": "high"}])
    assert bad.status_code == 400
    problems = bad.json()["problems"]
    assert [p["field"] for p in problems] == ["scores[1].metric", "scores[1].value"] and all(p["hint"] for p in problems)
    # the other run's token may not write this run's scores; no token is a 401 too
    assert _report(console, runs.base, runs.other_token, _scores({"x": [1.0]})).status_code == 401
    assert httpx.post(f"{console.url}/api/ingest/benchmark", json={"run_id": runs.base, "scores": []},
                      timeout=30).status_code == 401
    with console.client(runs.api_token) as api:
        stored = api.get(f"/api/jobs/{runs.base}/benchmarks").json()["benchmarks"]
        assert [(s["repeat"], s["value"], s["runner"]) for s in stored] == [(0, 0.5, "lm-eval"), (1, 0.5, "lm-eval"),
                                                                             (2, 0.5, "lm-eval")]
        assert api.get("/api/job", params={"id": runs.base}).json()["benchmarks"] == stored
    with console.client(runs.stranger_token) as api:
        assert api.get(f"/api/jobs/{runs.base}/benchmarks").status_code == 404


def test_two_runs_compared_through_the_api_and_the_cli(console: ConsoleProcess, runs: Runs,
                                                       forge_home: Path) -> None:
    assert _report(console, runs.base, runs.base_token,
                   _scores({"basic-arithmetic": [0.5, 0.5, 0.5], "basic-choice": [0.5]}, "acc")).status_code == 200
    assert _report(console, runs.other, runs.other_token, _scores({"basic-arithmetic": [0.75, 0.75, 0.75],
                                                                   "basic-choice": [0.25]}, "acc"),
                   bearer=True).status_code == 200
    with console.client(runs.api_token) as api:
        body = api.get("/api/benchmarks/compare", params={"runs": f"{runs.base},{runs.other}"}).json()
        verdicts = {(r["benchmark"], r["metric"]): [c["verdict"] for c in r["runs"]] for r in body["rows"]}
        assert verdicts[("basic-arithmetic", "acc")] == ["baseline", "better"]
        assert verdicts[("basic-choice", "acc")] == ["baseline", "unmeasured"]
        assert api.get("/api/benchmarks/compare", params={"runs": ""}).status_code == 422
    with console.client(runs.stranger_token) as api:  # another account's runs are not found, not compared
        assert api.get("/api/benchmarks/compare", params={"runs": f"{runs.base},{runs.other}"}).status_code == 404
    assert httpx.get(f"{console.url}/api/benchmarks/compare", params={"runs": runs.base}, timeout=30).status_code == 401

    token_login(console, forge_home, runs.user)
    as_json = sf("bench", "compare", runs.base, runs.other, "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)["rows"] == body["rows"]
    text = sf("bench", "compare", runs.base, runs.other)
    assert text.returncode == 0, text.stderr
    lines = [line.split() for line in text.stdout.splitlines()]
    assert ["basic-arithmetic", "acc", runs.other, "0.7500", "0.0000", "3", "+0.2500", "better"] in lines
    assert any(line[:3] == ["basic-choice", "acc", runs.other] and line[-3:] == ["no", "variance", "measured"]
               for line in lines)
    assert "--repeat" in text.stderr
    status = sf("job", "status", runs.other, "--json")
    assert status.returncode == 0 and {s["benchmark"] for s in json.loads(status.stdout)["benchmarks"]} == {
        "basic-arithmetic", "basic-choice"}
    shown = sf("job", "status", runs.other)
    assert shown.returncode == 0 and "benchmarks" in shown.stdout
    assert ["basic-arithmetic", "acc", "0.7500", "0.0000", "3"] in [line.split() for line in shown.stdout.splitlines()]
    foreign = sf("bench", "compare", runs.base, "r-0000000000")
    assert foreign.returncode == 1 and "no job" in foreign.stderr


def test_the_suites_offered_and_an_unknown_suite_refused_at_its_field(console: ConsoleProcess, runs: Runs,
                                                                      forge_home: Path) -> None:
    with console.client(runs.api_token) as api:
        offered = [s["name"] for s in api.get("/api/benchmarks").json()["suites"]]
        assert {"basic-arithmetic", "basic-choice"} <= set(offered)
        spec = spec_for(api, "evalkit/benchmark", exp="experiments/evals",
                        hyperparams={"suites": "basic-arithmetic,no-such-suite"})
        verdict = api.post("/api/admission/check", json={"spec": spec, "profile": "cpu"}).json()
        # a training run of any recipe may be evaluated on suites after it succeeds (an evalkit/benchmark child)
        train = spec_for(api, exp="experiments/toy", lifecycle={"on_success": ["eval"]},
                         evaluation={"suites": ["basic-choice"]})
        assert api.post("/api/admission/check", json={"spec": train, "profile": "cpu"}).json()["ok"]
        del train["spec"]["evaluation"]  # without suites, the recipe's own eval step: tinyrl/grpo has none
        [lacking] = api.post("/api/admission/check", json={"spec": train, "profile": "cpu"}).json()["problems"]
        assert (lacking["field"], lacking["code"]) == ("spec.lifecycle.on_success", "lifecycle_action_unknown")
    assert not verdict["ok"]
    [problem] = [p for p in verdict["problems"] if p["field"] == "spec.hyperparams.suites"]
    assert "no-such-suite" in problem["message"] and all(name in problem["hint"] for name in offered)
    assert httpx.get(f"{console.url}/api/benchmarks", timeout=30).status_code == 401
    token_login(console, forge_home, runs.user)
    listed = sf("bench", "ls", "--json")
    assert listed.returncode == 0 and [s["name"] for s in json.loads(listed.stdout)["suites"]] == offered
    text = sf("bench", "ls")
    assert text.returncode == 0 and "basic-arithmetic" in text.stdout


def test_an_external_evaluation_reports_its_scores_only(console: ConsoleProcess, runs: Runs) -> None:
    with console.client(runs.api_token) as api:
        assert api.post("/api/benchmarks/external", json={"harness": "cvdp"}).json()["problems"][0]["field"] == "model"
        opened = api.post("/api/benchmarks/external", json={"model": "org/tiny", "harness": "cvdp",
                                                            "train_run_id": runs.base}).json()
    run, token = opened["run_id"], opened["token"]
    with console.client(runs.stranger_token) as api:  # another account's training run is not found
        assert api.post("/api/benchmarks/external", json={"model": "m", "train_run_id": runs.base}).status_code == 404
        assert api.post("/api/benchmarks/external/scores", json={"run_id": run, "scores": [
            {"benchmark": "cvdp", "metric": "pass@1", "value": 1.0}]}).status_code == 404
    sent = httpx.post(f"{console.url}/api/benchmarks/external/scores", headers={"Authorization": f"Bearer {token}"},
                      json={"run_id": run, "harness": "cvdp", "scores": [
                          {"benchmark": "cvdp", "metric": "pass@1", "value": 0.25}]}, timeout=30)
    assert sent.status_code == 200 and sent.json() == {"written": 1}
    assert httpx.post(f"{console.url}/api/ingest/logs", headers={"X-StarForge-Token": token}, timeout=30,
                      json={"run_id": run, "chunks": ["x"]}).status_code == 403  # its token reports scores only
    with console.client(runs.api_token) as api:
        assert [(s["benchmark"], s["value"], s["runner"]) for s in
                api.get(f"/api/jobs/{run}/benchmarks").json()["benchmarks"]] == [("cvdp", 0.25, "cvdp")]
        assert api.get("/api/job", params={"id": run}).json()["status"] == "succeeded"


def test_sf_bench_run_refuses_bad_models_and_suites_before_anything_runs(console: ConsoleProcess, runs: Runs,
                                                                         tmp_path: Path) -> None:
    from tests.e2e.conftest import make_researcher

    me = make_researcher(console, tmp_path / "me", "benchcli")
    assert me.sf("new", "evals", "--method", "evalkit/benchmark").returncode == 0
    me.commit("evals")
    common = ("--suites", "basic-arithmetic", "--profile", "cpu")
    foreign = me.sf("bench", "run", "evals", "--model", f"run:{runs.base}", *common)  # another account's run
    assert foreign.returncode == 1 and "model: no run" in foreign.stderr and "sf job ls" in foreign.stderr
    with console.client(me.token) as api:
        mine = _sleeper(api, "no-checkpoint")
    bare = me.sf("bench", "run", "evals", "--model", f"run:{mine}", *common)
    assert bare.returncode == 1 and "registered no exported model or checkpoint" in bare.stderr
    unknown = me.sf("bench", "run", "evals", "--model", "org/tiny", "--suites", "no-such-suite", "--profile", "cpu",
                    "--json")
    assert unknown.returncode == 1, unknown.stderr
    refused = json.loads(unknown.stdout)
    assert [p["field"] for p in refused["problems"]] == ["spec.hyperparams.suites"]
    assert "basic-arithmetic" in refused["problems"][0]["hint"]
    assert [j["job_ref"] for j in me.jobs()] == [mine]  # nothing else was created
    with console.client(me.token) as api:
        api.post("/api/job/stop", params={"id": mine})


@pytest.mark.parametrize("console", ["postgres"], indirect=True)
def test_scores_on_postgresql_replace_their_rows_and_compare(console: ConsoleProcess) -> None:
    token = console.token_for(unique("benchpg"))
    with console.client(token) as api:
        run = _sleeper(api, "bench-pg")
        run_token = _token_from_logs(console, api, run)
        for values in ([0.25, 0.5], [0.5, 0.5], [0.5, 0.5]):  # a repeated report replaces its rows
            assert _report(console, run, run_token, _scores({"basic-choice": values}, "acc")).status_code == 200
        stored = api.get(f"/api/jobs/{run}/benchmarks").json()["benchmarks"]
        assert [(s["repeat"], s["value"]) for s in stored] == [(0, 0.5), (1, 0.5)]
        [row] = api.get("/api/benchmarks/compare", params={"runs": run}).json()["rows"]
        assert (row["runs"][0]["mean"], row["runs"][0]["spread"], row["runs"][0]["n"]) == (0.5, 0.0, 2)
        api.post("/api/job/stop", params={"id": run})
        wait_for_status(api, run, ("stopped", "failed", "succeeded"))
