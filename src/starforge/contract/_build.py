"""Fast constructors of the frozen model, for the parser's hot path.

The `__init__` that `@dataclass(frozen=True)` generates must assign every field through `object.__setattr__`,
because the class refuses assignment; parsing a rich spec builds about 20 model objects with about 90 fields,
and that was about a sixth of the parse time. The functions here build the very same instances with
`object.__new__` and each slot's own setter, which is roughly twice as fast (a generic loop over the setters is
not: the loop costs what the setters save). Each takes every field positionally, in declaration order, without
defaults. The dataclass stays the definition: `tests/unit/contract/test_build.py` checks each function against
it (names, order, equality), so a field added to the model but not here fails that test.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import Any

from ._grammar import ArtifactRef
from ._model import (
    Data,
    DataSplit,
    Evaluation,
    Framework,
    Gate,
    JobSpec,
    Lifecycle,
    Metadata,
    Model,
    Peft,
    Plugin,
    Pool,
    Provenance,
    Quality,
    RecipeRef,
    Resources,
    Source,
    Spec,
)

__all__ = [
    "new_data",
    "new_data_split",
    "new_evaluation",
    "new_framework",
    "new_gate",
    "new_job_spec",
    "new_lifecycle",
    "new_metadata",
    "new_model",
    "new_peft",
    "new_plugin",
    "new_pool",
    "new_provenance",
    "new_quality",
    "new_recipe_ref",
    "new_resources",
    "new_source",
    "new_spec",
    "slot_setters",
]

_new = object.__new__


def slot_setters(cls: type) -> tuple[Callable[[Any, Any], None], ...]:
    """Return the slot setters of a slotted dataclass's fields, in declaration order (no `__setattr__`)."""
    return tuple(cls.__dict__[f.name].__set__ for f in fields(cls))


_META_NAME, _META_PROJECT, _META_OWNER, _META_DISPLAY_NAME, _META_LABELS = slot_setters(Metadata)


def new_metadata(name: str, project: str, owner: str, display_name: str, labels: dict[str, str]) -> Metadata:
    obj: Metadata = _new(Metadata)
    _META_NAME(obj, name)
    _META_PROJECT(obj, project)
    _META_OWNER(obj, owner)
    _META_DISPLAY_NAME(obj, display_name)
    _META_LABELS(obj, labels)
    return obj


_RECIPE_NAME, _RECIPE_VERSION, _RECIPE_DIGEST, _RECIPE_PLUGINS = slot_setters(RecipeRef)


def new_recipe_ref(name: str, version: str, digest: str, plugins: tuple[str, ...]) -> RecipeRef:
    obj: RecipeRef = _new(RecipeRef)
    _RECIPE_NAME(obj, name)
    _RECIPE_VERSION(obj, version)
    _RECIPE_DIGEST(obj, digest)
    _RECIPE_PLUGINS(obj, plugins)
    return obj


(_SOURCE_EXP,) = slot_setters(Source)


def new_source(exp: str) -> Source:
    obj: Source = _new(Source)
    _SOURCE_EXP(obj, exp)
    return obj


_FW_KIND, _FW_VERSION, _FW_RUNTIME_ID, _FW_IMAGE, _FW_OBSERVABILITY_URL = slot_setters(Framework)


def new_framework(kind: str, version: str, runtime_id: str, image: str, observability_url: str) -> Framework:
    obj: Framework = _new(Framework)
    _FW_KIND(obj, kind)
    _FW_VERSION(obj, version)
    _FW_RUNTIME_ID(obj, runtime_id)
    _FW_IMAGE(obj, image)
    _FW_OBSERVABILITY_URL(obj, observability_url)
    return obj


_PEFT_KIND, _PEFT_DIM, _PEFT_ALPHA = slot_setters(Peft)


def new_peft(kind: str, dim: int | None, alpha: int | None) -> Peft:
    obj: Peft = _new(Peft)
    _PEFT_KIND(obj, kind)
    _PEFT_DIM(obj, dim)
    _PEFT_ALPHA(obj, alpha)
    return obj


_MODEL_BASE, _MODEL_PEFT, _MODEL_INIT_FROM = slot_setters(Model)


def new_model(base: str, peft: Peft | None, init_from: ArtifactRef | None) -> Model:
    obj: Model = _new(Model)
    _MODEL_BASE(obj, base)
    _MODEL_PEFT(obj, peft)
    _MODEL_INIT_FROM(obj, init_from)
    return obj


_SPLIT_DATASET, _SPLIT_SPLIT, _SPLIT_PATH = slot_setters(DataSplit)


def new_data_split(dataset: str, split: str, path: str) -> DataSplit:
    obj: DataSplit = _new(DataSplit)
    _SPLIT_DATASET(obj, dataset)
    _SPLIT_SPLIT(obj, split)
    _SPLIT_PATH(obj, path)
    return obj


_QUALITY_MAX_DUPLICATE_RATIO, _QUALITY_OVERLAP_WITH, _QUALITY_MAX_OVERLAP_RATIO = slot_setters(Quality)


def new_quality(
    max_duplicate_ratio: float | None, overlap_with: str, max_overlap_ratio: float | None
) -> Quality:
    obj: Quality = _new(Quality)
    _QUALITY_MAX_DUPLICATE_RATIO(obj, max_duplicate_ratio)
    _QUALITY_OVERLAP_WITH(obj, overlap_with)
    _QUALITY_MAX_OVERLAP_RATIO(obj, max_overlap_ratio)
    return obj


_DATA_TRAIN, _DATA_VALIDATION, _DATA_CORPUS, _DATA_VOLUMES, _DATA_OUTPUT, _DATA_ENVIRONMENT, _DATA_QUALITY = (
    slot_setters(Data)
)


def new_data(
    train: DataSplit | None,
    validation: DataSplit | None,
    corpus: str,
    volumes: tuple[str, ...],
    output_dataset: str,
    environment: str,
    quality: Quality | None,
) -> Data:
    obj: Data = _new(Data)
    _DATA_TRAIN(obj, train)
    _DATA_VALIDATION(obj, validation)
    _DATA_CORPUS(obj, corpus)
    _DATA_VOLUMES(obj, volumes)
    _DATA_OUTPUT(obj, output_dataset)
    _DATA_ENVIRONMENT(obj, environment)
    _DATA_QUALITY(obj, quality)
    return obj


_POOL_NAME, _POOL_NODES, _POOL_GPUS_PER_NODE, _POOL_SERIES = slot_setters(Pool)


def new_pool(name: str, nodes: int, gpus_per_node: int, series: str) -> Pool:
    obj: Pool = _new(Pool)
    _POOL_NAME(obj, name)
    _POOL_NODES(obj, nodes)
    _POOL_GPUS_PER_NODE(obj, gpus_per_node)
    _POOL_SERIES(obj, series)
    return obj


_RESOURCES_POOLS, _RESOURCES_ROLES = slot_setters(Resources)


def new_resources(pools: tuple[Pool, ...], roles: dict[str, str]) -> Resources:
    obj: Resources = _new(Resources)
    _RESOURCES_POOLS(obj, pools)
    _RESOURCES_ROLES(obj, roles)
    return obj


(_LIFECYCLE_ON_SUCCESS,) = slot_setters(Lifecycle)


def new_lifecycle(on_success: tuple[str, ...]) -> Lifecycle:
    obj: Lifecycle = _new(Lifecycle)
    _LIFECYCLE_ON_SUCCESS(obj, on_success)
    return obj


_GATE_METRIC, _GATE_MIN, _GATE_MAX, _GATE_MAX_REGRESSION = slot_setters(Gate)


def new_gate(metric: str, min: float | None, max: float | None, max_regression: float | None) -> Gate:
    obj: Gate = _new(Gate)
    _GATE_METRIC(obj, metric)
    _GATE_MIN(obj, min)
    _GATE_MAX(obj, max)
    _GATE_MAX_REGRESSION(obj, max_regression)
    return obj


_EVAL_SUITES, _EVAL_RUNNER, _EVAL_BASELINE, _EVAL_LIMIT, _EVAL_GATES = slot_setters(Evaluation)


def new_evaluation(
    suites: tuple[str, ...], runner: str, baseline: str, limit: int, gates: tuple[Gate, ...]
) -> Evaluation:
    obj: Evaluation = _new(Evaluation)
    _EVAL_SUITES(obj, suites)
    _EVAL_RUNNER(obj, runner)
    _EVAL_BASELINE(obj, baseline)
    _EVAL_LIMIT(obj, limit)
    _EVAL_GATES(obj, gates)
    return obj


_PLUGIN_ID, _PLUGIN_VERSION, _PLUGIN_DIGEST = slot_setters(Plugin)


def new_plugin(id: str, version: str, digest: str) -> Plugin:
    obj: Plugin = _new(Plugin)
    _PLUGIN_ID(obj, id)
    _PLUGIN_VERSION(obj, version)
    _PLUGIN_DIGEST(obj, digest)
    return obj


(
    _SPEC_RECIPE,
    _SPEC_SOURCE,
    _SPEC_FRAMEWORK,
    _SPEC_RESOURCES,
    _SPEC_MODEL,
    _SPEC_DATA,
    _SPEC_HYPERPARAMS,
    _SPEC_LIFECYCLE,
    _SPEC_EVALUATION,
    _SPEC_PLUGINS,
) = slot_setters(Spec)


def new_spec(
    recipe: RecipeRef,
    source: Source,
    framework: Framework,
    resources: Resources,
    model: Model,
    data: Data,
    hyperparams: dict[str, Any],
    lifecycle: Lifecycle,
    evaluation: Evaluation,
    plugins: tuple[Plugin, ...],
) -> Spec:
    obj: Spec = _new(Spec)
    _SPEC_RECIPE(obj, recipe)
    _SPEC_SOURCE(obj, source)
    _SPEC_FRAMEWORK(obj, framework)
    _SPEC_RESOURCES(obj, resources)
    _SPEC_MODEL(obj, model)
    _SPEC_DATA(obj, data)
    _SPEC_HYPERPARAMS(obj, hyperparams)
    _SPEC_LIFECYCLE(obj, lifecycle)
    _SPEC_EVALUATION(obj, evaluation)
    _SPEC_PLUGINS(obj, plugins)
    return obj


_PROV_CORE_VERSION, _PROV_GIT_COMMIT, _PROV_GIT_DIRTY, _PROV_CONFIG_SHA, _PROV_MODEL_NAME = slot_setters(
    Provenance
)


def new_provenance(
    core_version: str, git_commit: str, git_dirty: bool, config_sha: str, model_name: str
) -> Provenance:
    obj: Provenance = _new(Provenance)
    _PROV_CORE_VERSION(obj, core_version)
    _PROV_GIT_COMMIT(obj, git_commit)
    _PROV_GIT_DIRTY(obj, git_dirty)
    _PROV_CONFIG_SHA(obj, config_sha)
    _PROV_MODEL_NAME(obj, model_name)
    return obj


_JOB_METADATA, _JOB_SPEC, _JOB_PROVENANCE, _JOB_API_VERSION, _JOB_KIND = slot_setters(JobSpec)


def new_job_spec(
    metadata: Metadata, spec: Spec, provenance: Provenance, api_version: str, kind: str
) -> JobSpec:
    obj: JobSpec = _new(JobSpec)
    _JOB_METADATA(obj, metadata)
    _JOB_SPEC(obj, spec)
    _JOB_PROVENANCE(obj, provenance)
    _JOB_API_VERSION(obj, api_version)
    _JOB_KIND(obj, kind)
    return obj
