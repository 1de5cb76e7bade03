"""The researcher's whole path through the real `sf` against a real console (SQLite and PostgreSQL):
init → login → new → validate → submit → follow → jobspec.json, and every way a submission is refused."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
from pathlib import Path

from tests.e2e.conftest import SF, Researcher, make_researcher
from tests.integration.conftest import ConsoleProcess
from tests.integration.test_cli_account import device_login


def test_init_login_new_validate_submit_follow(researcher: Researcher, console: ConsoleProcess) -> None:
    me = researcher
    for name, method in (("toy", "tinyrl/grpo"), ("big", "nemo-rl/grpo")):
        made = me.sf("new", name, "--method", method)
        assert made.returncode == 0, made.stderr
    rows = me.json("ls")["experiments"]
    assert [(r["name"], r["recipe"], r["framework_version"], r["label"]) for r in rows] == [
        ("big", "nemo-rl/grpo", "0.7.0", ""), ("toy", "tinyrl/grpo", "1.0.0", "")]
    for name in ("toy", "big"):
        checked = me.sf("validate", name)
        assert checked.returncode == 0, checked.stderr
    me.commit("two experiments")

    submitted = me.sf("submit", "toy", "--profile", "cpu:1", "--set", "max_num_steps=20")
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip()
    assert job_id.startswith("r-") and f"sf job logs {job_id}" in submitted.stderr

    local = json.loads((me.lab / ".starforge" / "jobspec.json").read_text())
    stored = me.json("job", "spec", job_id)
    assert stored["metadata"].pop("owner") == me.user
    assert local == stored
    assert local["spec"]["hyperparams"] == {"max_num_steps": 20}
    assert local["metadata"] == {"name": "toy", "project": "e2e-lab"}
    assert local["provenance"]["git_commit"] == me.git("rev-parse", "--short", "HEAD").strip()

    followed = me.sf("job", "logs", job_id, timeout=600)
    assert followed.returncode == 0, followed.stderr
    assert "step" in followed.stdout and "succeeded" in followed.stderr
    by_prefix = me.json("job", "status", job_id[:5])
    assert by_prefix["job_ref"] == job_id and by_prefix["status"] == "succeeded"
    by_name = me.sf("job", "status", "toy")
    assert by_name.returncode == 0 and job_id in by_name.stdout

    queued = me.sf("submit", "big", "--profile", "h200:8")
    assert queued.returncode == 0, queued.stderr
    waiting = queued.stdout.strip()
    assert "Queued:" in queued.stderr and "h200" in queued.stderr
    row = me.json("job", "status", waiting)
    assert row["status"] == "pending" and row["message"] and row["requested_gpus"] == 8
    assert {j["job_ref"] for j in me.jobs()} == {job_id, waiting}

    stopped = me.sf("job", "stop", "big")  # by experiment name
    assert stopped.returncode == 0 and f"Stopped job {waiting}" in stopped.stderr
    assert me.json("job", "status", waiting)["status"] not in ("pending", "running")
    assert isinstance(me.json("job", "cancel-all", "--yes")["stopped"], int)


def test_login_with_the_device_flow(console: ConsoleProcess, tmp_path: Path) -> None:
    approver = make_researcher(console, tmp_path / "approver", "approver", lab=False)
    newcomer = tmp_path / "newcomer"
    done = device_login(console, newcomer, approver.home)
    assert done.returncode == 0, done.stderr
    whoami = approver.sf("whoami", "--json", cwd=tmp_path, FORGE_HOME=str(newcomer))
    assert whoami.returncode == 0 and json.loads(whoami.stdout)["user"]["username"] == approver.user


def _fields(stderr: str) -> list[str]:
    return [line.strip()[2:].split(":", 1)[0] for line in stderr.splitlines() if line.strip().startswith("- ")]


def test_rejections_name_every_field_with_a_hint(researcher: Researcher) -> None:
    me = researcher
    assert me.sf("new", "big", "--method", "nemo-rl/grpo").returncode == 0
    assert me.sf("new", "toy", "--method", "tinyrl/grpo").returncode == 0
    me.commit()

    local = me.sf("submit", "big", "--profile", "h200:12", "--set", "learnin_rate=1e-6", "--then", "bogus")
    assert local.returncode == 1
    assert _fields(local.stderr) == ["profile", "spec.hyperparams", "spec.lifecycle.on_success"]
    assert local.stderr.count("hint:") == 3 and "did you mean learning_rate" in local.stderr
    as_json = me.sf("submit", "big", "--profile", "h200:12", "--set", "learnin_rate=1e-6", "--json")
    assert as_json.returncode == 1
    refusal = json.loads(as_json.stdout)
    assert refusal["ok"] is False and [p["field"] for p in refusal["problems"]] == ["profile", "spec.hyperparams"]

    remote = me.sf("submit", "toy", "--profile", "cpu", "--image", "docker.io/library/trainer:1",
                   "--init-from", "run/r-0000000000/checkpoint", "--corpus", "alice/missing@v1")
    assert remote.returncode == 1
    assert _fields(remote.stderr) == ["spec.framework.image", "spec.model.init_from", "spec.data.corpus"]
    assert remote.stderr.count("hint:") == 3
    remote_json = me.sf("submit", "toy", "--profile", "cpu", "--image", "docker.io/library/trainer:1", "--json")
    assert remote_json.returncode == 1
    assert [p["code"] for p in json.loads(remote_json.stdout)["problems"]] == ["image_not_allowed"]
    assert me.jobs() == []


def test_set_values_are_typed_and_profiles_shape_the_pools(researcher: Researcher) -> None:
    me = researcher
    assert me.sf("new", "big", "--method", "nemo-rl/grpo").returncode == 0
    me.commit()
    typed = me.json("submit", "big", "--profile", "h200", "--dry-run", "--set", "seed=1_000",
                    "--set", "normalize_rewards=off", "--set", "learning_rate=1e-6", "--set", "max_num_steps=007")
    assert typed["ok"] is True and typed["offline"] is False
    assert list(typed["spec"]["spec"]["hyperparams"].items()) == [
        ("learning_rate", 1e-06), ("max_num_steps", 7), ("normalize_rewards", False), ("seed", 1000)]
    for expression, nodes, per_node in (("h200", 1, 8), ("h200:4", 1, 4), ("h200:16", 2, 8)):
        checked = me.json("submit", "big", "--profile", expression, "--dry-run")
        assert checked["requested_gpus"] == nodes * per_node, expression
        assert checked["spec"]["spec"]["resources"]["pools"] == [
            {"name": "all", "nodes": nodes, "gpus_per_node": per_node, "series": "h200"}]
    impossible = me.sf("submit", "big", "--profile", "h200:12")
    assert impossible.returncode == 1 and "12 GPUs must be at most 8" in impossible.stderr
    assert "nothing was uploaded" in impossible.stderr
    unknown = me.sf("submit", "big", "--profile", "h200", "--set", "learnig_rate=1e-6")
    assert unknown.returncode == 1 and "did you mean learning_rate" in unknown.stderr
    assert me.jobs() == []


def test_dry_run_secrets_and_a_dirty_tree(researcher: Researcher, console: ConsoleProcess) -> None:
    me = researcher
    assert me.sf("new", "toy", "--method", "tinyrl/grpo").returncode == 0
    me.commit()
    dry = me.sf("submit", "toy", "--profile", "cpu", "--dry-run")
    assert dry.returncode == 0 and "would be admitted" in dry.stderr and dry.stdout == ""
    offline = me.sf("submit", "toy", "--profile", "cpu", "--dry-run", FORGE_SERVER="http://127.0.0.1:9")
    assert offline.returncode == 0 and "offline: checked locally" in offline.stderr
    assert me.jobs() == []

    secret = me.lab / "experiments" / "toy" / ".env"
    secret.write_text("HF_TOKEN=hf_secret\n")
    me.git("add", "-f", str(secret))
    me.commit("oops")
    refused = me.sf("submit", "toy", "--profile", "cpu")
    assert refused.returncode == 1 and "experiments/toy/.env looks like a secret" in refused.stderr
    assert me.jobs() == []
    me.git("rm", "-q", "--cached", str(secret))  # untracked again: the lab's .gitignore keeps it out
    me.commit("untrack the secret")
    packed = me.sf("submit", "toy", "--profile", "cpu", "--set", "max_num_steps=5")
    assert packed.returncode == 0, packed.stderr
    job_id = packed.stdout.strip()
    assert me.sf("job", "logs", job_id, timeout=600).returncode == 0
    work = console.state_dir / "runs" / me.user / "toy" / job_id / "work"
    assert (work / "experiments" / "toy" / "config.yaml").is_file()
    assert not (work / "experiments" / "toy" / ".env").exists()

    with (me.lab / "experiments" / "toy" / "config.yaml").open("a") as handle:
        handle.write("# an uncommitted tweak\n")
    dirty = me.sf("submit", "toy", "--profile", "cpu")
    assert dirty.returncode == 1 and "provenance.git_dirty" in dirty.stderr and "--allow-dirty" in dirty.stderr
    allowed = me.sf("submit", "toy", "--profile", "cpu", "--allow-dirty", "--set", "max_num_steps=5")
    assert allowed.returncode == 0, allowed.stderr
    assert me.json("job", "spec", allowed.stdout.strip())["provenance"]["git_dirty"] is True
    assert len(me.jobs()) == 2
    me.sf("job", "cancel-all", "--yes")


def test_a_large_bundle_shows_upload_progress_on_a_terminal(researcher: Researcher) -> None:
    me = researcher
    assert me.sf("new", "toy", "--method", "tinyrl/grpo").returncode == 0
    (me.lab / "experiments" / "toy" / "weights.bin").write_bytes(os.urandom(3 << 20))  # incompressible: > 1 MB
    me.commit()
    master, slave = pty.openpty()
    proc = subprocess.Popen([*SF, "submit", "toy", "--profile", "cpu", "--set", "max_num_steps=3"], cwd=me.lab,
                            env={k: v for k, v in me.env.items() if k != "NO_COLOR"}, stdout=subprocess.PIPE,
                            stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        seen += chunk
    stdout, _ = proc.communicate(timeout=120)
    os.close(master)
    assert proc.returncode == 0, seen.decode(errors="replace")
    text = seen.decode(errors="replace")
    assert "uploading" in text and re.search(r"/3\.\d MB", text), text
    assert stdout.decode().strip().startswith("r-")
    quiet = me.sf("submit", "toy", "--profile", "cpu", "--set", "max_num_steps=3")  # not a terminal: no bar
    assert quiet.returncode == 0 and "uploading" not in quiet.stderr
    me.sf("job", "cancel-all", "--yes")
