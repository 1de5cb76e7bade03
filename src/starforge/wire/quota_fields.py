"""The quota table: every cap an account has — its name, type, unit, default, bounds and effect (refused at
admission, waits in the queue, limits the job) — and how each surface shows it, declared once as the fields of
`QuotaCaps`.

Everything else is derived from this table: the console's typed quota (`QuotaView`) and deployment defaults
(`settings.QuotaDefaults`) are `QuotaCaps`; the admin API's body (`caps.set_quota` validates by `type` and bounds,
`QuotaCaps.to_dict` answers in field order) and its OpenAPI declaration; the web admin form's fields; the options of
`sf admin quota set` and `sf console quota set` (`cli/_quota_options.py`); and MCP's explanations of a refusal
(`mcp/_explain.py`). What each cap decides is `console/services/quota/policy.py`, one rule per effect.

It lives in `wire`, standard library only, because both sides read it: the console, and the CLI and MCP, which
never import the console (import-linter), while every side may import `wire`. It is imported as
`starforge.wire.quota_fields`, not re-exported by `starforge.wire`: only quota code needs it.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

__all__ = ["INTEGER", "MAX_AMOUNT", "MAX_COUNT", "MAX_PRIORITY", "MAX_PROFILE", "NAMES", "NUMBER", "QUOTA_FIELDS",
           "SETTABLE", "Effect", "QuotaCaps", "QuotaField", "quota_field"]

MAX_COUNT = 1_000_000  # concurrent GPUs or jobs: beyond any cluster, well inside the integer column
MAX_AMOUNT = 1e9  # GPU hours per day, hours, or GB of storage
MAX_PRIORITY = 1_000_000  # scheduling priority, either sign
MAX_PROFILE = 64  # a profile name (jobs.profile column)

INTEGER = "integer"  # a whole number (JSON integer)
NUMBER = "number"  # a finite number (stored as a float)
NAMES = "names"  # a list of names (stored as a JSON array)


class Effect(enum.Enum):
    """What a cap does to a job of its account (`policy.RULES` holds each cap's rule per effect)."""

    REFUSE = "refuse"  # admission refuses a request the cap does not admit (it never could, or not today)
    WAIT = "wait"  # the job waits in the queue until the cap frees
    LIMIT = "limit"  # the job runs, limited by the cap (its wall time)
    ORDER = "order"  # the cap orders the queue
    REPORT = "report"  # shown to the account, not enforced


@dataclass(frozen=True)
class QuotaField:
    """One cap of the table: how it is typed, bounded and shown. `name` is the key everywhere (the API body, the
    store column, the settings' `quota:` key); 0 means unlimited for a cap (priority aside, which orders), an empty
    list of names allows every name.

    `options` are its `sf … quota set` flags (none: not set by `sf` nor the admin form, only by the API), with
    `help`; `label`, `hint` and `form_id` place it on the admin form; `codes` are the problem codes its refusals
    carry, and `fix` is MCP's advice on one (`{facts}` is replaced by `facts`, filled from the problem's data, or
    dropped when a fact is missing); a cap without `fix` is explained by the fixer of its codes."""

    type: str
    unit: str
    effects: tuple[Effect, ...]
    help: str
    minimum: float = 0
    maximum: float = MAX_AMOUNT  # a number's largest value; for names, the longest name
    options: tuple[str, ...] = ()
    label: str = ""
    hint: str = ""
    form_id: str = ""
    codes: tuple[str, ...] = ()
    fix: str = ""
    facts: str = ""
    name: str = ""

    @property
    def settable(self) -> bool:
        """Return whether `sf` and the admin form set this cap (else only the API does)."""
        return bool(self.options)

    def zero(self) -> Any:
        """Return the cap's "unlimited" value: 0, 0.0 or no names."""
        return {INTEGER: 0, NUMBER: 0.0}.get(self.type, ())

    def json_schema(self) -> dict[str, Any]:
        """Return the JSON schema of the cap's value in the admin API's body."""
        if self.type == NAMES:
            return {"type": "array", "items": {"type": "string"}, "description": self.help}
        return {"type": self.type, "description": self.help}


def _cap(default: Any, about: QuotaField) -> Any:
    return field(default=default, metadata={"quota": about})


@dataclass(frozen=True)
class QuotaCaps:
    """An account's caps, one field per row of the table; the defaults are a new account's until an administrator
    sets its own (a deployment changes them under `quota:` in its settings)."""

    max_concurrent_gpus: int = _cap(16, QuotaField(
        INTEGER, "GPUs", (Effect.REFUSE, Effect.WAIT), "max concurrent GPUs (0 = unlimited)", maximum=MAX_COUNT,
        options=("--gpus",), label="GPUs at once", hint="0 = unlimited", form_id="q-gpus", codes=("quota_exceeded",),
        fix="ask for fewer GPUs{facts}: nodes x gpus_per_node, summed over pools, or have an administrator raise your "
            "cap; get_quota shows your caps and current use",
        facts=" (this job asks for {requested} GPUs; your cap is {limit} at once)"))
    max_concurrent_jobs: int = _cap(8, QuotaField(
        INTEGER, "jobs", (Effect.WAIT,), "max concurrent jobs (0 = unlimited)", maximum=MAX_COUNT,
        options=("--jobs",), label="Jobs at once", hint="0 = unlimited", form_id="q-jobs"))
    daily_gpu_hours: float = _cap(0.0, QuotaField(
        NUMBER, "GPU hours per UTC day", (Effect.REFUSE, Effect.WAIT, Effect.LIMIT),
        "GPU hours per UTC day (0 = unlimited)", options=("--daily-gpu-hours",), label="GPU hours per UTC day",
        hint="0 = unlimited", form_id="q-daily", codes=("quota_exhausted",),
        fix="your daily GPU-hour budget is used up{facts}: wait for it to reset (UTC midnight), or ask an "
            "administrator to raise it",
        facts=" ({used} of {limit} GPU hours today)"))
    max_storage_gb: float = _cap(0.0, QuotaField(
        NUMBER, "GB", (Effect.REPORT,), "storage the account may use, in GB (0 = unlimited; shown, not enforced)"))
    allowed_profiles: tuple[str, ...] = _cap((), QuotaField(
        NAMES, "profiles", (Effect.REFUSE,), "allowed profiles: repeat, or a comma list such as cpu,h200 ('' = all)",
        maximum=MAX_PROFILE, options=("--profile", "--profiles"), label="Allowed profiles",
        hint="comma-separated, e.g. cpu, h200; blank = every profile", form_id="q-profiles",
        codes=("profile_not_allowed",)))
    priority: int = _cap(0, QuotaField(
        INTEGER, "", (Effect.ORDER,), "queue priority (higher first)", minimum=-MAX_PRIORITY, maximum=MAX_PRIORITY,
        options=("--priority",), label="Queue priority", hint="higher first", form_id="q-priority"))
    max_job_hours: float = _cap(0.0, QuotaField(
        NUMBER, "hours", (Effect.LIMIT,), "wall-time limit of each job in hours (0 = none)",
        options=("--max-job-hours",), label="Wall-time limit of a job (hours)", hint="0 = none", form_id="q-hours"))

    def to_dict(self) -> dict[str, Any]:
        """Return the wire form (`/api/usage/mine` → `quota`, the admin quota body): every cap in table order, names
        as a list."""
        out = asdict(self)
        for cap in QUOTA_FIELDS:
            if cap.type == NAMES:
                out[cap.name] = list(out[cap.name])
        return out


QUOTA_FIELDS: tuple[QuotaField, ...] = tuple(replace(f.metadata["quota"], name=f.name) for f in fields(QuotaCaps))
# The caps `sf` and the admin form set, in the order they show them: numbers in table order, then lists
SETTABLE: tuple[QuotaField, ...] = tuple(sorted((cap for cap in QUOTA_FIELDS if cap.settable),
                                                key=lambda cap: cap.type == NAMES))
_BY_NAME = {cap.name: cap for cap in QUOTA_FIELDS}


def cap_text(name: str, value: Any, *, every: str = "every profile") -> str:
    """Return how a surface shows cap `name` at `value`: names joined (none: `every`), "unlimited" for a cap at its
    unlimited value (a cap that orders has none), the value otherwise; a key of no cap is shown as it is."""
    cap = _BY_NAME.get(name)
    if cap is None:
        return str(value)
    if cap.type == NAMES:
        return ", ".join(map(str, value)) if value else every
    if Effect.ORDER not in cap.effects and value in (None, 0, 0.0, ""):
        return "unlimited"
    return str(value)


def quota_field(name: str) -> QuotaField:
    """Return the table's row for cap `name` (KeyError for a name that is no cap)."""
    return _BY_NAME[name]
