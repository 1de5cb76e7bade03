"""The StarForge MCP tools, defined once: typed inputs (their JSON Schema), output schemas, and the operation each runs.

Every tool is a thin adapter: it takes the request's backend (`current_backend`), calls one operation, and returns
its summary and data, or a tool error carrying the console's problems.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from . import _account, _jobs, _lab, _logs, _recipes, _specs
from ._jobs import MAX_JOBS
from ._logs import MAX_LOG_BYTES
from ._recipes import MAX_RECIPES
from ._results import run_tool
from ._schemas import (
    BuildOut,
    ClusterOut,
    ExplainOut,
    JobListOut,
    JobOut,
    LogsOut,
    QuotaOut,
    RecipeListOut,
    RecipeOut,
    RecipeStatusOut,
    StopOut,
    SubmitOut,
    VerdictOut,
)
from ._scope import current_backend

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from mcp.server.mcpserver import MCPServer

__all__ = ["TOOLS", "ToolDef", "register_tools"]

Spec = Annotated[dict[str, Any], Field(
    description="a forge/v2 JobSpec object (apiVersion, kind, metadata, spec, provenance); its JSON Schema is the "
                "resource starforge://schema/jobspec. Deliberately not enforced here, so a bad spec reaches the console "
                "and comes back with every problem named")]
Profile = Annotated[str | None, Field(
    description="the profile to run on, as for `sf submit --profile` (e.g. cpu, h200:8); default: the first pool's "
                "series")]
JobHandle = Annotated[str, Field(description="a job id (job_ref or run_id), a unique prefix of one, or an "
                                             "experiment name", min_length=1)]


# ---- specs ----------------------------------------------------------------------------------------------------------

async def validate_jobspec(spec: Spec, profile: Profile = None) -> Annotated[CallToolResult, VerdictOut]:
    """Ask the console's admission for its verdict on a JobSpec: ok, or every problem (field, code, message, hint) of the first failing stage. Nothing is stored or scheduled."""
    return await run_tool("validate_jobspec", lambda: _specs.validate_jobspec(current_backend(), spec=spec, profile=profile))


async def explain_rejection(
    rejection: Annotated[dict[str, Any] | list[dict[str, Any]] | None, Field(
        description="what was refused: a problems list, the console's error body {detail, problems}, "
                    "validate_jobspec's result or a tool error's structured content; omit it to check `spec` now")] = None,
    spec: Annotated[dict[str, Any] | None, Field(description="the refused JobSpec: fixes then name exact values")] = None,
    exp: Annotated[str | None, Field(description="the experiment name to use in sf commands")] = None,
    profile: Profile = None,
) -> Annotated[CallToolResult, ExplainOut]:
    """Explain a rejection: for each problem its plain-language cause and a concrete fix — exact sf commands (sf recipe upgrade, --image from an allowed registry, --profile …) and patches to apply to the spec."""
    return await run_tool("explain_rejection", lambda: _specs.explain_rejection(
        current_backend(), rejection=rejection, spec=spec, exp=exp, profile=profile))


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
    return await run_tool("build_jobspec", lambda: _lab.build_spec(
        current_backend(), exp=exp, profiles=profiles, sets=list(sets or []), image=image,
        observability_url=observability_url, init_from=init_from, corpus=corpus, train_dataset=train_dataset,
        plugins=list(plugins or []), then=list(then or []), framework_version=framework_version,
        allow_dirty=allow_dirty, include_bundle=include_bundle))


async def recipe_status(
    exp: Annotated[str, Field(description="one experiment; empty for every experiment with a lock")] = "",
    compare_with_console: Annotated[bool, Field(description="also compare with the console's catalog")] = True,
) -> Annotated[CallToolResult, RecipeStatusOut]:
    """Show the lock state of the lab's experiments against the installed catalog (and the console's): current, drifted, incompatible …, with diffs and the `sf recipe upgrade` that fixes them."""
    return await run_tool("recipe_status", lambda: _lab.recipe_status(
        current_backend(), exp=exp, compare_with_console=compare_with_console))


# ---- recipes --------------------------------------------------------------------------------------------------------

async def list_recipes(
    limit: Annotated[int, Field(ge=1, le=MAX_RECIPES, description="at most this many rows")] = 50,
) -> Annotated[CallToolResult, RecipeListOut]:
    """List the recipes this console publishes (name, version, digest, framework versions), in product order."""
    return await run_tool("list_recipes", lambda: _recipes.list_recipes(current_backend(), limit=limit))


async def show_recipe(
    recipe: Annotated[str, Field(description="a recipe id such as tinyrl/grpo", min_length=1)],
) -> Annotated[CallToolResult, RecipeOut]:
    """Show one recipe: published version and digest, runtime variants, roles, and every parameter with its type, bounds, choices, default and config path."""
    return await run_tool("show_recipe", lambda: _recipes.show_recipe(current_backend(), recipe=recipe))


# ---- jobs -----------------------------------------------------------------------------------------------------------

async def submit_job(
    spec: Spec,
    profile: Profile = None,
    bundle_base64: Annotated[str | None, Field(
        description="the job's files as a gzip tar, base64-encoded (build_jobspec include_bundle=true packs it); "
                    "omitted: an empty bundle")] = None,
    exp: Annotated[str | None, Field(description="experiment path; default spec.spec.source.exp")] = None,
    idempotency_key: Annotated[str | None, Field(
        description="send the same key again to retry safely; generated (and returned) when omitted")] = None,
) -> Annotated[CallToolResult, SubmitOut]:
    """Submit a JobSpec and its bundle to the console, exactly as `sf submit` uploads it. Admission refusals come back as a tool error with every problem."""
    return await run_tool("submit_job", lambda: _jobs.submit_job(
        current_backend(), spec=spec, profile=profile, bundle_base64=bundle_base64, exp=exp,
        idempotency_key=idempotency_key))


async def list_jobs(
    limit: Annotated[int, Field(ge=1, le=MAX_JOBS, description="at most this many jobs, newest first")] = 15,
) -> Annotated[CallToolResult, JobListOut]:
    """List your jobs, newest first (each account sees only its own)."""
    return await run_tool("list_jobs", lambda: _jobs.list_jobs(current_backend(), limit=limit))


async def get_job(job: JobHandle) -> Annotated[CallToolResult, JobOut]:
    """Show one job: status, pipeline, GPUs, and the latest value of each metric it reported."""
    return await run_tool("get_job", lambda: _jobs.get_job(current_backend(), job=job))


async def get_job_logs(
    job: JobHandle,
    tail: Annotated[int, Field(ge=0, le=5000, description="last lines to return (0: the whole log)")] = 200,
    from_event_id: Annotated[str | None, Field(
        description="continue after this event id (last_event_id of a previous call) instead of tailing")] = None,
    max_bytes: Annotated[int, Field(ge=1024, le=MAX_LOG_BYTES, description="size cap of the returned text")] = 32768,
) -> Annotated[CallToolResult, LogsOut]:
    """Read a job's log as it is now, without following: the text (bounded), the last event id to continue from, and whether the job has ended."""
    return await run_tool("get_job_logs", lambda: _logs.read_logs(
        current_backend(), job=job, tail=tail, from_event_id=from_event_id, max_bytes=max_bytes))


async def stop_job(job: JobHandle) -> Annotated[CallToolResult, StopOut]:
    """Stop a job (viewers are refused by the console); stopping a finished job reports it as such."""
    return await run_tool("stop_job", lambda: _jobs.stop_job(current_backend(), job=job))


# ---- account --------------------------------------------------------------------------------------------------------

async def get_quota() -> Annotated[CallToolResult, QuotaOut]:
    """Show who the token belongs to (name, role), your quota caps and what you use now."""
    return await run_tool("get_quota", lambda: _account.get_quota(current_backend()))


async def cluster_status() -> Annotated[CallToolResult, ClusterOut]:
    """Show the console's profiles (what --profile accepts), GPU capacity per series and active jobs."""
    return await run_tool("cluster_status", lambda: _account.cluster_status(current_backend()))


@dataclass(frozen=True)
class ToolDef:
    """One tool: its function (name, input and output schema come from it), title, behaviour hints, transport."""

    fn: Callable[..., Awaitable[CallToolResult]]
    title: str
    read_only: bool = True
    destructive: bool = False
    idempotent: bool = True
    lab_only: bool = False

    @property
    def name(self) -> str:
        """Return the tool's name (the function's)."""
        return self.fn.__name__


TOOLS: tuple[ToolDef, ...] = (
    ToolDef(validate_jobspec, "Validate a JobSpec"),
    ToolDef(explain_rejection, "Explain a rejection"),
    ToolDef(list_recipes, "List recipes"),
    ToolDef(show_recipe, "Show a recipe"),
    ToolDef(build_jobspec, "Build a JobSpec from the lab", lab_only=True),
    ToolDef(recipe_status, "Recipe lock status", lab_only=True),
    ToolDef(submit_job, "Submit a job", read_only=False, idempotent=False),
    ToolDef(list_jobs, "List jobs"),
    ToolDef(get_job, "Show a job"),
    ToolDef(get_job_logs, "Read a job's log"),
    ToolDef(stop_job, "Stop a job", read_only=False, destructive=True),
    ToolDef(get_quota, "Quota and usage"),
    ToolDef(cluster_status, "Cluster status"),
)


def register_tools(server: MCPServer[Any], *, lab: bool) -> list[str]:
    """Add the tools to `server` (the lab tools only when `lab`) and return their names."""
    names = []
    for tool in TOOLS:
        if tool.lab_only and not lab:
            continue
        hints = ToolAnnotations(read_only_hint=tool.read_only, destructive_hint=tool.destructive,
                                idempotent_hint=tool.idempotent, open_world_hint=False)
        server.add_tool(tool.fn, name=tool.name, title=tool.title, annotations=hints, structured_output=True)
        names.append(tool.name)
    return names
