"""`sf export`, `sf eval` and `sf clean` with the real `sf` against a real console: a tinyrl/grpo run, exported on
request, its export downloaded, an eval its recipe lacks refused (and one on a suite the console does not offer),
then the experiment cleaned."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.conftest import Researcher
from tests.integration.conftest import ConsoleProcess


def test_export_eval_and_clean_a_finished_run(researcher: Researcher, console: ConsoleProcess,
                                              tmp_path: Path) -> None:
    me = researcher
    assert me.sf("new", "toy", "--method", "tinyrl/grpo").returncode == 0
    me.commit("toy")
    submitted = me.sf("submit", "toy", "--profile", "cpu", "--set", "max_num_steps=3")
    assert submitted.returncode == 0, submitted.stderr
    run = submitted.stdout.strip()
    assert me.sf("job", "logs", run, timeout=600).returncode == 0

    made = me.json("export", "toy", "--wait")  # the experiment's name: its newest training run
    assert made["parent"] == run and made["action"] == "export" and made["final_status"] == "succeeded", made
    export = made["job_id"]
    human = me.sf("export", run, "--wait")  # human output; waits, so clean finds nothing active
    assert human.returncode == 0, human.stderr
    assert f"sf job logs {human.stdout.split()[2]}" in human.stderr and "--download DIR" in human.stderr

    target = tmp_path / "export"
    fetched = me.json("job", "artifacts", export, "--download", str(target))
    assert any(a["kind"] == "hf_export" for a in fetched["artifacts"]), fetched
    assert list(target.rglob("hf_export/*")), fetched

    refused = me.sf("eval", run)  # the recipe's own eval step, which tinyrl/grpo lacks
    assert refused.returncode == 1
    assert "tinyrl/grpo has no 'eval' action" in refused.stderr and "export" in refused.stderr
    unknown = me.sf("eval", run, "--benchmarks", "gsm8k")  # on suites: a benchmark job, of suites this console offers
    assert unknown.returncode == 1
    assert "spec.evaluation.suites" in unknown.stderr and "basic-arithmetic" in unknown.stderr

    unconfirmed = me.sf("clean", "toy")  # stdin is not a terminal: nothing is asked, nothing deleted
    assert unconfirmed.returncode == 2 and "--yes" in unconfirmed.stderr
    cleaned = me.json("clean", "toy", "--yes")
    assert run in cleaned["cleaned"] and export in cleaned["cleaned"] and cleaned["files"] > 0, cleaned
    assert me.json("job", "artifacts", run)["artifacts"] == []  # the checkpoints the export started from
    assert me.json("job", "status", run)["status"] == "succeeded"  # the row stays as history
    again = me.sf("export", run)
    assert again.returncode == 1 and "no checkpoint" in again.stderr
