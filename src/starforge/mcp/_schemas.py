"""Output schemas of the tools (published as `outputSchema`; structured results are validated against them)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from starforge.contract import DATA_KEYS

__all__ = [
    "BuildOut",
    "ClusterOut",
    "ControlOut",
    "ExplainOut",
    "JobListOut",
    "JobOut",
    "LogsOut",
    "QuotaOut",
    "RecipeListOut",
    "RecipeOut",
    "RecipeStatusOut",
    "StopOut",
    "SubmitOut",
    "VerdictOut",
]


class _Open(BaseModel):
    """Objects may carry more keys than listed (the console's rows are passed through as served)."""

    model_config = ConfigDict(extra="allow")


class ProblemOut(_Open):
    """One problem, in the REST API's wire form."""

    field: str = Field(description="dotted path of the offending value")
    code: str = Field(description="stable code; its meaning is in starforge.contract.CODES")
    message: str
    hint: str = ""
    data: dict[str, Any] = Field(
        default_factory=dict,
        description="the facts the rule knew, when it gave any (read them instead of parsing message or hint); "
                    "keys, all optional, as in starforge.contract.DATA_KEYS: " + ", ".join(DATA_KEYS))


class VerdictOut(_Open):
    """Admission's verdict: ok, every problem of the first failing stage, warnings."""

    ok: bool
    problems: list[ProblemOut]
    warnings: list[ProblemOut] = []
    requested_gpus: int = 0
    profile: str = ""


class PatchOut(_Open):
    """An edit to apply before retrying: a dotted spec path (or `profile`, the submit argument)."""

    target: str
    op: Literal["set", "remove"]
    value: Any = None


class ExplanationOut(ProblemOut):
    """A problem with its plain-language cause and a concrete fix."""

    severity: Literal["error", "warning"]
    cause: str
    fix: str
    commands: list[str] = Field(description="exact sf commands that fix it in a lab")
    patches: list[PatchOut] = Field(description="edits an agent can apply to the spec or the submit arguments")


class ExplainOut(_Open):
    """Explanations of every problem, in the order given."""

    count: int
    explanations: list[ExplanationOut]
    checked_spec: bool = Field(description="true when the problems came from checking the given spec")


class RecipeRow(_Open):
    """One published recipe."""

    name: str
    version: str | None = None
    digest: str | None = None
    framework: str | None = None
    default_version: str | None = None
    framework_versions: list[str] = []
    title: str = ""


class RecipeListOut(_Open):
    """The console's published recipes, possibly truncated (see `note`)."""

    recipes: list[RecipeRow]
    count: int
    core: dict[str, Any] = {}
    note: str = ""


class ParamOut(_Open):
    """A parameter declaration."""

    name: str
    type: str
    required: bool = False
    default: Any = None
    min: int | float | None = None
    max: int | float | None = None
    exclusive_min: bool = False
    choices: list[Any] | None = None
    path: str = ""
    doc: str = ""


class RecipeOut(_Open):
    """One recipe: published identity, runtime variants, roles and parameters."""

    name: str
    published: bool
    version: str | None = None
    digest: str | None = None
    framework: str | None = None
    params: list[ParamOut] = []
    notes: list[str] = []


class BuildOut(_Open):
    """The JobSpec `sf submit` would send, with its profile, experiment path and (optionally) the bundle."""

    ok: bool
    spec: dict[str, Any] | None
    profile: str
    exp: str
    warnings: list[ProblemOut] = []
    provenance: dict[str, Any] = {}
    bundle_base64: str | None = None
    note: str = ""


class SubmitOut(_Open):
    """The console's answer to a submission, with the idempotency key to retry it safely."""

    job_id: str
    run_id: str = ""
    queued: bool = False
    requested_gpus: int = 0
    warnings: list[str] = []
    profile: str
    idempotency_key: str


class JobListOut(_Open):
    """The caller's newest jobs (rows as the console serves them)."""

    jobs: list[dict[str, Any]]
    count: int
    note: str = ""


class JobOut(_Open):
    """One job's row (with `attempts`, `resumed_from`, `resume_step` and `attempt_history` from a console that
    counts attempts, and `queue_position` while it waits) and the latest value of each metric."""

    job: dict[str, Any]
    metrics: dict[str, dict[str, Any]] = {}
    note: str = ""


class LogsOut(_Open):
    """A bounded log excerpt: the text, where it stops, and whether the job ended."""

    job: str
    status: str = ""
    ended: bool
    text: str
    bytes: int
    last_event_id: str | None = Field(description="pass as from_event_id to read what follows")
    errors: list[str] = []
    truncated: bool = False
    note: str = ""


class StopOut(_Open):
    """The outcome of a stop: `stopped` false means the job had already finished."""

    job: str
    stopped: bool
    status: str = ""


class ControlOut(_Open):
    """The outcome of a pause, resume or retry: `done` false means there was nothing to do (`status` says why)."""

    job: str
    action: Literal["pause", "resume", "retry"]
    done: bool
    status: str = ""


class LockRow(_Open):
    """One experiment's lock state against the installed catalog (and the console's, when compared)."""

    exp: str
    state: str
    admits: bool
    recipe: str = ""
    message: str = ""
    fix: str = ""


class RecipeStatusOut(_Open):
    """The lab's experiments with a lock and whether each admits a submission."""

    ok: bool
    lab: str
    experiments: list[LockRow]
    note: str = ""


class QuotaOut(_Open):
    """The account behind the token, its caps and its current use."""

    user: dict[str, Any]
    quota: dict[str, Any]
    usage: dict[str, Any]


class ClusterOut(_Open):
    """The profile registry, GPU capacity and active job count, as the console reports them."""

    profiles: list[dict[str, Any]] = []
    gpu: dict[str, Any] = {}
    active_count: int = 0
