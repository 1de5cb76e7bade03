"""A several-node job of a recipe that launches one world (torchrun, accelerate) starts through torchrun on each
node, from the rendezvous its engine exports; one node, a plain process, or a plan without a launcher runs as is."""

from __future__ import annotations

from pathlib import Path

from starforge.runner import build_argv, parse_plan
from starforge.runner._world import World, world_from
from starforge.runner.pinned import PINNED_BOOTSTRAP
from starforge.wire import LaunchPlan

from .conftest import launch_plan

NODE_1_OF_2 = {"NNODES": "2", "NODE_RANK": "1", "NPROC_PER_NODE": "1", "MASTER_ADDR": "100.72.0.1",
               "MASTER_PORT": "29400"}


def _module_plan(launcher: str = "accelerate") -> LaunchPlan:
    entry = {"kind": "module", "value": "trl.scripts.sft", **({"launcher": launcher} if launcher else {})}
    plan, problems = parse_plan(launch_plan(entrypoint=entry, argv=["{python}", "-m", "trl.scripts.sft"],
                                            config={"mode": "", "overrides": []}))
    assert problems == [] and plan is not None
    return plan


def test_the_world_is_read_from_the_engine_s_rendezvous() -> None:
    assert world_from(NODE_1_OF_2) == World(2, 1, 1, "100.72.0.1", 29400)
    assert world_from({**NODE_1_OF_2, "NNODES": "1"}) is None  # one node: no world to start
    assert world_from({"NNODES": "2"}) is None  # no master to meet at
    assert world_from({**NODE_1_OF_2, "NPROC_PER_NODE": "x", "MASTER_PORT": ""}) == World(2, 1, 1, "100.72.0.1",
                                                                                          29500)


def test_a_node_of_a_two_node_world_starts_its_share_through_torchrun() -> None:
    argv = build_argv(_module_plan(), "/rt/bin/python", NODE_1_OF_2)
    assert argv[:4] == ["/rt/bin/python", "-c", PINNED_BOOTSTRAP, "torch.distributed.run"]  # pinned: no shadowing
    assert {"--nnodes=2", "--node-rank=1", "--nproc-per-node=1", "--master-addr=100.72.0.1",
            "--master-port=29400"} <= set(argv)
    rest = argv[argv.index("--no-python") + 1:]
    assert rest == ["/rt/bin/python", "-c", PINNED_BOOTSTRAP, "trl.scripts.sft"]  # the job's own command, unchanged


def test_one_node_or_a_recipe_without_a_world_launcher_runs_the_command_as_is() -> None:
    plain = ["/rt/bin/python", "-c", PINNED_BOOTSTRAP, "trl.scripts.sft"]
    assert build_argv(_module_plan(), "/rt/bin/python", {}) == plain
    assert build_argv(_module_plan(""), "/rt/bin/python", NODE_1_OF_2) == plain


def test_an_unknown_launcher_is_refused_at_its_path() -> None:
    plan, problems = parse_plan(launch_plan(entrypoint={"kind": "module", "value": "m", "launcher": "mpirun"}))
    assert plan is None
    assert [(p.field, p.code) for p in problems] == [("launch.entrypoint.launcher", "unknown_launcher")]
    assert "torchrun" in problems[0].hint


def test_the_trl_recipes_plans_name_their_launcher_and_a_two_node_sft_starts_through_torchrun(
        tmp_path: Path) -> None:
    import shutil

    from starforge.console.scheduler import compile_plan
    from starforge.contract import parse
    from starforge.recipes import load_catalog

    from ..recipes.trees import spec

    catalog = load_catalog(overlays=False)
    for recipe_id, launcher in (("trl/sft", "accelerate"), ("tinyrl/grpo", "")):
        recipe = catalog.get(recipe_id)
        assert recipe is not None
        work = tmp_path / recipe_id.replace("/", "-")
        shutil.copytree(recipe.template_dir, work / "experiments" / "exp")
        parsed = parse(spec(recipe))
        assert parsed.spec is not None, parsed.problems
        plan = compile_plan(parsed.spec, recipe, run_id="r-0123456789", work=work)
        assert plan.entrypoint.launcher == launcher
        again, problems = parse_plan(plan.to_dict())
        assert problems == [] and again == plan
        argv = build_argv(plan, "/rt/bin/python", NODE_1_OF_2)
        assert ("torch.distributed.run" in argv) == bool(launcher), argv
