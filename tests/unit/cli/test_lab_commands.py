"""`sf new`, `sf validate`, `sf ls` and the offline side of `sf submit` through the real `sf`, without a console."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import forkserver

SF = [sys.executable, "-c", "from starforge.cli.main import run; run()"]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tname = Test\n\temail = test@example.com\n")
    home = tmp_path / "forge-home"
    base = {k: v for k, v in os.environ.items() if not k.startswith(("FORGE_", "SF_"))}
    return {**base, "GIT_CONFIG_GLOBAL": str(config), "GIT_CONFIG_NOSYSTEM": "1", "FORGE_HOME": str(home),
            "GIT_CEILING_DIRECTORIES": str(tmp_path), "NO_COLOR": "1"}


def sf(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return forkserver.run(list(args), cwd=cwd, env=env, timeout=120)


@pytest.fixture
def lab(tmp_path: Path, env: dict[str, str]) -> Path:
    assert sf("init", "lab", cwd=tmp_path, env=env).returncode == 0
    return tmp_path / "lab"


def commit(lab: Path, env: dict[str, str]) -> None:
    subprocess.run(["git", "add", "-A"], cwd=lab, env=env, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "work"], cwd=lab, env=env, check=True)


def test_new_validate_ls(lab: Path, env: dict[str, str]) -> None:
    made = sf("new", "toy", "--method", "tinyrl/grpo", cwd=lab, env=env)
    assert made.returncode == 0, made.stderr
    assert "experiments/toy/config.yaml" in made.stdout and "Created experiments/toy (tinyrl/grpo" in made.stderr
    assert "sf validate toy" in made.stderr and "sf submit toy" in made.stderr
    as_json = sf("new", "big", "--recipe", "nemo-rl/grpo", "--json", cwd=lab, env=env)
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)["recipe"] == "nemo-rl/grpo"
    again = sf("new", "toy", cwd=lab, env=env)
    assert again.returncode == 1 and "experiments/toy already exists" in again.stderr and "hint:" in again.stderr
    bad = sf("new", "v", "--method", "tinyrl/grpoo", "--json", cwd=lab, env=env)
    assert bad.returncode == 1 and json.loads(bad.stdout)["problems"][0]["field"] == "--method"

    ok = sf("validate", "toy", cwd=lab, env=env)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("✓ experiments/toy  tinyrl/grpo@1.0.0  lock current")
    report = json.loads(sf("validate", "experiments/big", "--json", cwd=lab / "experiments", env=env).stdout)
    assert report["ok"] is True and report["state"] == "current" and report["recipe"] == "nemo-rl/grpo"

    config = lab / "experiments" / "toy" / "config.yaml"
    config.write_text(config.read_text().replace("max_num_steps: 60", "max_num_steps: 0"))
    broken = sf("validate", "toy", cwd=lab, env=env)
    assert broken.returncode == 1
    assert "config.grpo.max_num_steps" in broken.stderr and "hint:" in broken.stderr

    listed = json.loads(sf("ls", "--json", cwd=lab, env=env).stdout)["experiments"]
    assert [(r["name"], r["recipe"], r["label"]) for r in listed] == [("big", "nemo-rl/grpo", ""),
                                                                     ("toy", "tinyrl/grpo", "")]
    table = sf("ls", cwd=lab, env=env).stdout.splitlines()
    assert table[0].split() == ["EXPERIMENT", "RECIPE", "FRAMEWORK", "LOCK"] and table[1].split()[:3] == [
        "big", "nemo-rl/grpo", "0.7.0"]


def test_usage_errors_exit_2(lab: Path, tmp_path: Path, env: dict[str, str]) -> None:
    assert sf("validate", "nope", cwd=lab, env=env).returncode == 2
    assert sf("validate", cwd=lab, env=env).returncode == 2
    outside = sf("ls", cwd=tmp_path, env=env)
    assert outside.returncode == 2 and "sf init" in outside.stderr
    assert sf("submit", "nope", "--profile", "cpu", cwd=lab, env=env).returncode == 2
    assert sf("new", "x", "--method", "tinyrl/grpo", cwd=lab, env=env).returncode == 0
    no_profile = sf("submit", "x", cwd=lab, env=env)
    assert no_profile.returncode == 2 and "--profile" in no_profile.stderr


def test_submit_needs_a_console_but_dry_run_checks_offline(lab: Path, env: dict[str, str]) -> None:
    assert sf("new", "toy", "--method", "tinyrl/grpo", cwd=lab, env=env).returncode == 0
    commit(lab, env)
    offline_env = {**env, "FORGE_SERVER": "http://127.0.0.1:9"}
    real = sf("submit", "toy", "--profile", "cpu", cwd=lab, env=offline_env)
    assert real.returncode == 1 and "sf login" in real.stderr
    dry = sf("submit", "toy", "--profile", "h200:8", "--set", "max_num_steps=3", "--dry-run", "--json",
             cwd=lab, env=offline_env)
    assert dry.returncode == 0, dry.stderr
    assert "offline: checked locally" in dry.stderr
    result = json.loads(dry.stdout)
    assert result["ok"] is True and result["offline"] is True and result["dry_run"] is True
    assert result["spec"]["spec"]["hyperparams"] == {"max_num_steps": 3}
    assert json.loads((lab / ".starforge" / "jobspec.json").read_text()) == result["spec"]
    bad = sf("submit", "toy", "--profile", "cpu", "--set", "max_num_step=3", "--dry-run", cwd=lab, env=offline_env)
    assert bad.returncode == 1 and "did you mean max_num_steps" in bad.stderr
    bad_json = sf("submit", "toy", "--profile", "cpu", "--set", "max_num_step=3", "--dry-run", "--json", cwd=lab,
                  env=offline_env)
    [problem] = json.loads(bad_json.stdout)["problems"]
    assert problem["code"] == "unknown_hyperparameter"
    assert problem["data"]["suggestion"] == {"max_num_step": "max_num_steps"}
    status = subprocess.run(["git", "status", "--porcelain"], cwd=lab, env=env, capture_output=True, text=True)
    assert status.stdout == ""


def test_a_dirty_tree_refusal_names_the_files(lab: Path, env: dict[str, str]) -> None:
    assert sf("new", "toy", "--method", "tinyrl/grpo", cwd=lab, env=env).returncode == 0
    commit(lab, env)
    offline = {**env, "FORGE_SERVER": "http://127.0.0.1:9"}
    (lab / "experiments" / "toy" / "config.yaml").write_text("grpo:\n  max_num_steps: 7\n")
    (lab / "export").mkdir()
    (lab / "export" / "weights.bin").write_bytes(b"x")
    one = sf("submit", "toy", "--profile", "cpu", "--dry-run", cwd=lab, env=offline)
    assert one.returncode == 1
    assert ("provenance.git_dirty: the lab has uncommitted changes: experiments/toy/config.yaml (modified), "
            "export/ (untracked)\n") in one.stderr, one.stderr
    for n in range(6):
        (lab / f"note{n}.txt").write_text("x")
    many = sf("submit", "toy", "--profile", "cpu", "--dry-run", "--json", cwd=lab, env=offline)
    [problem] = [p for p in json.loads(many.stdout)["problems"] if p["code"] == "git_dirty"]
    assert problem["message"].endswith("and 3 more (`git status` lists them)"), problem["message"]
    assert problem["message"].count("(untracked)") + problem["message"].count("(modified)") == 5
    assert ".gitignore" in problem["hint"] and "--allow-dirty" in problem["hint"]


def test_upgrade_recipe_rewrites_a_drifted_lock_before_building(lab: Path, env: dict[str, str]) -> None:
    assert sf("new", "toy", "--method", "tinyrl/grpo", cwd=lab, env=env).returncode == 0
    lock = lab / "experiments" / "toy" / "recipe.lock.json"
    data = json.loads(lock.read_text())
    data["recipe"]["version"] = "0.9.0"
    lock.write_text(json.dumps(data))
    commit(lab, env)
    offline = {**env, "FORGE_SERVER": "http://127.0.0.1:9"}
    drifted = sf("submit", "toy", "--profile", "cpu", "--dry-run", cwd=lab, env=offline)
    assert drifted.returncode == 0 and "recipe.lock.json" in drifted.stderr and "older bundle" in drifted.stderr
    dirty = sf("submit", "toy", "--profile", "cpu", "--dry-run", "--upgrade-recipe", cwd=lab, env=offline)
    assert dirty.returncode == 1 and "upgraded" in dirty.stderr and "provenance.git_dirty" in dirty.stderr
    assert json.loads(lock.read_text())["recipe"]["version"] == "1.0.0"
    listed = json.loads(sf("ls", "--json", cwd=lab, env=env).stdout)["experiments"]
    assert listed[0]["state"] == "current"
    commit(lab, env)
    assert sf("submit", "toy", "--profile", "cpu", "--dry-run", cwd=lab, env=offline).returncode == 0


def test_an_offline_dry_run_uses_the_registry_last_seen(lab: Path, env: dict[str, str]) -> None:
    from starforge.contract import ProfileEntry
    from starforge.lab import save_registry

    assert sf("new", "toy", "--method", "tinyrl/grpo", cwd=lab, env=env).returncode == 0
    commit(lab, env)
    save_registry(Path(env["FORGE_HOME"]), "http://127.0.0.1:9", [ProfileEntry("h200", "h200", 1, 8)])
    offline = {**env, "FORGE_SERVER": "http://127.0.0.1:9"}
    shaped = sf("submit", "toy", "--profile", "h200:16", "--dry-run", "--json", cwd=lab, env=offline)
    assert shaped.returncode == 0, shaped.stderr
    result = json.loads(shaped.stdout)
    assert result["spec"]["spec"]["resources"]["pools"][0] == {"name": "all", "nodes": 2, "gpus_per_node": 8,
                                                               "series": "h200"}
    assert "last seen on this console" in json.dumps(result["warnings"])
    impossible = sf("submit", "toy", "--profile", "h200:12", "--dry-run", cwd=lab, env=offline)
    assert impossible.returncode == 1 and "12 GPUs must be at most 8" in impossible.stderr
