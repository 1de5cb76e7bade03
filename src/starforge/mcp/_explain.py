"""Explain a rejection: for each problem its plain-language cause (from `CODES`) and a concrete, applicable fix.

Facts come from each problem's `data` (keys in `DATA_KEYS`), never from its message or hint, which are only shown.

Pure: the caller passes what it knows (the spec, the experiment, the profile, the console's published catalog and
the recipe's parameter declarations); nothing here talks to a console or re-checks a rule.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from string import Formatter
from typing import TYPE_CHECKING, Any

from starforge import DISTRIBUTION, __version__
from starforge.contract import CODES, KIND_TRAINING, Problem, profile_name
from starforge.recipes import Param, format_override
from starforge.wire.quota_fields import QUOTA_FIELDS

if TYPE_CHECKING:
    from packaging.version import Version

__all__ = ["ExplainContext", "Explanation", "Patch", "explain", "first_pool_series", "problems_of"]


@dataclass(frozen=True, slots=True)
class Patch:
    """One edit to apply before retrying: `set` or `remove` a dotted spec path, or `set` the `profile` argument."""

    target: str
    op: str = "set"
    value: Any = None

    def to_dict(self) -> dict[str, Any]:
        """Return `{target, op, value?}`."""
        out: dict[str, Any] = {"target": self.target, "op": self.op}
        if self.op == "set":
            out["value"] = self.value
        return out


@dataclass(frozen=True)
class Explanation:
    """A problem with its cause, the fix in words, the exact `sf` commands and the patches an agent can apply."""

    problem: Problem
    cause: str
    fix: str
    commands: tuple[str, ...] = ()
    patches: tuple[Patch, ...] = ()
    severity: str = "error"

    def to_dict(self) -> dict[str, Any]:
        """Return the problem's wire form plus `severity`, `cause`, `fix`, `commands` and `patches`."""
        return {
            **self.problem.to_dict(),
            "severity": self.severity,
            "cause": self.cause,
            "fix": self.fix,
            "commands": list(self.commands),
            "patches": [p.to_dict() for p in self.patches],
        }


def _get(doc: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(doc, Mapping):
            return None
        doc = doc.get(key)
    return doc


def first_pool_series(spec: Any) -> str:
    """Return the series of the spec's first pool (the console's default profile for a tool submission), or ""."""
    pools = _get(spec, "spec", "resources", "pools")
    first = pools[0] if isinstance(pools, list) and pools else None
    return str(first.get("series") or "") if isinstance(first, Mapping) else ""


@dataclass(frozen=True)
class ExplainContext:
    """What the explanation may use: the spec, names for commands, the published catalog, the recipe's params."""

    spec: Mapping[str, Any] | None = None
    exp: str = ""
    profile: str = ""
    client_version: str = __version__
    catalog: Mapping[str, Any] | None = None
    params: Mapping[str, Param] = field(default_factory=dict)

    @property
    def exp_name(self) -> str:
        """Return the experiment to name in commands: given, else the spec's `source.exp` basename, else `<exp>`."""
        exp = self.exp or str(_get(self.spec, "spec", "source", "exp") or "")
        return exp.rstrip("/").rsplit("/", 1)[-1] or "<exp>"

    @property
    def pool_series(self) -> str:
        """Return the series of the spec's first pool, or ""."""
        return first_pool_series(self.spec)

    @property
    def profile_name(self) -> str:
        """Return the profile to name in commands: given, else the first pool's series, else `<profile>`."""
        return self.profile or self.pool_series or "<profile>"

    @property
    def recipe_name(self) -> str:
        """Return the spec's recipe id, or ""."""
        return str(_get(self.spec, "spec", "recipe", "name") or "")

    def published(self, recipe: str) -> Mapping[str, Any] | None:
        """Return the console's published entry of `recipe`, or None."""
        rows = _get(self.catalog, "recipes")
        for row in rows if isinstance(rows, list) else []:
            if isinstance(row, Mapping) and row.get("name") == recipe:
                return row
        return None

    def submit(self, *flags: str) -> str:
        """Return the `sf submit` command for the experiment with `flags` and the profile."""
        return " ".join(["sf submit", self.exp_name, *flags, "--profile", self.profile_name])


# ---- reading a rejection ------------------------------------------------------------------------------------------


def _from_detail(detail: str) -> list[Problem]:
    problems = []
    for line in detail.splitlines()[1:]:
        text = line.strip()
        if text.startswith("- "):
            fld, sep, message = text[2:].partition(": ")
            problems.append(Problem(fld, "unknown", message) if sep and " " not in fld
                            else Problem("<root>", "unknown", text[2:]))
    return problems or ([Problem("<root>", "unknown", detail.strip())] if detail.strip() else [])


def problems_of(rejection: Any) -> list[Problem]:
    """Return the problems a rejection carries: a problems list, a console error body, a verdict or a tool error."""
    if isinstance(rejection, list):
        return [Problem.from_dict(item) if isinstance(item, Mapping) else Problem("<root>", "unknown", str(item))
                for item in rejection]
    if not isinstance(rejection, Mapping):
        return [Problem("<root>", "unknown", str(rejection))] if rejection else []
    for key in ("problems", "errors"):
        listed = rejection.get(key)
        if isinstance(listed, list) and listed:
            return problems_of(listed)
    nested = rejection.get("error")
    if isinstance(nested, Mapping):
        return problems_of(nested)
    detail = rejection.get("detail")
    return _from_detail(detail) if isinstance(detail, str) else []


# ---- fixes ----------------------------------------------------------------------------------------------------------

Fix = tuple[str, tuple[str, ...], tuple[Patch, ...]]


def _fact(problem: Problem, key: str) -> str:
    """Return the text of one of the problem's `data` facts, or "" when the rule did not give it."""
    value = problem.data.get(key)
    if isinstance(value, float):
        return f"{value:g}"
    return "" if value is None or isinstance(value, Mapping | list) else str(value)


def _allowed(problem: Problem) -> list[str] | None:
    """Return the problem's `data.allowed` as names, or None when the rule did not say what it accepts."""
    allowed = problem.data.get("allowed")
    return [str(a) for a in allowed] if isinstance(allowed, list) else None


def _pick(choices: Sequence[str], preferred: str) -> str:
    return preferred if preferred in choices else choices[0]


def _with_hint(text: str, problem: Problem) -> str:
    return f"{text} (console hint: {problem.hint})" if problem.hint and problem.hint not in text else text


def _version_key(text: str) -> Version | None:
    from packaging.version import InvalidVersion, Version

    try:
        return Version(text)
    except InvalidVersion:
        return None


def _handshake(problem: Problem, ctx: ExplainContext) -> Fix:
    recipe = ctx.recipe_name or _fact(problem, "recipe")
    entry = ctx.published(recipe) if recipe else None
    exp = ctx.exp_name
    commands = (f"sf recipe status {exp} --server", f"sf recipe upgrade {exp}", ctx.submit())
    if entry is None:
        text = (f"the spec's recipe identity does not match what this console publishes: in a lab run "
                f"`sf recipe upgrade {exp}` and submit again; otherwise copy name, version, digest and runtime_id "
                "from list_recipes / show_recipe")
        return _with_hint(text, problem), commands, ()
    spec_version = str(_get(ctx.spec, "spec", "recipe", "version") or "")
    fv = str(_get(ctx.spec, "spec", "framework", "version") or "")
    versions = entry.get("supported_framework_versions") or []
    runtime = _get(entry, "runtime", "versions") or {}
    if fv not in versions:
        fv = str(_get(entry, "runtime", "default_version") or (versions[0] if versions else fv))
    wanted = {
        "spec.recipe.version": entry.get("version"),
        "spec.recipe.digest": entry.get("digest"),
        "spec.framework.kind": entry.get("framework"),
        "spec.framework.version": fv,
        "spec.framework.runtime_id": str(_get(runtime, fv, "runtime_id") or ""),
    }
    current = {k: _get(ctx.spec, *k.split(".")) for k in wanted} if ctx.spec else {}
    patches = tuple(Patch(k, "set", v) for k, v in wanted.items() if v is not None and (not ctx.spec or current[k] != v))
    published = f"{recipe} {entry.get('version')} (digest {entry.get('digest')})"
    mine, theirs = _version_key(spec_version), _version_key(str(entry.get("version") or ""))
    if mine is not None and theirs is not None and mine > theirs:
        text = (f"the spec was built for {recipe} {spec_version}, newer than the console's {published}: use an sf "
                "client whose catalog matches the console's, or ask the operator to upgrade the console's catalog; "
                "through MCP, apply the patches to target the published recipe")
    else:
        text = (f"the experiment's recipe lock is behind the console, which publishes {published}: run "
                f"`sf recipe upgrade {exp}` in the lab and submit again (or rebuild with build_jobspec); through MCP, "
                "apply the patches to target the published recipe")
    return text, commands, patches


def _core(problem: Problem, ctx: ExplainContext) -> Fix:
    given = problem.data.get("versions")
    versions: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    requirement = str(versions.get("needed") or "")
    version = str(versions.get("have") or _get(ctx.spec, "provenance", "core_version") or ctx.client_version)
    install = f'pip install -U "{DISTRIBUTION}{requirement}"' if requirement else f"pip install -U {DISTRIBUTION}"
    if versions.get("too_old") is False:
        fix = (f"this client is {version}, newer than the console's catalog ({requirement or 'its range'}): use an "
               "sf client within that range, or ask the operator to publish a catalog for this version")
    else:
        fix = f"upgrade sf: this client is {version}, the catalog needs {requirement or 'a newer client'}"
    return fix + f"; then rebuild the spec (`{ctx.submit()}`)", (install, ctx.submit()), ()


def _swap_registry(image: str, registry: str) -> str:
    first, sep, rest = image.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return f"{registry}/{rest}"
    return f"{registry}/{image}"


def _image_not_allowed(problem: Problem, ctx: ExplainContext) -> Fix:
    allowed = _allowed(problem)
    image = str(_get(ctx.spec, "spec", "framework", "image") or _fact(problem, "got"))
    if allowed is None:
        return (_with_hint("use an image from a registry on this console's allowlist, or remove "
                           "spec.framework.image to use the recipe's own runtime", problem), (ctx.submit(),), ())
    if not allowed:
        return ("image overrides are disabled on this console: remove spec.framework.image and use the recipe's own "
                "runtime", (ctx.submit(),), (Patch("spec.framework.image", "remove"),))
    new = _swap_registry(image, allowed[0]) if image else f"{allowed[0]}/<team>/<image>:<tag>"
    refused = _fact(problem, "registry")
    fix = (f"{'registry ' + refused + ' is not allowed: ' if refused else ''}push the image to a registry on this "
           f"console's allowlist ({', '.join(allowed)}) and reference it there, e.g. --image {new}")
    patches = (Patch("spec.framework.image", "set", new),) if image else ()
    return fix, (ctx.submit("--image", new),), patches


def _image_required(problem: Problem, ctx: ExplainContext) -> Fix:
    example = "<registry>/<team>/<image>:<tag>"
    recipe = ctx.recipe_name or _fact(problem, "recipe") or "this recipe"
    fix = (f"{recipe} runs your own container: pass --image {example} from a registry on the console's allowlist "
           "(an image_not_allowed refusal lists them)")
    return fix, (ctx.submit("--image", example),), ()


def _observability_required(problem: Problem, ctx: ExplainContext) -> Fix:
    url = "https://<tracker>/<team>/<project>"
    fix = ("the recipe reports to an external tracker: set spec.framework.observability_url to an absolute http(s) "
           f"URL of your run or project (`--observability-url {url}`)")
    return fix, (ctx.submit("--observability-url", url),), ()


def _observability_forbidden(problem: Problem, ctx: ExplainContext) -> Fix:
    return ("the platform collects this recipe's metrics itself: remove spec.framework.observability_url "
            "(drop --observability-url)", (ctx.submit(),), (Patch("spec.framework.observability_url", "remove"),))


def _entrypoint(problem: Problem, ctx: ExplainContext) -> Fix:
    return ("remove spec.source.entrypoint: the entrypoint belongs to the recipe; to run your own command use the "
            "custom/custom recipe with a train.sh in the experiment", (ctx.submit(),),
            (Patch("spec.source.entrypoint", "remove"),))


def _profile(problem: Problem, ctx: ExplainContext) -> Fix:
    choices = _allowed(problem)
    if not choices:
        return (_with_hint("pick a registered profile you may use (cluster_status lists them, get_quota shows "
                           "which are allowed for you)", problem), ("sf status",), ())
    pick = _pick(choices, ctx.pool_series)
    fix = f"submit on a profile you may use ({', '.join(choices)}), e.g. --profile {pick}"
    return fix, (" ".join(["sf submit", ctx.exp_name, "--profile", pick]),), (Patch("profile", "set", pick),)


def _series(problem: Problem, ctx: ExplainContext) -> Fix:
    choices = _allowed(problem)
    if not choices:
        return _with_hint("use a series from the console's profile registry (cluster_status)", problem), (), ()
    pick = _pick(choices, profile_name(ctx.profile))
    return (f"use a known series ({', '.join(choices)}) for this pool, e.g. {pick}", (ctx.submit(),),
            (Patch(problem.field, "set", pick),))


# The quota caps whose refusals carry their own advice (the quota table's `fix`), by problem code
_CAP_FIXES = {code: cap for cap in QUOTA_FIELDS if cap.fix for code in cap.codes}


def _quota(problem: Problem, ctx: ExplainContext) -> Fix:
    """A quota cap's refusal: the table's advice, with the facts of the problem's data when it gave them all."""
    cap = _CAP_FIXES[problem.code]
    names = [name for _, name, _, _ in Formatter().parse(cap.facts) if name]
    facts = {name: _fact(problem, name) for name in names}
    shown = cap.facts.format(**facts) if all(facts.values()) else ""
    return _with_hint(cap.fix.format(facts=shown), problem), ("sf status",), ()


def _describe(param: Param) -> str:
    parts = [param.type]
    if param.min is not None or param.max is not None:
        low = "" if param.min is None else f"{'>' if param.exclusive_min else '>='}{param.min}"
        high = "" if param.max is None else f"<={param.max}"
        parts.append(" ".join(p for p in (low, high) if p))
    if param.choices:
        parts.append("one of " + ", ".join(format_override(c) for c in param.choices))
    if param.default is not None:
        parts.append(f"default {format_override(param.default)}")
    return ", ".join(parts)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _valid_default(param: Param) -> Any:
    default = param.default
    if default is None:
        return None
    if param.choices and default not in param.choices:
        return None
    if _is_number(default):
        if param.min is not None and (default < param.min or (param.exclusive_min and default == param.min)):
            return None
        if param.max is not None and default > param.max:
            return None
    return default


def _hyperparameter_value(problem: Problem, param: Param, value: Any) -> Any:
    if problem.code == "hyperparameter_range" and _is_number(value):
        if param.max is not None and value > param.max:
            return param.max
        if param.min is not None and value < param.min and not param.exclusive_min:
            return param.min
        return _valid_default(param)
    if problem.code == "hyperparameter_choice" and param.choices:
        default = _valid_default(param)
        return default if default is not None else param.choices[0]
    return _valid_default(param)


def _hyperparameter(problem: Problem, ctx: ExplainContext) -> Fix:
    name = problem.field.removeprefix("spec.hyperparams.")
    param = ctx.params.get(name) if name != problem.field else None
    recipe = ctx.recipe_name or "<recipe>"
    if param is None:
        return (_with_hint(f"give {name} a value its declaration accepts (show_recipe {recipe} lists types, bounds "
                           "and choices)", problem), (f"sf methods {recipe}",), ())
    hyperparams = _get(ctx.spec, "spec", "hyperparams")
    given = isinstance(hyperparams, Mapping) and name in hyperparams
    current = hyperparams[name] if given else problem.data.get("got")
    new = _hyperparameter_value(problem, param, current)
    fix = f"{name} is declared as {_describe(param)}"
    if new is None:
        return _with_hint(fix + "; choose a value within that declaration", problem), (), ()
    shown = format_override(new)
    return (f"{fix}: set it to a valid value, e.g. {shown}", (ctx.submit("--set", f"{name}={shown}"),),
            (Patch(f"spec.hyperparams.{name}", "set", new),))


def _unknown_hyperparameter(problem: Problem, ctx: ExplainContext) -> Fix:
    recipe = ctx.recipe_name or _fact(problem, "recipe") or "<recipe>"
    hyperparams = _get(ctx.spec, "spec", "hyperparams")
    given: Mapping[str, Any] = hyperparams if isinstance(hyperparams, Mapping) else {}
    listed = problem.data.get("unknown")
    if isinstance(listed, list):
        unknown = [str(k) for k in listed]
    else:
        unknown = [k for k in given if k not in ctx.params] if ctx.params else []
    suggestion = problem.data.get("suggestion")
    closest: Mapping[str, Any] = suggestion if isinstance(suggestion, Mapping) else {}
    patches: list[Patch] = []
    renames: list[str] = []
    for key in (k for k in unknown if "." not in k):  # a dotted key cannot be named by a patch target
        new = closest.get(key)
        if isinstance(new, str) and key in given and new not in given:
            patches.append(Patch(f"spec.hyperparams.{new}", "set", given[key]))
            renames.append(f"{key} to {new}")
        patches.append(Patch(f"spec.hyperparams.{key}", "remove"))
    rename = f"rename {', '.join(renames)}; " if renames else ""
    fix = _with_hint(f"{rename}use only the parameter names the recipe declares (show_recipe lists them with their "
                     "config paths); remove or rename the others", problem)
    return fix, (f"sf methods {recipe}",), tuple(patches)


def _missing_hyperparameter(problem: Problem, ctx: ExplainContext) -> Fix:
    name = _fact(problem, "name")
    if not name:
        recipe = ctx.recipe_name or _fact(problem, "recipe") or "<recipe>"
        return (_with_hint(f"set every parameter {recipe} requires (show_recipe lists them)", problem),
                (f"sf methods {recipe}",), ())
    param = ctx.params.get(name)
    about = f" ({_describe(param)}{': ' + param.doc if param.doc else ''})" if param else ""
    return f"set the required parameter {name}{about}", (ctx.submit("--set", f"{name}=<value>"),), ()


def _kind(problem: Problem, ctx: ExplainContext) -> Fix:
    return f"set kind to {KIND_TRAINING}", (), (Patch("kind", "set", KIND_TRAINING),)


def _rebuild(problem: Problem, ctx: ExplainContext) -> Fix:
    rebuild = "rebuild the spec with build_jobspec (or `sf submit --dry-run`) instead of editing it by hand"
    fix = f"{problem.hint}; or {rebuild}" if problem.hint else f"the JobSpec is malformed: {rebuild}"
    return fix, (f"sf submit {ctx.exp_name} --dry-run --profile {ctx.profile_name}",), ()


def _recipe_unknown(problem: Problem, ctx: ExplainContext) -> Fix:
    rows = _get(ctx.catalog, "recipes")
    names = [str(r.get("name")) for r in rows if isinstance(r, Mapping)] if isinstance(rows, list) else []
    listed = f" ({', '.join(names[:12])}{', …' if len(names) > 12 else ''})" if names else ""
    return _with_hint(f"pick a recipe this console publishes{listed}; list_recipes shows them", problem), (
        "sf methods",), ()


def _init_from(problem: Problem, ctx: ExplainContext) -> Fix:
    return (_with_hint("init_from is run/<run_id>/<kind>[@step=<N>] naming an artifact of one of your runs "
                       "(list_jobs shows run ids)", problem), ("sf job ls --all",), ())


def _meta(problem: Problem, ctx: ExplainContext) -> Fix:
    return (_with_hint("submit with a non-empty profile and an experiment path equal to spec.source.exp",
                       problem), (ctx.submit(),), ())


def _lock(problem: Problem, ctx: ExplainContext) -> Fix:
    exp = ctx.exp_name
    return (_with_hint(f"the experiment's recipe.lock.json does not match the installed catalog: run "
                       f"`sf recipe upgrade {exp}` (recipe_status shows the diffs), then build the spec again",
                       problem), (f"sf recipe status {exp}", f"sf recipe upgrade {exp}", ctx.submit()), ())


def _git_dirty(problem: Problem, ctx: ExplainContext) -> Fix:
    return ("commit the lab's changes first (git add -A && git commit -m '...'), or accept a dirty run with "
            "allow_dirty=true (build_jobspec) / --allow-dirty", ("git add -A", "git commit -m 'experiment'",
                                                              ctx.submit()), ())


def _experiment_unknown(problem: Problem, ctx: ExplainContext) -> Fix:
    return (_with_hint("name an existing experiment (recipe_status or `sf ls` lists the lab's experiments)", problem),
            ("sf ls",), ())


def _default(problem: Problem, ctx: ExplainContext) -> Fix:
    return (problem.hint or f"fix {problem.field}: {problem.message}"), (), ()


_HANDSHAKE = ("recipe_version_mismatch", "recipe_digest_mismatch", "framework_kind_mismatch",
              "framework_version_unsupported", "runtime_id_mismatch")
_MALFORMED = ("unsupported_api_version", "missing_field", "not_an_object", "empty_object", "invalid_json")

FIXES: dict[str, Callable[[Problem, ExplainContext], Fix]] = {
    **dict.fromkeys(_HANDSHAKE, _handshake),
    **dict.fromkeys(_MALFORMED, _rebuild),
    "core_version_incompatible": _core,
    "image_not_allowed": _image_not_allowed,
    "image_required": _image_required,
    "observability_url_required": _observability_required,
    "observability_url_forbidden": _observability_forbidden,
    "entrypoint_forbidden": _entrypoint,
    "profile_unknown": _profile,
    "profile_not_allowed": _profile,
    "invalid_profile": _profile,
    "series_unknown": _series,
    "hyperparameter_range": _hyperparameter,
    "hyperparameter_choice": _hyperparameter,
    "hyperparameter_type": _hyperparameter,
    "unknown_hyperparameter": _unknown_hyperparameter,
    "missing_hyperparameter": _missing_hyperparameter,
    "unsupported_kind": _kind,
    "recipe_unknown": _recipe_unknown,
    "invalid_init_from": _init_from,
    "artifact_unknown": _init_from,
    "meta_invalid": _meta,
    "lock_unreadable": _lock,
    "lock_incompatible": _lock,
    "lock_drifted": _lock,
    "git_dirty": _git_dirty,
    "experiment_unknown": _experiment_unknown,
    **dict.fromkeys(_CAP_FIXES, _quota),
}


def _meaning(code: str) -> str | None:
    return CODES.get(code)


def _cause(problem: Problem) -> tuple[str, str]:
    meaning = _meaning(problem.code)
    if meaning is None:
        return "error", f"{problem.message or 'the console refused the request'} (code {problem.code!r} is not in the table)"
    severity = "warning" if meaning.startswith("(warning)") else "error"
    return severity, meaning.removeprefix("(warning)").strip()


def explain(problems: Sequence[Problem], ctx: ExplainContext | None = None) -> list[Explanation]:
    """Return one explanation per problem, in the given order: its cause, the fix, commands and patches."""
    ctx = ctx or ExplainContext()
    out = []
    for problem in problems:
        severity, cause = _cause(problem)
        text, commands, patches = FIXES.get(problem.code, _default)(problem, ctx)
        out.append(Explanation(problem, cause, text, commands, patches, severity))
    return out
