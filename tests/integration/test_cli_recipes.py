"""`sf methods` and `sf recipe status|upgrade` through the real `sf` in a subprocess, on a lab built here."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from starforge.lab import expected_lock, write_lock
from starforge.recipes import load_catalog
from tests.conftest import service_unavailable
from tests.official import OfficialUnavailable, official_catalog
from tests.unit.recipes.trees import edit_lock, lab, manifest, tree, write_recipe

SF = str(Path(sys.executable).with_name("sf"))
GRPO_0356_BUNDLE = "sha256:c0b900db15a7a0649710d510164220b638b6947aa40c5c7212f9a4bf7d54805a"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    values = {k: v for k, v in os.environ.items() if k not in ("FORGE_RECIPE_PATH", "SF_REPO_ROOT")}
    values.update(FORGE_HOME=str(tmp_path / "forge-home"), NO_COLOR="1", FORGE_SERVER="http://127.0.0.1:9")
    return values


def sf(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SF, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120, check=False)


@pytest.fixture(scope="module")
def official() -> Path:
    try:
        return official_catalog("0.3.56")
    except OfficialUnavailable as exc:
        service_unavailable("official catalog (PyPI)", str(exc), "needs PyPI to download starforge-core")


@pytest.fixture
def setup(tmp_path: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    """A recipe tree, and a lab whose experiments/x copies the template with a lock written by `write_lock`."""
    root = tree(tmp_path / "tree", manifest())
    monkeypatch.setenv("FORGE_HOME", env["FORGE_HOME"])
    recipe = load_catalog(root, overlays=False).get("testfw/grpo")
    assert recipe is not None
    home = lab(tmp_path / "lab")
    exp = home / "experiments" / "x"
    shutil.copytree(recipe.template_dir, exp)
    write_lock(exp, expected_lock(recipe, "1.0.0", exp, core_version="0.4.0"))
    return root, home, exp


def _status(env: dict[str, str], root: Path, home: Path, *args: str) -> tuple[int, dict[str, Any]]:
    done = sf(env, "recipe", "status", "--catalog", str(root), "--json", *args, cwd=home)
    return done.returncode, json.loads(done.stdout)


def test_methods_lists_the_catalog_in_product_order(env: dict[str, str], official: Path) -> None:
    done = sf(env, "methods", "--catalog", str(official))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["ID", "VERSION", "RUNTIME", "CATEGORY", "TITLE"]
    assert lines[1].startswith("nemo-rl/grpo ") and lines[-1].startswith("custom/custom ")
    listed = json.loads(sf(env, "methods", "--catalog", str(official), "--json").stdout)["recipes"]
    assert len(listed) == 34 and listed[0]["digest"] == GRPO_0356_BUNDLE


def test_methods_shows_one_recipe(env: dict[str, str], official: Path) -> None:
    done = sf(env, "methods", "nemo-rl/grpo", "--catalog", str(official))
    assert done.returncode == 0, done.stderr
    assert "learning_rate" in done.stdout and "policy.optimizer.kwargs.lr" in done.stdout
    assert "(0, 1.0]" in done.stdout  # top_p: exclusive min, max
    data = json.loads(sf(env, "methods", "nemo-rl/grpo", "--catalog", str(official), "--json").stdout)
    assert data["id"] == "nemo-rl/grpo" and data["digest"] == GRPO_0356_BUNDLE
    assert data["manifest_digest"].startswith("sha256:4497d249") and data["template_digest"].startswith("sha256:1ad2")
    assert data["params"]["learning_rate"]["path"] == "policy.optimizer.kwargs.lr"


def test_methods_shows_a_default_for_every_parameter_the_template_sets(env: dict[str, str]) -> None:
    done = sf(env, "methods", "trl/sft")
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line for line in done.stdout.splitlines() if line[:1].islower()}
    assert "2e-05 (template)" in rows["learning_rate"] and "cosine (template)" in rows["lr_scheduler_type"]
    assert rows["bf16"].split()[2] == "true"  # the recipe's own default, as TRL's
    assert "(template): the value `sf new` writes" in done.stdout
    assert "eval (1 GPU)" in done.stdout
    tinyrl = sf(env, "methods", "tinyrl/grpo").stdout  # a recipe default the template agrees with: shown plain
    assert [line.split()[4] for line in tinyrl.splitlines() if line.startswith("max_num_steps")] == ["60"]


def test_methods_refusals(env: dict[str, str], official: Path, tmp_path: Path) -> None:
    bare = sf(env, "methods", "grpo", "--catalog", str(official))
    assert bare.returncode == 1 and "nemo-rl/grpo, openrlhf/grpo, trl/grpo, verl/grpo" in bare.stderr
    assert sf(env, "methods", "--catalog", str(tmp_path / "missing")).returncode == 2
    broken = tree(tmp_path / "broken", manifest(category="weird"))
    done = sf(env, "methods", "--catalog", str(broken))
    assert done.returncode == 1 and "category" in done.stderr and "recipe.yaml" in done.stderr


def test_status_and_upgrade_round_trip(env: dict[str, str], setup: tuple[Path, Path, Path]) -> None:
    root, home, exp = setup
    code, data = _status(env, root, home, "x")
    assert code == 0 and data["experiments"][0]["state"] == "current"

    edit_lock(exp, recipe__version="0.1.0")                       # drift: compatible, admitted
    code, data = _status(env, root, home, "x")
    assert code == 0 and data["experiments"][0]["state"] == "compatible"
    assert data["experiments"][0]["diffs"] == [{"field": "recipe.version", "locked": "0.1.0", "current": "1.0.0"}]
    assert _status(env, root, home, "x", "--strict")[0] == 1
    human = sf(env, "recipe", "status", "--catalog", str(root), "experiments/x", cwd=home)
    assert human.returncode == 0 and "recipe.version" in human.stdout and "sf recipe upgrade" in human.stderr

    before = (exp / "recipe.lock.json").read_bytes()
    dry = sf(env, "recipe", "upgrade", "x", "--dry-run", "--catalog", str(root), cwd=home)
    assert dry.returncode == 0 and "would change" in dry.stdout
    assert (exp / "recipe.lock.json").read_bytes() == before
    assert sf(env, "recipe", "upgrade", "x", "--catalog", str(root), cwd=home).returncode == 0
    assert _status(env, root, home, "x", "--strict") == (0, _status(env, root, home, "x", "--strict")[1])
    assert _status(env, root, home, "x")[1]["experiments"][0]["state"] == "current"

    edit_lock(exp, framework__runtime_id="testfw-0.1.0")         # identity drift: incompatible, refused
    code, data = _status(env, root, home, "x")
    assert code == 1 and data["experiments"][0]["state"] == "incompatible"
    assert sf(env, "recipe", "upgrade", "x", "--catalog", str(root), cwd=home).returncode == 0
    assert _status(env, root, home, "x")[1]["experiments"][0]["state"] == "current"


def test_runtime_removed_needs_a_decision(env: dict[str, str], setup: tuple[Path, Path, Path]) -> None:
    root, home, exp = setup
    edit_lock(exp, framework__version="0.5.0")
    code, data = _status(env, root, home, "x")
    assert code == 1 and data["experiments"][0]["label"] == "runtime gone"
    refused = sf(env, "recipe", "upgrade", "x", "--catalog", str(root), "--json", cwd=home)
    assert refused.returncode == 1 and json.loads(refused.stdout)["experiments"][0]["state"] == "runtime_removed"
    assert sf(env, "recipe", "upgrade", "x", "--catalog", str(root), "--framework-version", "7.0.0",
              cwd=home).returncode == 1
    done = sf(env, "recipe", "upgrade", "x", "--catalog", str(root), "--accept-runtime-change", cwd=home)
    assert done.returncode == 0, done.stderr
    assert _status(env, root, home, "x")[1]["experiments"][0]["state"] == "current"


def test_all_writes_nothing_when_one_fails(env: dict[str, str], setup: tuple[Path, Path, Path]) -> None:
    root, home, exp = setup
    other = home / "smoke" / "y"
    shutil.copytree(exp, other)
    edit_lock(exp, recipe__version="0.1.0")
    (other / "recipe.lock.json").write_text("not json")
    code, data = _status(env, root, home, "--all")
    assert code == 1 and [(e["exp"], e["state"]) for e in data["experiments"]] == [
        ("experiments/x", "compatible"), ("smoke/y", "malformed")]
    before = (exp / "recipe.lock.json").read_bytes()
    done = sf(env, "recipe", "upgrade", "--all", "--catalog", str(root), cwd=home)
    assert done.returncode == 1 and "nothing was written" in done.stderr
    assert (exp / "recipe.lock.json").read_bytes() == before
    (other / "recipe.lock.json").unlink()
    assert sf(env, "recipe", "upgrade", "--all", "--catalog", str(root), cwd=home).returncode == 0
    assert _status(env, root, home, "--all", "--strict")[0] == 0


def test_status_defaults_to_the_current_experiment(env: dict[str, str], setup: tuple[Path, Path, Path]) -> None:
    root, home, exp = setup
    done = sf(env, "recipe", "status", "--catalog", str(root), "--json", cwd=exp)
    assert done.returncode == 0 and json.loads(done.stdout)["experiments"][0]["exp"] == "experiments/x"
    assert sf(env, "recipe", "status", "--catalog", str(root), cwd=home).returncode == 2  # no experiment named
    assert sf(env, "recipe", "status", "nope", "--catalog", str(root), cwd=home).returncode == 2
    assert sf(env, "recipe", "status", "x", "--catalog", str(root), cwd=home.parent).returncode == 2  # no lab


def test_status_server_needs_a_login(env: dict[str, str], setup: tuple[Path, Path, Path]) -> None:
    root, home, _ = setup
    done = sf(env, "recipe", "status", "x", "--server", "--catalog", str(root), cwd=home)
    assert done.returncode == 1 and "error:" in done.stderr


def test_overlays_extend_the_builtin_catalog(env: dict[str, str], tmp_path: Path) -> None:
    pack = tmp_path / "packs"
    write_recipe(pack / "alice" / "grpo", manifest())
    env = dict(env, FORGE_RECIPE_PATH=str(pack))
    done = sf(env, "methods", "testfw/grpo", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["id"] == "testfw/grpo"
