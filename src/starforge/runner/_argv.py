"""The child's command line: the plan's argv with `{python}` resolved and the overrides rendered per config mode."""

from __future__ import annotations

from starforge.wire import FLAG, PYTHON_PLACEHOLDER, LaunchPlan, OverrideValue, override_style

from .pinned import PINNED_BOOTSTRAP

__all__ = ["build_argv", "render_value"]


def render_value(value: OverrideValue) -> str:
    """Return an override value as text: booleans as `true` / `false`, everything else in its plain form."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def build_argv(plan: LaunchPlan, python: str) -> list[str]:
    """Return the argv to execute: `{python}` replaced by `python`, then `path=value` or `--path value` appended.

    A module entrypoint (`{python} -m MODULE`) runs through the pinned bootstrap, so the job's files cannot shadow
    the runtime's modules. The plan was validated by `parse_plan`, so a mode that cannot carry overrides never has
    any.
    """
    argv = [arg.replace(PYTHON_PLACEHOLDER, python) for arg in plan.argv]
    if len(plan.argv) >= 3 and plan.argv[0] == PYTHON_PLACEHOLDER and plan.argv[1] == "-m":
        argv = [python, "-c", PINNED_BOOTSTRAP, *argv[2:]]
    style = override_style(plan.config.mode)
    for override in plan.config.overrides:
        text = render_value(override.value)
        if style == FLAG:
            argv.extend([f"--{override.path}", text])
        else:
            argv.append(f"{override.path}={text}")
    return argv
