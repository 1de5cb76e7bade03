"""A 2×2 grid sweep of `tinyrl/grpo` with the real `sf` against a fresh real console (the issue's Done-when): it runs
to the end as one sweep, never more than `--max-parallel` runs at once, and `sf sweep show` ranks it."""

from __future__ import annotations

import time

from tests.e2e.conftest import Researcher

ACTIVE = {"submitted", "preparing", "running"}


def test_a_grid_sweep_runs_to_the_end_and_is_ranked(researcher: Researcher) -> None:
    me = researcher
    assert me.sf("new", "toy", "--method", "tinyrl/grpo").returncode == 0
    me.commit()
    usage = me.sf("sweep", "toy", "--profile", "cpu", "--grid", "learning_rate")
    assert usage.returncode == 2 and "--grid" in usage.stderr

    sent = me.json("sweep", "toy", "--profile", "cpu", "--grid", "learning_rate=0.05,0.1", "--grid", "seed=1,2",
                   "--max-parallel", "2", "--set", "max_num_steps=5")
    sweep_id = sent["sweep_id"]
    assert sweep_id.startswith("sweep-toy-") and len(sent["jobs"]) == 4
    assert [j["params"] for j in sent["jobs"]] == [
        {"learning_rate": lr, "seed": s} for lr in ("0.05", "0.1") for s in ("1", "2")]

    deadline = time.monotonic() + 300
    statuses: list[str] = []
    while time.monotonic() < deadline:
        jobs = me.api(f"/api/jobs/mine?limit=200&sweep={sweep_id}")["jobs"]
        statuses = [j["status"] for j in jobs]
        assert sum(1 for s in statuses if s in ACTIVE) <= 2, statuses  # --max-parallel 2
        if len(jobs) == 4 and all(s in ("succeeded", "failed", "stopped") for s in statuses):
            break
        time.sleep(0.2)
    assert statuses == ["succeeded"] * 4, statuses
    assert [j["status"] for j in me.json("job", "ls", "--sweep", sweep_id)["jobs"]] == ["succeeded"] * 4

    shown = me.json("sweep", "show", sweep_id)
    assert (shown["metric"], shown["direction"]) == ("train/reward", "higher")
    runs = shown["runs"]
    assert [r["best"] for r in runs] == [True, False, False, False] and shown["best"] == runs[0]["job_id"]
    values = [r["value"] for r in runs]
    assert values == sorted(values, reverse=True)
    assert {(r["params"]["learning_rate"], r["params"]["seed"]) for r in runs} == {
        (0.05, 1), (0.05, 2), (0.1, 1), (0.1, 2)}
    table = me.sf("sweep", "show", sweep_id, "--metric", "train/loss", "--sort", "seed")
    assert table.returncode == 0 and "ranked by train/loss (lower is better)" in table.stderr
    assert table.stdout.count("★") == 1 and "LEARNING_RATE" in table.stdout

    assert [s["sweep_id"] for s in me.json("sweep", "ls")["sweeps"]] == [sweep_id]
    assert me.json("job", "stop", "--sweep", sweep_id)["stopped"] == 0  # all finished: nothing to stop
    unknown = me.sf("sweep", "show", "sweep-nobody-20260101-000000")
    assert unknown.returncode == 1 and "no sweep" in unknown.stderr
