"""`parse`: turn a JSON document into a JobSpec, reporting every independent problem in the reference order."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ._build import new_job_spec, new_metadata, new_provenance, new_spec
from ._grammar import check_project, check_safe_segment, is_pep440, match_segment
from ._model import API_VERSION, KIND_TRAINING, JobSpec, Metadata, Provenance, Spec
from ._parse_data import read_data
from ._parse_run import read_evaluation, read_hyperparams, read_lifecycle, read_resources
from ._parse_spec import read_framework, read_model, read_plugins, read_recipe, read_source
from ._problems import Problem
from ._walk import ANY_KEYS, MISSING, Walk, type_name

__all__ = ["JobSpecError", "Parsed", "parse", "parse_or_raise"]

_ROOT_KEYS = ("apiVersion", "kind", "metadata", "spec", "provenance")
_ROOT_KNOWN = frozenset(_ROOT_KEYS)
_METADATA_KEYS = frozenset({"name", "project", "owner", "display_name", "labels"})
_SPEC_KEYS = frozenset(
    {"recipe", "source", "framework", "model", "data", "resources", "hyperparams", "lifecycle", "evaluation", "plugins"}
)
_PROVENANCE_KEYS = frozenset({"core_version", "git_commit", "git_dirty", "config_sha", "model_name"})
_GIT_COMMIT = re.compile(r"[0-9a-f]{4,64}")
_CONFIG_SHA = re.compile(r"[0-9a-f]{12}|none")
_MAX_NAME = 255


@dataclass(frozen=True, slots=True)
class Parsed:
    """The outcome of `parse`: the JobSpec when there is no problem, every problem, and the warnings."""

    spec: JobSpec | None
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Return True when the document was accepted."""
        return self.spec is not None


class JobSpecError(ValueError):
    """Raised by `parse_or_raise` when a document breaks contract rules; carries every problem."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("; ".join(str(p) for p in problems))


def parse(doc: Any) -> Parsed:
    """Return the JobSpec and every problem found; never raises on user input."""
    w = Walk()
    if not isinstance(doc, dict):
        w.bad("<root>", "not_an_object", f"a JobSpec must be a JSON object, got {type_name(doc)}")
        return Parsed(None, w.problems, w.warnings)
    w.obj(doc, "<root>", _ROOT_KNOWN)
    api_version, kind, spec_value = doc.get("apiVersion"), doc.get("kind"), doc.get("spec")
    if api_version is None or kind is None or spec_value is None or not doc.keys() >= _ROOT_KNOWN:
        for key in _ROOT_KEYS:
            if key not in doc or (key in ("apiVersion", "kind", "spec") and doc[key] is None):
                w.bad(key, "missing_field", "is required", _ROOT_HINTS[key])
    if api_version is not None and api_version != API_VERSION:
        w.bad(
            "apiVersion",
            "unsupported_api_version",
            f"must be {API_VERSION}, got {api_version!r}",
            "old specs are never upgraded silently: rebuild it with `sf submit`",
        )
    if kind is not None and kind != KIND_TRAINING:
        w.bad(
            "kind",
            "unsupported_kind",
            f"must be {KIND_TRAINING}, got {kind!r}",
            "export and evaluation are lifecycle actions of a training job (spec.lifecycle.on_success)",
        )
    metadata = _read_metadata(w, doc.get("metadata", MISSING)) if "metadata" in doc else None
    spec = _read_spec(w, spec_value) if spec_value is not None else None
    provenance = _read_provenance(w, doc.get("provenance")) if "provenance" in doc else None
    if w.problems or metadata is None or spec is None or provenance is None:
        return Parsed(None, w.problems, w.warnings)
    job_spec = new_job_spec(metadata, spec, provenance, API_VERSION, KIND_TRAINING)
    return Parsed(job_spec, w.problems, w.warnings)


def parse_or_raise(doc: Any) -> JobSpec:
    """Return the JobSpec, or raise `JobSpecError` carrying every problem (for code that must stop)."""
    parsed = parse(doc)
    if parsed.spec is None:
        raise JobSpecError(parsed.problems)
    return parsed.spec


_ROOT_HINTS = {
    "apiVersion": "set apiVersion to forge/v2",
    "kind": "set kind to TrainingJob",
    "metadata": "add metadata with at least a name",
    "spec": "add the spec section; `sf submit --dry-run` builds one for you",
    "provenance": "add provenance with core_version; `sf submit` computes it",
}


def _read_metadata(w: Walk, value: Any) -> Metadata | None:
    obj = w.obj(value, "metadata", _METADATA_KEYS)
    if obj is None:
        return None
    before = len(w.problems)
    labels = w.obj(obj.get("labels"), "metadata.labels", ANY_KEYS)
    clean_labels: dict[str, str] = {}
    for key, label in (labels or {}).items():
        if isinstance(label, str):
            clean_labels[key] = label
        else:
            w.bad(f"metadata.labels.{key}", "not_a_string", f"a label value must be a string, got {type_name(label)}")
    name = w.required(obj, "metadata", "name")
    if name is not None:
        if len(name) > _MAX_NAME:
            w.bad("metadata.name", "name_too_long", f"must be at most {_MAX_NAME} characters, got {len(name)}")
        elif match_segment(name) is None:
            w.problems.extend(check_safe_segment(name, "metadata.name"))
    project = w.string(obj, "metadata", "project")
    if project:
        w.problems.extend(check_project(project, "metadata.project"))
    owner = obj.get("owner")
    if owner is not None and not isinstance(owner, str):
        w.warn("metadata.owner", "owner_ignored", "metadata.owner is set by the console; a non-string value was ignored")
    display_name = w.string(obj, "metadata", "display_name")
    if len(w.problems) != before or labels is None:
        return None
    return new_metadata(
        name or "", project or "", owner.strip() if isinstance(owner, str) else "", display_name or "", clean_labels
    )


def _read_spec(w: Walk, value: Any) -> Spec | None:
    obj = w.obj(value, "spec", _SPEC_KEYS)
    if obj is None:
        return None
    if not obj:
        w.bad("spec", "empty_object", "must not be empty", _ROOT_HINTS["spec"])
        return None
    before = len(w.problems)
    recipe_part = _required_part(w, obj, "recipe")
    source_part = _required_part(w, obj, "source")
    framework_part = _required_part(w, obj, "framework")
    if "resources" not in obj:
        w.bad("spec.resources", "missing_field", "is required", "pass --profile <name>[:gpus]")
    plugins = read_plugins(w, obj.get("plugins"))
    recipe = None if recipe_part is None else read_recipe(w, recipe_part)
    source = None if source_part is None else read_source(w, source_part)
    framework = None if framework_part is None else read_framework(w, framework_part)
    model = read_model(w, obj.get("model"))
    data = read_data(w, obj.get("data"))
    resources = read_resources(w, obj["resources"]) if "resources" in obj else None
    hyperparams = read_hyperparams(w, obj.get("hyperparams"))
    lifecycle = read_lifecycle(w, obj.get("lifecycle"))
    evaluation = read_evaluation(w, obj.get("evaluation"))
    if len(w.problems) != before:
        return None
    assert recipe and source and framework and resources and model and data and lifecycle and evaluation
    assert plugins is not None and hyperparams is not None
    return new_spec(
        recipe, source, framework, resources, model, data, hyperparams, lifecycle, evaluation, plugins
    )


def _required_part(w: Walk, obj: dict[str, Any], key: str) -> Any:
    """Return `spec.<key>` when it is present and not `{}`; None after reporting it missing."""
    part = obj.get(key)
    if part is not None and part != {}:
        return part
    w.bad(f"spec.{key}", "missing_field", "is required", _ROOT_HINTS["spec"])
    return None


def _read_provenance(w: Walk, value: Any) -> Provenance | None:
    obj = w.obj(value, "provenance", _PROVENANCE_KEYS)
    if obj is None:
        return None
    before = len(w.problems)
    core = w.required(obj, "provenance", "core_version")
    if core and not is_pep440(core):
        w.bad(
            "provenance.core_version",
            "invalid_version",
            f"{core!r} is not a valid version",
            "core_version is the sf client's own version, e.g. 0.4.0",
        )
    commit = w.string(obj, "provenance", "git_commit")
    if commit and not _GIT_COMMIT.fullmatch(commit):
        w.bad(
            "provenance.git_commit",
            "invalid_git_commit",
            f"{commit!r} must be 4 to 64 lowercase hex characters",
            "`sf submit` fills it from `git rev-parse --short HEAD`",
        )
    dirty = obj.get("git_dirty")
    if dirty is not None and not isinstance(dirty, bool):
        w.bad(
            "provenance.git_dirty",
            "not_a_boolean",
            f"must be a JSON boolean, got {type_name(dirty)}",
            'write true or false without quotes ("false" is a string)',
        )
    config_sha = w.string(obj, "provenance", "config_sha")
    if config_sha and not _CONFIG_SHA.fullmatch(config_sha):
        w.bad(
            "provenance.config_sha",
            "invalid_config_sha",
            f"{config_sha!r} must be 12 lowercase hex characters or 'none'",
            "`sf submit` fills it from the experiment's config.yaml",
        )
    model_name = w.string(obj, "provenance", "model_name")
    if len(w.problems) != before:
        return None
    return new_provenance(core or "", commit or "", bool(dirty), config_sha or "", model_name or "")
