"""The StarForge MCP tools both transports serve: typed inputs (their JSON Schema), output schemas, and the
operation each runs.

Every tool is a thin adapter: it runs one operation on the request's backend (`run_tool`) and returns its summary
and data, or a tool error carrying the console's problems. The lab tools, which need the client and the lab, are
defined by `starforge.mcp.stdio` with the same `ToolDef` and registered only there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from . import _account, _jobs, _logs, _recipes, _specs
from ._jobs import MAX_JOBS
from ._logs import MAX_LOG_BYTES
from ._recipes import MAX_RECIPES
from ._results import run_tool
from ._schemas import (
    ClusterOut,
    ControlOut,
    ExplainOut,
    JobListOut,
    JobOut,
    LogsOut,
    QuotaOut,
    RecipeListOut,
    RecipeOut,
    StopOut,
    SubmitOut,
    VerdictOut,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

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
    return await run_tool("validate_jobspec", lambda b: _specs.validate_jobspec(b, spec=spec, profile=profile))


async def explain_rejection(
    rejection: Annotated[dict[str, Any] | list[dict[str, Any]] | None, Field(
        description="what was refused: a problems list, the console's error body {detail, problems}, "
                    "validate_jobspec's result or a tool error's structured content; omit it to check `spec` now")] = None,
    spec: Annotated[dict[str, Any] | None, Field(description="the refused JobSpec: fixes then name exact values")] = None,
    exp: Annotated[str | None, Field(description="the experiment name to use in sf commands")] = None,
    profile: Profile = None,
) -> Annotated[CallToolResult, ExplainOut]:
    """Explain a rejection: for each problem its plain-language cause and a concrete fix — exact sf commands (sf recipe upgrade, --image from an allowed registry, --profile …) and patches to apply to the spec."""
    return await run_tool("explain_rejection", lambda b: _specs.explain_rejection(
        b, rejection=rejection, spec=spec, exp=exp, profile=profile))


# ---- recipes --------------------------------------------------------------------------------------------------------

async def list_recipes(
    limit: Annotated[int, Field(ge=1, le=MAX_RECIPES, description="at most this many rows")] = 50,
) -> Annotated[CallToolResult, RecipeListOut]:
    """List the recipes this console publishes (name, version, digest, framework versions), in product order."""
    return await run_tool("list_recipes", lambda b: _recipes.list_recipes(b, limit=limit))


async def show_recipe(
    recipe: Annotated[str, Field(description="a recipe id such as tinyrl/grpo", min_length=1)],
) -> Annotated[CallToolResult, RecipeOut]:
    """Show one recipe: published version and digest, runtime variants, roles, and every parameter with its type, bounds, choices, default and config path."""
    return await run_tool("show_recipe", lambda b: _recipes.show_recipe(b, recipe=recipe))


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
    return await run_tool("submit_job", lambda b: _jobs.submit_job(
        b, spec=spec, profile=profile, bundle_base64=bundle_base64, exp=exp,
        idempotency_key=idempotency_key))


async def list_jobs(
    limit: Annotated[int, Field(ge=1, le=MAX_JOBS, description="at most this many jobs, newest first")] = 15,
) -> Annotated[CallToolResult, JobListOut]:
    """List your jobs, newest first (each account sees only its own)."""
    return await run_tool("list_jobs", lambda b: _jobs.list_jobs(b, limit=limit))


async def get_job(job: JobHandle) -> Annotated[CallToolResult, JobOut]:
    """Show one job: status and why, pipeline, GPUs, its attempts (attempts, resumed_from: the checkpoint the current attempt started from, attempt_history), its place while it waits, and the latest value of each metric it reported."""
    return await run_tool("get_job", lambda b: _jobs.get_job(b, job=job))


async def get_job_logs(
    job: JobHandle,
    tail: Annotated[int, Field(ge=0, le=5000, description="last lines to return (0: the whole log)")] = 200,
    from_event_id: Annotated[str | None, Field(
        description="continue after this event id (last_event_id of a previous call) instead of tailing")] = None,
    max_bytes: Annotated[int, Field(ge=1024, le=MAX_LOG_BYTES, description="size cap of the returned text")] = 32768,
) -> Annotated[CallToolResult, LogsOut]:
    """Read a job's log as it is now, without following: the text (bounded), the last event id to continue from, and whether the job has ended."""
    return await run_tool("get_job_logs", lambda b: _logs.read_logs(
        b, job=job, tail=tail, from_event_id=from_event_id, max_bytes=max_bytes))


async def stop_job(job: JobHandle) -> Annotated[CallToolResult, StopOut]:
    """Stop a job (viewers are refused by the console); stopping a finished job reports it as such."""
    return await run_tool("stop_job", lambda b: _jobs.stop_job(b, job=job))


async def pause_job(job: JobHandle) -> Annotated[CallToolResult, ControlOut]:
    """Pause a job: a running one saves a checkpoint, stops and is held (status paused); a waiting one is held at once. It keeps its place in the queue and is not started until resume_job."""
    return await run_tool("pause_job", lambda b: _jobs.pause_job(b, job=job))


async def resume_job(job: JobHandle) -> Annotated[CallToolResult, ControlOut]:
    """Resume a paused job: it goes back to the queue in its place and its next attempt starts from its latest checkpoint."""
    return await run_tool("resume_job", lambda b: _jobs.resume_job(b, job=job))


async def retry_job(job: JobHandle) -> Annotated[CallToolResult, ControlOut]:
    """Run a failed or stopped job again, as the same job (same id, run folder and artifacts), from its latest checkpoint; any other status is refused (409)."""
    return await run_tool("retry_job", lambda b: _jobs.retry_job(b, job=job))


# ---- account --------------------------------------------------------------------------------------------------------

async def get_quota() -> Annotated[CallToolResult, QuotaOut]:
    """Show who the token belongs to (name, role), your quota caps and what you use now."""
    return await run_tool("get_quota", _account.get_quota)


async def cluster_status() -> Annotated[CallToolResult, ClusterOut]:
    """Show the console's profiles (what --profile accepts), GPU capacity per series and active jobs."""
    return await run_tool("cluster_status", _account.cluster_status)


@dataclass(frozen=True)
class ToolDef:
    """One tool: its function (name, input and output schema come from it), title and behaviour hints."""

    fn: Callable[..., Awaitable[CallToolResult]]
    title: str
    read_only: bool = True
    destructive: bool = False
    idempotent: bool = True

    @property
    def name(self) -> str:
        """Return the tool's name (the function's)."""
        return self.fn.__name__


TOOLS: tuple[ToolDef, ...] = (
    ToolDef(validate_jobspec, "Validate a JobSpec"),
    ToolDef(explain_rejection, "Explain a rejection"),
    ToolDef(list_recipes, "List recipes"),
    ToolDef(show_recipe, "Show a recipe"),
    ToolDef(submit_job, "Submit a job", read_only=False, idempotent=False),
    ToolDef(list_jobs, "List jobs"),
    ToolDef(get_job, "Show a job"),
    ToolDef(get_job_logs, "Read a job's log"),
    ToolDef(stop_job, "Stop a job", read_only=False, destructive=True),
    ToolDef(pause_job, "Pause a job", read_only=False),
    ToolDef(resume_job, "Resume a paused job", read_only=False),
    ToolDef(retry_job, "Retry a failed or stopped job", read_only=False, idempotent=False),
    ToolDef(get_quota, "Quota and usage"),
    ToolDef(cluster_status, "Cluster status"),
)


def register_tools(server: MCPServer[Any], tools: Sequence[ToolDef]) -> list[str]:
    """Add `tools` to `server` and return their names."""
    names = []
    for tool in tools:
        hints = ToolAnnotations(read_only_hint=tool.read_only, destructive_hint=tool.destructive,
                                idempotent_hint=tool.idempotent, open_world_hint=False)
        server.add_tool(tool.fn, name=tool.name, title=tool.title, annotations=hints, structured_output=True)
        names.append(tool.name)
    return names
