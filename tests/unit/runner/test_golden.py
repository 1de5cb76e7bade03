"""Golden adapter output per builtin recipe: compile_plan → forge-launch's argv, written files and data links.

Each builtin recipe's template becomes an experiment; the console compiles its plan (template config, default and
explicit hyperparameters, the recipe's bindings), the plan goes through its JSON round trip, and the runner adapts it
against a fixed job environment. The result must equal `golden/<framework>__<name>.json`, which pins exactly what
each framework's CLI receives. After a deliberate change, regenerate with
`STARFORGE_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/unit/runner/test_golden.py` and review the diff.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from starforge.console.scheduler import compile_plan
from starforge.contract import parse
from starforge.recipes import load_catalog, validate_hyperparams
from starforge.runner import build_command
from starforge.runner._config import set_path
from starforge.wire import WRITTEN_CONFIG_FILE, parse_plan

from ..recipes.trees import spec

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("STARFORGE_UPDATE_GOLDEN") == "1"
PYTHON = "/runtime/bin/python"
ENVIRON = {
    "FORGE_MODEL": "/models/tiny-llama",
    "FORGE_TRAIN_DATA": "/data/train/pairs.jsonl",
    "FORGE_VAL_DATA": "/data/val/pairs.parquet",
    "FORGE_OUT_DIR": "/job/out",
}
# explicit hyperparameters (what `--set` or the experiment's config.yaml gives), where the recipe declares them
EXPLICIT = {"learning_rate": 1.0e-5, "suites": "gsm8k,mmlu", "use_vllm": False, "packing": True}
CATALOG = load_catalog(overlays=False)


def adapted(recipe_id: str, tmp_path: Path) -> dict[str, Any]:
    recipe = CATALOG.get(recipe_id)
    assert recipe is not None
    work = tmp_path / "work"
    shutil.copytree(recipe.template_dir, work / "experiments" / "exp")
    version = recipe.default_version
    given = {k: v for k, v in EXPLICIT.items() if k in recipe.params}
    hyperparams, problems = validate_hyperparams(given, recipe, version)
    assert problems == []
    parsed = parse(spec(recipe, hyperparams=hyperparams))
    assert parsed.spec is not None, parsed.problems
    plan = compile_plan(parsed.spec, recipe, run_id="r-0123456789", work=work, framework_dir="/opt/checkout")
    again, plan_problems = parse_plan(json.loads(json.dumps(plan.to_dict())))
    assert plan_problems == [] and again == plan
    argv, result = build_command(again, PYTHON, ENVIRON)
    if WRITTEN_CONFIG_FILE in result.files:  # the written YAML reads back with every override at its path
        loaded = yaml.safe_load(result.files[WRITTEN_CONFIG_FILE])
        for override in again.config.overrides if again.config else ():
            probe = copy.deepcopy(loaded)
            set_path(probe, override.path, override.value)
            assert probe == loaded, override
    return {"plan_argv": list(plan.argv), "argv": argv, "files": dict(result.files), "links": dict(result.links)}


@pytest.mark.parametrize("recipe_id", CATALOG.ids)
def test_adapter_output_matches_its_golden_file(recipe_id: str, tmp_path: Path) -> None:
    got = adapted(recipe_id, tmp_path)
    golden = GOLDEN / f"{recipe_id.replace('/', '__')}.json"
    if UPDATE:
        golden.write_text(json.dumps(got, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    assert golden.is_file(), f"no golden file for {recipe_id}: run with STARFORGE_UPDATE_GOLDEN=1 and review it"
    assert got == json.loads(golden.read_text(encoding="utf-8"))


def test_every_golden_file_has_a_recipe() -> None:
    assert sorted(p.stem for p in GOLDEN.glob("*.json")) == sorted(r.replace("/", "__") for r in CATALOG.ids)
