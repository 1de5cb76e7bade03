"""The child's argv: `{python}` resolved, module entrypoints pinned, overrides rendered per config mode."""

from __future__ import annotations

from starforge.runner import build_argv, parse_plan, render_value
from starforge.runner.pinned import PINNED_BOOTSTRAP
from starforge.wire import LaunchPlan

from .conftest import launch_plan


def _ok(doc: dict[str, object]) -> LaunchPlan:
    plan, problems = parse_plan(doc)
    assert problems == [] and plan is not None
    return plan


def test_argv_replaces_python_and_renders_overrides() -> None:
    plan = _ok(launch_plan())
    assert build_argv(plan, "/usr/bin/python3") == [
        "/usr/bin/python3",
        "job.py",
        "--config",
        "experiments/my-grpo/config.yaml",
        "grpo.max_num_steps=40",
        "grpo.val_at_start=true",
        "policy.lr=1e-06",
        "policy.name='tiny model'",  # Hydra's grammar: a space must be quoted
    ]
    flags = _ok(launch_plan(config={"mode": "cli-args", "overrides": [{"path": "flag", "value": False}]}))
    assert build_argv(flags, "py")[-2:] == ["--flag", "false"]
    assert [render_value(v) for v in (True, False, 3, 0.5, 2e-05, "a b")] == [
        "true",
        "false",
        "3",
        "0.5",
        "2e-05",
        "a b",
    ]


def test_a_module_entrypoint_runs_through_the_pinned_bootstrap() -> None:
    plan = _ok(launch_plan(argv=["{python}", "-m", "starforge.tinyrl.grpo"], config={}))
    assert build_argv(plan, "py") == ["py", "-c", PINNED_BOOTSTRAP, "starforge.tinyrl.grpo"]
