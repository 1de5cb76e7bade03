"""The lab tools (stdio only): `build_jobspec` and `recipe_status`, defined like the common tools, registered by
`sf mcp` alone because they read the lab of the working directory."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from mcp.types import CallToolResult
from pydantic import Field

from .._backend import Backend
from .._results import Outcome, run_tool
from .._schemas import BuildOut, RecipeStatusOut
from .._tools import ToolDef
from . import _lab
from ._client import ClientBackend, translated

__all__ = ["LAB_TOOLS"]


def _on_client(operation: Callable[[ClientBackend], Outcome]) -> Callable[[Backend], Outcome]:
    """Return `operation` run on the request's backend, which over stdio is the client backend."""

    def run(backend: Backend) -> Outcome:
        if not isinstance(backend, ClientBackend):
            raise TypeError("the lab tools run only on the stdio backend")
        with translated():
            return operation(backend)

    return run


async def build_jobspec(
    exp: Annotated[str, Field(description="experiment name or path in the lab (<name>, experiments/<name>)",
                              min_length=1)],
    profile: Annotated[str | list[str], Field(
        description="--profile expression(s), e.g. cpu, h200:8, or one per role: [\"actor=h200:8\", \"critic=h200:4\"]")],
    sets: Annotated[list[str] | None, Field(description="hyperparameter overrides as for --set: [\"name=value\"]")] = None,
    image: Annotated[str, Field(description="--image override (required by custom/custom)")] = "",
    observability_url: Annotated[str, Field(description="--observability-url for recipes that report externally")] = "",
    init_from: Annotated[str, Field(description="run/<run_id>/<kind>[@step=<N>]")] = "",
    corpus: Annotated[str, Field(description="<owner>/<name>[@version]")] = "",
    train_dataset: Annotated[str, Field(description="<owner>/<name>[@version]")] = "",
    plugins: Annotated[list[str] | None, Field(description="plugin ID@VERSION items (digests from plugins.lock.json)")] = None,
    then: Annotated[list[str] | None, Field(description="on_success actions, e.g. [\"export\"]")] = None,
    framework_version: Annotated[str, Field(description="must match the lock's framework version")] = "",
    allow_dirty: Annotated[bool, Field(description="accept uncommitted changes (recorded as git_dirty)")] = False,
    include_bundle: Annotated[bool, Field(description="also pack the bundle sf submit would upload (base64)")] = False,
) -> Annotated[CallToolResult, BuildOut]:
    """Build the JobSpec `sf submit` would send for an experiment of this lab (lock, catalog, profile, overrides); nothing is uploaded. Optionally packs the bundle for submit_job."""
    profiles = [profile] if isinstance(profile, str) else list(profile)
    return await run_tool("build_jobspec", _on_client(lambda b: _lab.build_spec(
        b, exp=exp, profiles=profiles, sets=list(sets or []), image=image, observability_url=observability_url,
        init_from=init_from, corpus=corpus, train_dataset=train_dataset, plugins=list(plugins or []),
        then=list(then or []), framework_version=framework_version, allow_dirty=allow_dirty,
        include_bundle=include_bundle)))


async def recipe_status(
    exp: Annotated[str, Field(description="one experiment; empty for every experiment with a lock")] = "",
    compare_with_console: Annotated[bool, Field(description="also compare with the console's catalog")] = True,
) -> Annotated[CallToolResult, RecipeStatusOut]:
    """Show the lock state of the lab's experiments against the installed catalog (and the console's): current, drifted, incompatible …, with diffs and the `sf recipe upgrade` that fixes them."""
    return await run_tool("recipe_status", _on_client(lambda b: _lab.recipe_status(
        b, exp=exp, compare_with_console=compare_with_console)))


LAB_TOOLS: tuple[ToolDef, ...] = (
    ToolDef(build_jobspec, "Build a JobSpec from the lab"),
    ToolDef(recipe_status, "Recipe lock status"),
)
