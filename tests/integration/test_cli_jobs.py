"""`sf job …` through the real `sf` against a real console: empty accounts, foreign ids, following logs, an
experiment name meaning its newest job; and a submission refused during maintenance."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from starforge.client import Console, NotFound
from tests.e2e.conftest import make_researcher
from tests.integration import helpers
from tests.integration.conftest import ConsoleProcess, unique
from tests.integration.test_cli_account import sf, token_login


def submit_toy_job(console: ConsoleProcess, token: str, exp: str = "experiments/toy") -> str:
    """Submit a tiny tinyrl job with our SDK and return its job id."""
    with console.client(token) as http:
        spec = helpers.spec_for(http, exp=exp)
    files = {f"{exp}/config.yaml": "grpo:\n  max_num_steps: 5\n"}
    with Console(console.url, token) as client:
        result = client.submit(spec, helpers.bundle(files), profile="cpu")
    assert result.job_id
    return result.job_id


def test_job_ls_on_an_empty_account(console: ConsoleProcess, forge_home: Path) -> None:
    token_login(console, forge_home, unique("empty"))
    human = sf("job", "ls")
    assert human.returncode == 0, human.stderr
    assert human.stdout == "" and "No jobs yet" in human.stderr
    as_json = sf("job", "ls", "--all", "--json")
    assert as_json.returncode == 0 and json.loads(as_json.stdout) == {"jobs": []}
    logs = sf("job", "logs")
    assert logs.returncode == 1 and "no jobs yet" in logs.stderr


def test_unknown_job_id_is_refused(console: ConsoleProcess, forge_home: Path) -> None:
    token = token_login(console, forge_home, unique("nobody"))
    for args in (["job", "status", "r-0000000000"], ["job", "stop", "r-0"], ["job", "logs", "nope"],
                 ["job", "spec", "x"], ["job", "metrics", "x"]):
        done = sf(*args)
        assert done.returncode == 1 and "no job matches" in done.stderr, args
    with Console(console.url, token) as client, pytest.raises(NotFound):
        client.stop("r-0000000000")


def test_a_foreign_job_is_invisible_and_404(console: ConsoleProcess, forge_home: Path, tmp_path: Path) -> None:
    owner = unique("owner")
    owner_token = console.token_for(owner)
    job_id = submit_toy_job(console, owner_token)

    token = token_login(console, forge_home, unique("other"))
    for args in (["job", "status", job_id], ["job", "stop", job_id], ["job", "spec", job_id]):
        done = sf(*args)
        assert done.returncode == 1 and "no job matches" in done.stderr, args
    with Console(console.url, token) as client:
        for call in (client.stop, client.jobspec, client.metrics, lambda ref: list(client.logs(ref, follow=False))):
            with pytest.raises(NotFound):
                call(job_id)

    owner_home = tmp_path / "owner"
    token_login(console, owner_home, owner)
    listed = json.loads(sf("job", "ls", "--json", home=owner_home).stdout)["jobs"]
    assert [row["job_ref"] for row in listed] == [job_id]
    status = sf("job", "status", job_id[:6], "--json", home=owner_home)
    assert status.returncode == 0 and json.loads(status.stdout)["job_ref"] == job_id
    by_name = sf("job", "status", "toy", home=owner_home)
    assert by_name.returncode == 0 and job_id in by_name.stdout
    admitted = json.loads(sf("job", "spec", job_id, "--json", home=owner_home).stdout)
    assert admitted["metadata"]["owner"] == owner
    stopped = sf("job", "cancel-all", "--yes", "--json", home=owner_home)
    assert stopped.returncode == 0 and isinstance(json.loads(stopped.stdout)["stopped"], int)


def test_job_logs_follow_until_the_end(console: ConsoleProcess, forge_home: Path) -> None:
    token = token_login(console, forge_home, unique("logs"))
    job_id = submit_toy_job(console, token, exp="experiments/follow")
    done = sf("job", "logs", job_id, timeout=600)
    with Console(console.url, token) as client:
        final = client.job(job_id)
    assert final.terminal, (final, done.stderr)
    assert done.returncode == (0 if final.succeeded else 1), done.stderr
    assert done.stdout, "the job printed no log lines"
    again = sf("job", "logs", "follow", "-n", "0", timeout=120)  # a finished job replays, then ends
    assert again.returncode == done.returncode and again.stdout == done.stdout
    stopped = sf("job", "stop", job_id)
    assert stopped.returncode == 0 and "already finished" in stopped.stderr


def submit_waiting_job(console: ConsoleProcess, token: str, exp: str) -> str:
    """Submit a job for h200, a series this console has no capacity for: it waits (pending) and never runs."""
    with console.client(token) as http:
        spec = helpers.spec_for(http, exp=exp, series="h200", gpus=8)
    with Console(console.url, token) as client:
        return client.submit(spec, helpers.bundle({f"{exp}/config.yaml": "grpo: {}\n"}), profile="h200").job_id


def test_job_ls_filters_by_status_experiment_and_time(console: ConsoleProcess, forge_home: Path) -> None:
    token = token_login(console, forge_home, unique("filters"))
    waiting = submit_waiting_job(console, token, "experiments/beta")
    ran = submit_toy_job(console, token, exp="experiments/alpha")
    with Console(console.url, token) as client:  # the console's filters, through the SDK the CLI uses

        def listed(**filters: Any) -> list[str]:
            return [job.ref for job in client.jobs(limit=15, **filters)]

        assert listed() == [ran, waiting]
        assert listed(exp="beta") == [waiting] == listed(exp="experiments/beta")
        assert listed(statuses=("pending",)) == [waiting]
        assert listed(statuses=("queued", "pending"), exp="alpha") == []
        assert listed(since=time.time() - 3600) == [ran, waiting]
        assert listed(since=time.time() + 3600) == []

    shown = sf("job", "ls", "--json", "--status", "pending", "--since", "1h", "--exp", "beta")
    assert shown.returncode == 0 and [r["job_ref"] for r in json.loads(shown.stdout)["jobs"]] == [waiting]
    nothing = sf("job", "ls", "--status", "pending", "--exp", "alpha")
    assert nothing.returncode == 0 and "No jobs match" in nothing.stderr
    unknown = sf("job", "ls", "--status", "sleeping")
    assert unknown.returncode == 1 and "no job status 'sleeping'" in unknown.stderr and "running" in unknown.stderr
    bad_time = sf("job", "ls", "--since", "yesterday-ish")
    assert bad_time.returncode == 2 and "30m, 2h" in bad_time.stderr


def test_waiting_jobs_show_their_place_and_an_experiment_means_its_newest(console: ConsoleProcess,
                                                                          forge_home: Path) -> None:
    token = token_login(console, forge_home, unique("queue"))
    first = submit_waiting_job(console, token, "experiments/twice")
    second = submit_waiting_job(console, token, "experiments/twice")
    with Console(console.url, token) as client:
        one, two = client.job_detail(first).raw, client.job_detail(second).raw
    assert two["queue_position"] == one["queue_position"] + 1 and two["queue_length"] >= two["queue_position"]
    shown = sf("job", "status", "twice")
    assert shown.returncode == 0, shown.stderr
    assert f"'twice' has 2 jobs; showing the newest, {second}" in shown.stderr
    assert f"queue      {two['queue_position']}" in shown.stdout and "waiting for h200" in shown.stdout

    logs = sf("job", "logs", "twice", "--no-follow", timeout=60)
    assert logs.returncode == 0, logs.stderr
    assert "showing the newest" in logs.stderr and f"Job {second} is pending" in logs.stderr
    stopped = sf("job", "stop", "twice", "--json")  # the same rule: the experiment's newest job, said so
    assert stopped.returncode == 0, stopped.stderr
    assert json.loads(stopped.stdout)["job"] == second and f"stopping the newest, {second}" in stopped.stderr
    with Console(console.url, token) as client:
        assert client.resolve_job("twice").ref == second  # the SDK follows the same rule
        assert client.job(first).status == "pending"


def test_a_submission_during_maintenance_says_so_with_the_note(console: ConsoleProcess, tmp_path: Path) -> None:
    me = make_researcher(console, tmp_path)
    assert me.sf("new", "toy", "--method", "tinyrl/grpo").returncode == 0
    me.commit("an experiment")
    with console.client(console.admin_token) as admin:
        assert admin.post("/api/admin/maintenance/drain", json={"note": "back at 14:00 UTC"}).status_code == 200
        try:
            human = me.sf("submit", "toy", "--profile", "cpu:1")
            as_json = me.sf("submit", "toy", "--profile", "cpu:1", "--json")
        finally:
            assert admin.post("/api/admin/maintenance/resume").status_code == 200
    assert human.returncode == 1
    assert "error: the console is in maintenance mode: back at 14:00 UTC" in human.stderr, human.stderr
    assert "try again once it is back" in human.stderr and "sf admin maintenance show" in human.stderr
    refusal = json.loads(as_json.stdout)
    assert refusal["ok"] is False and refusal["hint"].startswith("nothing was changed")
    assert [(p["field"], p["code"]) for p in refusal["problems"]] == [("<root>", "maintenance")]
    assert me.jobs() == []


def test_pause_resume_retry_and_max_restarts_through_sf(console: ConsoleProcess, tmp_path: Path) -> None:
    me = make_researcher(console, tmp_path)
    assert me.sf("new", "toy", "--method", "tinyrl/grpo").returncode == 0
    me.commit("an experiment")
    too_many = me.sf("submit", "toy", "--profile", "h200:8", "--max-restarts", "99")
    assert too_many.returncode == 1  # the console's cap (restarts.max_restarts, 3 by default), at the option
    assert "--max-restarts: --max-restarts 99 is more than this console allows (3)" in too_many.stderr, too_many.stderr
    for bad in ("-1", "1.5"):  # refused by sf itself, before any request
        refused = me.sf("submit", "toy", "--profile", "h200:8", "--max-restarts", bad)
        assert refused.returncode == 2 and "--max-restarts" in refused.stderr, refused.stderr
    job = me.json("submit", "toy", "--profile", "h200:8", "--max-restarts", "2")["job_id"]  # waits: no h200 here
    row = me.json("job", "status", job)
    assert (row["max_restarts"], row["attempts"], row["resumed_from"]) == (2, 0, None)

    paused = me.sf("job", "pause", job)
    assert paused.returncode == 0, paused.stderr
    assert f"Paused job {job}: it keeps its place in the queue" in paused.stderr
    shown = me.sf("job", "status", job)
    assert "status     paused" in shown.stdout and f"after `sf job resume {job}`" in shown.stdout
    retried = me.sf("job", "retry", job)
    assert retried.returncode == 1 and "only a failed or stopped job can be retried" in retried.stderr
    assert me.json("job", "resume", job) == {"job": job, "resumed": True, "status": "queued"}
    listed = me.sf("job", "ls")
    assert listed.stdout.splitlines()[0].split()[4] == "ATTEMPTS" and listed.stdout.splitlines()[1].split()[4] == "0"

    refused_sweep = me.sf("sweep", "toy", "--profile", "h200:8", "--grid", "seed=1,2", "--max-restarts", "4")
    assert refused_sweep.returncode == 1 and "--max-restarts 4 is more than this console allows (3)" in \
        refused_sweep.stderr, refused_sweep.stderr
    sweep = me.json("sweep", "toy", "--profile", "h200:8", "--grid", "seed=1,2", "--max-restarts", "1")
    for point in sweep["jobs"]:  # every run of the sweep may restart once
        assert me.json("job", "status", point["job_id"])["max_restarts"] == 1
    assert me.sf("job", "stop", "--sweep", sweep["sweep_id"]).returncode == 0

    assert me.sf("job", "stop", job).returncode == 0
    again = me.sf("job", "retry", job, "--json")
    assert again.returncode == 0 and json.loads(again.stdout) == {"job": job, "retried": True, "status": "queued"}
    assert me.sf("job", "stop", job).returncode == 0
