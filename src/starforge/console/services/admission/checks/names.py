"""Names that become path components on the console: each must be a safe segment of at most 100 characters.

The contract (jobspec-contract §5) is shared with other implementations and stays as it is; this policy is ours.
It covers `metadata.name`, `metadata.project` (the contract also allows a leading '.', '_' or '-', which makes
hidden files and option-like arguments), both parts of every `spec.plugins[i].id` (owner and leaf), and every part
of `spec.source.exp`, whose last part names the run directory `runs/<user>/<exp basename>/<run_id>`.

Why 100 characters: a name is one directory level, and the deepest paths nest several of them (run directory,
unpacked experiment, plugin store) below the state root. 100 stays well under the 255-byte name limit of common
filesystems even after the console adds a prefix or suffix (staging directories, temporary files), and under
the 143 bytes eCryptfs-encrypted homes allow. The whole experiment path is held to 255 characters, so the files
below it keep most of the bundle's 1024-character path budget.
"""

from __future__ import annotations

from .....contract import Problem, is_safe_segment
from ..context import AdmissionContext

__all__ = ["MAX_COMPONENT_CHARS", "MAX_EXP_CHARS", "check_names", "component_problem"]

MAX_COMPONENT_CHARS = 100
MAX_EXP_CHARS = 255
_CODE = "unsafe_path_component"


def _shown(value: str) -> str:
    return repr(value if len(value) <= 24 else value[:20] + "…")


def component_problem(value: str) -> str | None:
    """Return why `value` is not a safe path component (safe segment, at most 100 characters), or None."""
    if len(value) > MAX_COMPONENT_CHARS:
        return f"{_shown(value)} is {len(value)} characters long; at most {MAX_COMPONENT_CHARS} are allowed"
    if not is_safe_segment(value):
        return (f"{_shown(value)} must start with a letter or digit and hold only letters, digits, '.', '_' and '-' "
                "(it becomes a directory name)")
    return None


def _name(ctx: AdmissionContext) -> list[Problem]:
    reason = component_problem(ctx.spec.metadata.name)
    if reason is None:
        return []
    return [Problem("metadata.name", _CODE, f"metadata.name {reason}",
                    "use a shorter name; sf sets it to the experiment folder's name, so rename the folder")]


def _project(ctx: AdmissionContext) -> list[Problem]:
    project = ctx.spec.metadata.project
    reason = component_problem(project) if project else None
    if reason is None:
        return []
    plain = project.lstrip("._-")[:MAX_COMPONENT_CHARS] or "my-lab"
    return [Problem("metadata.project", _CODE, f"metadata.project {reason}",
                    f"rename the lab: set `name: {plain}` in starforge.yaml and commit")]


def _plugins(ctx: AdmissionContext) -> list[Problem]:
    problems = []
    for i, plugin in enumerate(ctx.spec.spec.plugins):
        owner, _, leaf = plugin.id.partition("/")
        for part, value in (("owner", owner), ("name", leaf)):
            reason = component_problem(value)
            if reason is not None:
                problems.append(Problem(f"spec.plugins[{i}].id", _CODE, f"plugin {part} {reason}",
                                        "use a plugin published under a shorter owner and name"))
    return problems


def _exp(ctx: AdmissionContext) -> list[Problem]:
    exp = ctx.spec.spec.source.exp.rstrip("/")
    hint = "move the experiment to a shorter folder, e.g. experiments/<name> with a name of at most 100 characters"
    problems = []
    if len(exp) > MAX_EXP_CHARS:
        problems.append(Problem("spec.source.exp", _CODE, f"spec.source.exp is {len(exp)} characters long; "
                                f"at most {MAX_EXP_CHARS} are allowed", hint))
    for number, part in enumerate(exp.split("/"), start=1):
        reason = component_problem(part)
        if reason is not None:
            problems.append(Problem("spec.source.exp", _CODE, f"spec.source.exp part {number} {reason}", hint))
    return problems


def check_names(ctx: AdmissionContext) -> list[Problem]:
    """Refuse names that would become unsafe path components: every problem, in the contract's field order."""
    return [*_name(ctx), *_project(ctx), *_plugins(ctx), *_exp(ctx)]
