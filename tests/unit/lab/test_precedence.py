"""Hyperparameter precedence, end to end: recipe default < the experiment's config.yaml < `--set`.

The lab builds the spec, the console's gates fill defaults (R1) and compile the plan, and forge-launch's adapter
renders it: the framework must see the config's value over the recipe default, and `--set` over both.
"""

from __future__ import annotations

from pathlib import Path

from starforge.console.scheduler import compile_plan
from starforge.lab import SubmitOptions, build_jobspec, create_experiment, init_lab
from starforge.recipes import Catalog
from starforge.runner import build_argv
from tests.unit.lab.conftest import REGISTRY, commit


def framework_argv(lab: Path, catalog: Catalog, *sets: str) -> tuple[dict[str, object], list[str]]:
    built = build_jobspec(lab, "toy", SubmitOptions(profiles=("cpu:1",), sets=sets), profiles=REGISTRY,
                          catalog=catalog)
    assert built.ok and built.job is not None and built.recipe is not None, built.problems
    plan = compile_plan(built.job, built.recipe, run_id="r-0123456789", work=lab)
    return dict(built.job.spec.hyperparams), build_argv(plan, "python", {})


def test_config_beats_the_recipe_default_and_set_beats_both(tmp_path: Path, builtin: Catalog) -> None:
    lab = init_lab(tmp_path / "lab", name="unit-lab")
    exp = create_experiment(lab, "toy", builtin, method="tinyrl/grpo").path
    assert exp is not None
    recipe = builtin.get("tinyrl/grpo")
    assert recipe is not None and recipe.params["max_num_steps"].default == 60
    config = exp / "config.yaml"
    config.write_text(config.read_text().replace("max_num_steps: 60", "max_num_steps: 7"))
    commit(lab, "experiments")

    hyperparams, argv = framework_argv(lab, builtin)
    assert hyperparams["max_num_steps"] == 7  # not the recipe's 60
    assert "grpo.max_num_steps=7" in argv and "grpo.max_num_steps=60" not in argv

    hyperparams, argv = framework_argv(lab, builtin, "max_num_steps=9")
    assert hyperparams["max_num_steps"] == 9
    assert "grpo.max_num_steps=9" in argv and not any(a.startswith("grpo.max_num_steps=7") for a in argv)

    # a value the config leaves out still gets the recipe default
    config.write_text(config.read_text().replace("  max_num_steps: 7\n", ""))
    commit(lab, "experiments")
    hyperparams, argv = framework_argv(lab, builtin)
    assert hyperparams["max_num_steps"] == 60 and "grpo.max_num_steps=60" in argv
