"""The forge/v2 JobSpec as frozen dataclasses, with the canonical emission (`to_dict`) of the reference."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ._grammar import ArtifactRef

__all__ = [
    "API_VERSION",
    "KIND_TRAINING",
    "DataSplit",
    "Data",
    "Evaluation",
    "Framework",
    "Gate",
    "JobSpec",
    "Lifecycle",
    "Metadata",
    "Model",
    "Peft",
    "Plugin",
    "Pool",
    "Provenance",
    "Quality",
    "RecipeRef",
    "Resources",
    "Source",
    "Spec",
]

API_VERSION = "forge/v2"
KIND_TRAINING = "TrainingJob"


def _compact(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """Return the pairs as a dict in order, dropping empty values (`""`, `{}`, `[]`, None, False)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if value is None or value is False or value == "" or value == {} or value == []:
            continue
        out[key] = value
    return out


@dataclass(frozen=True, slots=True)
class Metadata:
    """Who and what: the run-name segment, the lab project, the stamped owner, display text and labels."""

    name: str
    project: str = ""
    owner: str = ""
    display_name: str = ""
    labels: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Return the canonical emission; `name` is always present."""
        out = {"name": self.name}
        out.update(
            _compact(
                [
                    ("project", self.project),
                    ("owner", self.owner),
                    ("display_name", self.display_name),
                    ("labels", dict(self.labels)),
                ]
            )
        )
        return out


@dataclass(frozen=True, slots=True)
class RecipeRef:
    """The recipe bundle the job was built against: id, version, bundle digest and built-in patch names."""

    name: str
    version: str
    digest: str
    plugins: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Return the canonical emission (always present)."""
        return _compact(
            [("name", self.name), ("version", self.version), ("digest", self.digest), ("plugins", list(self.plugins))]
        )


@dataclass(frozen=True, slots=True)
class Source:
    """Where the code comes from: the experiment path inside the lab."""

    exp: str

    def to_dict(self) -> dict[str, Any]:
        """Return the canonical emission (always present)."""
        return {"exp": self.exp}


@dataclass(frozen=True, slots=True)
class Framework:
    """The framework and runtime the recipe runs on, with the optional image and observability overrides."""

    kind: str
    version: str
    runtime_id: str = ""
    image: str = ""
    observability_url: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Return the canonical emission (always present)."""
        return _compact(
            [
                ("kind", self.kind),
                ("version", self.version),
                ("runtime_id", self.runtime_id),
                ("image", self.image),
                ("observability_url", self.observability_url),
            ]
        )


@dataclass(frozen=True, slots=True)
class Peft:
    """Parameter-efficient fine-tuning settings; every field optional."""

    kind: str = ""
    dim: int | None = None
    alpha: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return the canonical emission."""
        return _compact([("kind", self.kind), ("dim", self.dim), ("alpha", self.alpha)])


@dataclass(frozen=True, slots=True)
class Model:
    """The base model, PEFT settings and the artifact to start from."""

    base: str = ""
    peft: Peft | None = None
    init_from: ArtifactRef | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return the canonical emission."""
        return _compact(
            [
                ("base", self.base),
                ("peft", self.peft.to_dict() if self.peft else None),
                ("init_from", str(self.init_from) if self.init_from else None),
            ]
        )


@dataclass(frozen=True, slots=True)
class DataSplit:
    """A training or validation input: a platform dataset reference, a split and a path."""

    dataset: str = ""
    split: str = ""
    path: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Return the canonical emission."""
        return _compact([("dataset", self.dataset), ("split", self.split), ("path", self.path)])


@dataclass(frozen=True, slots=True)
class Quality:
    """Data-quality thresholds compared with the dataset's stored reports."""

    max_duplicate_ratio: float | None = None
    overlap_with: str = ""
    max_overlap_ratio: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return the canonical emission; ratios are emitted as floats."""
        return _compact(
            [
                ("max_duplicate_ratio", None if self.max_duplicate_ratio is None else float(self.max_duplicate_ratio)),
                ("overlap_with", self.overlap_with),
                ("max_overlap_ratio", None if self.max_overlap_ratio is None else float(self.max_overlap_ratio)),
            ]
        )


@dataclass(frozen=True, slots=True)
class Data:
    """Data inputs: train/validation splits, corpus, volumes, output dataset, environment and quality."""

    train: DataSplit | None = None
    validation: DataSplit | None = None
    corpus: str = ""
    volumes: tuple[str, ...] = ()
    output_dataset: str = ""
    environment: str = ""
    quality: Quality | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return the canonical emission."""
        return _compact(
            [
                ("train", self.train.to_dict() if self.train else None),
                ("validation", self.validation.to_dict() if self.validation else None),
                ("corpus", self.corpus),
                ("volumes", list(self.volumes)),
                ("output_dataset", self.output_dataset),
                ("environment", self.environment),
                ("quality", self.quality.to_dict() if self.quality else None),
            ]
        )


@dataclass(frozen=True, slots=True)
class Pool:
    """A homogeneous group of nodes: `nodes` × `gpus_per_node` accelerators of one `series`."""

    name: str
    nodes: int = 1
    gpus_per_node: int = 1
    series: str = ""

    @property
    def gpus(self) -> int:
        """Return the pool's accelerator count, `nodes * gpus_per_node`."""
        return self.nodes * self.gpus_per_node

    def to_dict(self) -> dict[str, Any]:
        """Return the canonical emission (`series` omitted when empty)."""
        return _compact(
            [("name", self.name), ("nodes", self.nodes), ("gpus_per_node", self.gpus_per_node), ("series", self.series)]
        )


@dataclass(frozen=True, slots=True)
class Resources:
    """Resource pools and the mapping of recipe roles onto them."""

    pools: tuple[Pool, ...]
    roles: dict[str, str] = field(default_factory=dict)

    @property
    def total_gpus(self) -> int:
        """Return Σ nodes × gpus_per_node over all pools (the quota unit)."""
        return sum(p.gpus for p in self.pools)

    def to_dict(self) -> dict[str, Any]:
        """Return the canonical emission; `pools` is always present."""
        out: dict[str, Any] = {"pools": [p.to_dict() for p in self.pools]}
        if self.roles:
            out["roles"] = dict(self.roles)
        return out


@dataclass(frozen=True, slots=True)
class Lifecycle:
    """Follow-up actions the console runs after a successful training run."""

    on_success: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Return the canonical emission."""
        return _compact([("on_success", list(self.on_success))])


@dataclass(frozen=True, slots=True)
class Gate:
    """An evaluation gate on `<benchmark>/<metric>` with optional bounds."""

    metric: str
    min: float | None = None
    max: float | None = None
    max_regression: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return the canonical emission; bounds are emitted as floats."""
        return _compact(
            [
                ("metric", self.metric),
                ("min", None if self.min is None else float(self.min)),
                ("max", None if self.max is None else float(self.max)),
                ("max_regression", None if self.max_regression is None else float(self.max_regression)),
            ]
        )


@dataclass(frozen=True, slots=True)
class Evaluation:
    """Benchmarks to run after a successful training run, and the gates that judge them."""

    suites: tuple[str, ...] = ()
    runner: str = ""
    baseline: str = ""
    limit: int = 0
    gates: tuple[Gate, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Return the canonical emission (`limit` 0 omitted)."""
        return _compact(
            [
                ("suites", list(self.suites)),
                ("runner", self.runner),
                ("baseline", self.baseline),
                ("limit", self.limit or None),
                ("gates", [g.to_dict() for g in self.gates]),
            ]
        )


@dataclass(frozen=True, slots=True)
class Plugin:
    """A platform-hosted plugin package pinned by id, version and directory digest."""

    id: str
    version: str
    digest: str

    @property
    def leaf(self) -> str:
        """Return the directory name the plugin unpacks to (`forge_plugins/<leaf>/`)."""
        return self.id.rsplit("/", 1)[-1]

    def to_dict(self) -> dict[str, Any]:
        """Return the canonical emission."""
        return {"id": self.id, "version": self.version, "digest": self.digest}


@dataclass(frozen=True, slots=True)
class Spec:
    """The `spec` section: recipe, source, framework, model, data, resources and the rest."""

    recipe: RecipeRef
    source: Source
    framework: Framework
    resources: Resources
    model: Model = field(default_factory=Model)
    data: Data = field(default_factory=Data)
    hyperparams: dict[str, Any] = field(default_factory=dict)
    lifecycle: Lifecycle = field(default_factory=Lifecycle)
    evaluation: Evaluation = field(default_factory=Evaluation)
    plugins: tuple[Plugin, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Return the canonical emission in the reference key order."""
        out: dict[str, Any] = {
            "recipe": self.recipe.to_dict(),
            "source": self.source.to_dict(),
            "framework": self.framework.to_dict(),
        }
        out.update(_compact([("model", self.model.to_dict()), ("data", self.data.to_dict())]))
        out["resources"] = self.resources.to_dict()
        out.update(
            _compact(
                [
                    ("hyperparams", dict(self.hyperparams)),
                    ("lifecycle", self.lifecycle.to_dict()),
                    ("evaluation", self.evaluation.to_dict()),
                    ("plugins", [p.to_dict() for p in self.plugins]),
                ]
            )
        )
        return out


@dataclass(frozen=True, slots=True)
class Provenance:
    """How the spec was built: client core version, git commit and dirty flag, config hash."""

    core_version: str
    git_commit: str = ""
    git_dirty: bool = False
    config_sha: str = ""
    model_name: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Return the canonical emission; `core_version` is always present, `git_dirty` only when true."""
        out: dict[str, Any] = {"core_version": self.core_version}
        out.update(
            _compact(
                [
                    ("git_commit", self.git_commit),
                    ("git_dirty", self.git_dirty),
                    ("config_sha", self.config_sha),
                    ("model_name", self.model_name),
                ]
            )
        )
        return out


@dataclass(frozen=True, slots=True)
class JobSpec:
    """A forge/v2 training job: what to run, on what, from which code, built by whom."""

    metadata: Metadata
    spec: Spec
    provenance: Provenance
    api_version: str = API_VERSION
    kind: str = KIND_TRAINING

    @property
    def total_gpus(self) -> int:
        """Return the requested accelerators, Σ nodes × gpus_per_node over all pools."""
        return self.spec.resources.total_gpus

    def with_owner(self, owner: str) -> JobSpec:
        """Return a copy whose `metadata.owner` is `owner` (the console stamps the authenticated account)."""
        return replace(self, metadata=replace(self.metadata, owner=owner))

    def with_hyperparams(self, hyperparams: dict[str, Any]) -> JobSpec:
        """Return a copy with `spec.hyperparams` replaced (R1 rebuilds them in declaration order)."""
        return replace(self, spec=replace(self.spec, hyperparams=dict(hyperparams)))

    def to_dict(self) -> dict[str, Any]:
        """Return the canonical serialisation: reference key order, empty values omitted."""
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "metadata": self.metadata.to_dict(),
            "spec": self.spec.to_dict(),
            "provenance": self.provenance.to_dict(),
        }
