"""A console serving its own recipe tree: a catalog mismatch uploads nothing, and role-prefixed profiles make pools."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

import starforge.recipes
from tests.e2e.conftest import make_researcher
from tests.integration.conftest import ConsoleProcess, make_console
from tests.unit.recipes.trees import manifest, write_recipe

ROLES = ["actor", "rollout", "teacher"]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A recipe tree: tinyrl/grpo published as 1.1.0 (ours ships 1.0.0) and a distillation recipe with a teacher."""
    root = tmp_path_factory.mktemp("tree")
    builtin = Path(starforge.recipes.__file__).parent / "builtin"  # the installed catalog's tree, read only
    shutil.copytree(builtin / "tinyrl" / "grpo", root / "tinyrl" / "grpo")
    manifest_file = root / "tinyrl" / "grpo" / "recipe.yaml"
    manifest_file.write_text(manifest_file.read_text().replace('version: "1.0.0"\n', 'version: "1.1.0"\n', 1))
    write_recipe(root / "testfw" / "distill", manifest(name="distill", roles=ROLES, category="distillation"))
    return root


@pytest.fixture(scope="module")
def custom_console(tmp_path_factory: pytest.TempPathFactory, tree: Path) -> Iterator[ConsoleProcess]:
    config = {
        "catalog": {"path": str(tree), "digest_scheme": "manifest", "core_version": "0.4.0",
                    "core_requirement": ">=0.4,<0.5"},
        "profiles": [{"name": "cpu", "series": "cpu", "num_nodes": 1, "gpus_per_node": 1},
                     {"name": "h200", "series": "h200", "num_nodes": 1, "gpus_per_node": 8}],
        "capacity": {"cpu": 1},
        # the operator names what testfw's runtime is built from, so its jobs pass the runnable-framework check
        # (they queue for h200, which this machine has none of, so nothing is built)
        "runtimes": {"requires": {"testfw-1.0.0": ["testfw==1.0.0"]}},
    }
    proc = make_console(tmp_path_factory, "sqlite", config=config)
    proc.start()
    yield proc
    proc.stop()


def test_a_catalog_mismatch_uploads_nothing(custom_console: ConsoleProcess, tmp_path: Path) -> None:
    me = make_researcher(custom_console, tmp_path)
    assert me.sf("new", "toy", "--method", "tinyrl/grpo").returncode == 0
    me.commit()
    refused = me.sf("submit", "toy", "--profile", "cpu")
    assert refused.returncode == 1
    assert "The console's catalog does not match this client; nothing was uploaded" in refused.stderr
    assert "spec.recipe.version: recipe tinyrl/grpo differs from the console's catalog" in refused.stderr
    row = next(line for line in refused.stderr.splitlines() if line.strip().startswith("recipe.version"))
    assert row.split() == ["recipe.version", "1.1.0", "1.0.0"]
    assert "upgrade sf (this client is" in refused.stderr
    as_json = me.sf("submit", "toy", "--profile", "cpu", "--json")
    differences = json.loads(as_json.stdout)["differences"]
    assert {"what": "recipe.version", "console": "1.1.0", "spec": "1.0.0"} in differences
    assert me.jobs() == []


def test_role_prefixed_profiles_become_pools(custom_console: ConsoleProcess, tree: Path, tmp_path: Path) -> None:
    me = make_researcher(custom_console, tmp_path)
    made = me.sf("new", "distill", "--method", "testfw/distill", "--catalog", str(tree))
    assert made.returncode == 0, made.stderr
    me.commit()
    assert me.sf("validate", "distill", "--catalog", str(tree)).returncode == 0
    unknown_here = me.sf("validate", "distill")  # the built-in catalog has no testfw/distill
    assert unknown_here.returncode == 1 and "recipe.lock.json" in unknown_here.stderr
    submitted = me.sf("submit", "distill", "--catalog", str(tree), "--profile", "actor,rollout=h200:8",
                      "--profile", "teacher=h200:8")
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip()
    assert "Queued:" in submitted.stderr
    spec = me.json("job", "spec", job_id)["spec"]
    assert spec["resources"] == {
        "pools": [{"name": "actor", "nodes": 1, "gpus_per_node": 8, "series": "h200"},
                  {"name": "teacher", "nodes": 1, "gpus_per_node": 8, "series": "h200"}],
        "roles": {"actor": "actor", "rollout": "actor", "teacher": "teacher"},
    }
    row = me.json("job", "status", job_id)
    assert row["requested_gpus"] == 16 and row["status"] == "pending" and row["profile"] == "h200"
    unmapped = me.sf("submit", "distill", "--catalog", str(tree), "--profile", "actor=h200:8",
                     "--profile", "teacher=h200:8")
    assert unmapped.returncode == 1 and "spec.resources.roles.rollout" in unmapped.stderr
    me.sf("job", "cancel-all", "--yes")
