"""The child's command line: the plan's argv with `{python}` resolved, plus what its config mode adds."""

from __future__ import annotations

import os
from collections.abc import Mapping

from starforge.wire import PYTHON_PLACEHOLDER, LaunchPlan

from ._config import Adapted, adapt_config, render_value
from ._world import world_command, world_from
from .pinned import PINNED_BOOTSTRAP

__all__ = ["build_argv", "build_command", "render_value"]


def build_command(
    plan: LaunchPlan, python: str, environ: Mapping[str, str] | None = None
) -> tuple[list[str], Adapted]:
    """Return the argv to execute and the config adaptation (its argv items and the files to write first).

    `{python}` is replaced by `python`; a module entrypoint (`{python} -m MODULE`) runs through the pinned
    bootstrap, so the job's files cannot shadow the runtime's modules; then the config mode's items follow
    (`starforge.runner._config`), read against `environ` (default: the process environment) for job inputs.
    On a node of a several-node job whose recipe launches one world (torchrun, accelerate), torchrun starts it.
    """
    environ = os.environ if environ is None else environ
    argv = [arg.replace(PYTHON_PLACEHOLDER, python) for arg in plan.argv]
    if len(plan.argv) >= 3 and plan.argv[0] == PYTHON_PLACEHOLDER and plan.argv[1] == "-m":
        argv = [python, "-c", PINNED_BOOTSTRAP, *argv[2:]]
    adapted = adapt_config(plan.config, environ)
    argv = [*argv, *adapted.args]
    world = world_from(environ) if plan.entrypoint.launcher else None
    return (world_command(python, world, argv) if world is not None else argv), adapted


def build_argv(plan: LaunchPlan, python: str, environ: Mapping[str, str] | None = None) -> list[str]:
    """Return the argv to execute (see `build_command`; the files it needs are not written)."""
    return build_command(plan, python, environ)[0]
