"""The `fix_rejected_submission` prompt: walks an agent from a rejection to a running job with the StarForge tools."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

__all__ = ["STEPS", "fix_rejected_submission", "register_prompts"]

STEPS = """\
Take this StarForge submission from its rejection to a running job, using the StarForge tools only.

1. Know what is wrong. Keep the rejection you have (the console's error body, a tool error, or
   validate_jobspec's result); without one, call validate_jobspec(spec, profile).
2. Call explain_rejection(rejection=..., spec=..., profile=...). For every problem it gives the cause,
   the fix, exact `sf` commands and patches.
3. Apply the fixes:
   - a patch sets or removes a dotted path of the spec (spec.recipe.digest, spec.hyperparams.<name>, ...);
     a patch on `profile` changes the profile you submit with;
   - in a lab (`sf mcp`), recipe handshake problems are fixed by `sf recipe upgrade <exp>`: recipe_status
     shows them, and build_jobspec rebuilds the spec (include_bundle=true also packs the files to upload);
   - list_recipes / show_recipe give the published versions, digests and parameter bounds;
     cluster_status and get_quota show the profiles and GPUs you may use.
   Never invent a value the tools did not give you: ask the user for what only they know (an image in an
   allowed registry, a tracker URL).
4. Call validate_jobspec again. Admission stops at the first failing stage, so new problems can appear:
   repeat steps 2-4 until ok is true.
5. submit_job(spec, profile, bundle_base64). Keep the idempotency_key it returns: sending it again retries
   safely without a second job.
6. Follow the job with get_job and get_job_logs (poll with from_event_id=last_event_id) until it runs or ends;
   stop_job only when the user asks.
Finally, report what you changed and why."""


def fix_rejected_submission(
    rejection: Annotated[str, Field(description="the rejection as JSON (error body or problems), if you have one")] = "",
    spec: Annotated[str, Field(description="the refused JobSpec as JSON, if you have it")] = "",
    profile: Annotated[str, Field(description="the profile it was submitted with")] = "",
) -> str:
    """Walk from a rejected submission to a running job: explain, fix, validate, submit, follow."""
    parts = [STEPS]
    if profile.strip():
        parts.append(f"Profile used: {profile.strip()}")
    if rejection.strip():
        parts.append(f"The rejection:\n```json\n{rejection.strip()}\n```")
    if spec.strip():
        parts.append(f"The JobSpec:\n```json\n{spec.strip()}\n```")
    return "\n\n".join(parts)


def register_prompts(server: MCPServer[Any]) -> None:
    """Add the prompt to `server`."""
    server.prompt(name="fix_rejected_submission", title="Fix a rejected submission")(fix_rejected_submission)
