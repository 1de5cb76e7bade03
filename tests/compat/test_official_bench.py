"""The official client 0.3.56's `sf bench run` against our console: it submits evalkit/benchmark jobs (one per
repeat) that our admission checks with the suites we offer — an offered suite is admitted, an unknown one refused
at its field (the client shows the detail's field and message), and nothing is created; and its `sf bench external
create|submit` opens an external evaluation and reports a score file we store (`POST /api/benchmarks/external`,
`…/external/scores`).

The jobs are only admitted: this console's CPU series has no free slot (`capacity: {cpu: 0}`, `admission.unplaceable:
queue`), so they wait in the queue instead of building the official recipe's runtime for a hub model the job could
not download here anyway."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.compat.conftest import OfficialUser, console_config, flat, make_user, output
from tests.integration.conftest import ConsoleProcess, make_console


@pytest.fixture(scope="module")
def queueing_console(tmp_path_factory: pytest.TempPathFactory, official_sf: Path,
                     official_tree: Path) -> Iterator[ConsoleProcess]:
    proc = make_console(tmp_path_factory, "sqlite", config=console_config(
        official_tree, admission={"unplaceable": "queue"}, capacity={"cpu": 0}))
    proc.start()
    yield proc
    proc.stop()
    shutil.rmtree(proc.state_dir / "runs", ignore_errors=True)


def test_the_official_bench_run_submits_jobs_our_admission_checks(queueing_console: ConsoleProcess,
                                                                   official_sf: Path, tmp_path: Path) -> None:
    user: OfficialUser = make_user(queueing_console, official_sf, tmp_path / "client", prefix="bench")
    user.login()
    assert user.sf("init", "lab", "--yes", "--name", "compat").returncode == 0
    lab = tmp_path / "client" / "lab"
    new = user.sf("new", "evals", "--method", "evalkit/benchmark", cwd=lab)
    assert new.returncode == 0, output(new)
    common = ("--model", "sshleifer/tiny-gpt2", "--profile", "cpu", "--allow-dirty", "--limit", "5",
              "--runner", "lm-eval")  # the client knows only its own catalog's suites' runners
    refused = user.sf("bench", "run", "evals", "--suites", "basic-arithmetic,no-such-suite", *common, cwd=lab)
    assert refused.returncode != 0, output(refused)
    said = flat(output(refused))
    assert "spec.hyperparams.suites" in said and "no-such-suite" in said
    with user.api() as api:
        assert api.get("/api/jobs/mine").json()["jobs"] == []

    done = user.sf("bench", "run", "evals", "--suites", "basic-arithmetic", "--repeat", "2", *common, cwd=lab)
    assert done.returncode == 0, output(done)
    with user.api() as api:
        jobs = api.get("/api/jobs/mine").json()["jobs"]
        assert len(jobs) == 2 and {j["recipe"] for j in jobs} == {"evalkit/benchmark"}
        assert {j["status"] for j in jobs} <= {"queued", "pending"}, jobs  # waiting, never launched
        specs = [api.get(f"/api/jobs/{j['job_ref']}/jobspec").json()["spec"] for j in jobs]
        api.post("/api/jobs/cancel-all")
    assert all(s["hyperparams"]["suites"] == "basic-arithmetic" and s["model"]["base"] == "sshleifer/tiny-gpt2"
               for s in specs)


def test_the_official_bench_external_reports_scores_we_store(official_console: ConsoleProcess, official_sf: Path,
                                                             tmp_path: Path) -> None:
    user: OfficialUser = make_user(official_console, official_sf, tmp_path / "client", prefix="ext")
    user.login()
    made = user.sf("bench", "external", "create", "--model", "org/tiny", "--harness", "cvdp", "--note", "agent track")
    assert made.returncode == 0, output(made)
    assert "STARFORGE_TOKEN" in output(made)
    with user.api() as api:
        [job] = api.get("/api/jobs/mine").json()["jobs"]
    run = job["job_ref"]
    scores = tmp_path / "scores.json"
    scores.write_text('{"scores": [{"benchmark": "cvdp", "metric": "pass@1", "value": 0.25}]}', encoding="utf-8")
    sent = user.sf("bench", "external", "submit", run, "-f", str(scores), "--model", "org/tiny", "--harness", "cvdp")
    assert sent.returncode == 0, output(sent)
    with user.api() as api:
        stored = api.get(f"/api/jobs/{run}/benchmarks").json()["benchmarks"]
    assert [(s["benchmark"], s["metric"], s["value"], s["runner"]) for s in stored] == [("cvdp", "pass@1", 0.25,
                                                                                         "cvdp")]
