"""Typed parts of a recipe: entrypoints, runtime variants, parameter declarations (built from valid manifests)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DEFAULT_CORE_REQUIREMENT", "Entrypoint", "Param", "Runtime", "Variant"]

# `requires.core` of a recipe that declares none.
DEFAULT_CORE_REQUIREMENT = ">=0.1,<1"


@dataclass(frozen=True, slots=True)
class Entrypoint:
    """What a job runs: a module, a file of the framework checkout, or a file of the experiment (§2.3)."""

    kind: str
    value: str
    experiment_override: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Entrypoint:
        """Build from a validated `{kind, value, experiment_override?}` mapping."""
        return cls(str(data["kind"]), str(data["value"]), str(data.get("experiment_override") or ""))

    def to_dict(self) -> dict[str, str]:
        """Return `{kind, value}` plus `experiment_override` when set."""
        out = {"kind": self.kind, "value": self.value}
        if self.experiment_override:
            out["experiment_override"] = self.experiment_override
        return out


@dataclass(frozen=True, slots=True)
class Variant:
    """One runtime variant of a recipe: the framework version's runtime id, artifact and lifecycle status (§2.1)."""

    version: str
    runtime_id: str = ""
    requires: tuple[str, ...] = ()
    source: dict[str, Any] | None = None
    deployment_artifact: bool = False
    entrypoint: Entrypoint | None = None
    status: str = "supported"
    sunset: str = ""

    @property
    def deprecated(self) -> bool:
        """Return True when the variant is `status: deprecated`."""
        return self.status == "deprecated"

    @classmethod
    def from_dict(cls, version: str, data: Mapping[str, Any]) -> Variant:
        """Build from a validated variant mapping."""
        entry = data.get("entrypoint")
        sunset = data.get("sunset")
        return cls(
            version=version,
            runtime_id=str(data.get("runtime_id") or "").strip(),
            requires=tuple(str(r) for r in data.get("requires") or ()),
            source=dict(data["source"]) if isinstance(data.get("source"), Mapping) else None,
            deployment_artifact=data.get("deployment_artifact") is True,
            entrypoint=Entrypoint.from_dict(entry) if isinstance(entry, Mapping) else None,
            status=str(data.get("status") or "supported"),
            sunset="" if sunset is None else (sunset.isoformat() if hasattr(sunset, "isoformat") else str(sunset)),
        )


@dataclass(frozen=True, slots=True)
class Runtime:
    """The runtime section: the default framework version and the variants in manifest order."""

    default_version: str
    versions: dict[str, Variant] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Runtime:
        """Build from a validated `runtime` mapping."""
        versions = data.get("versions") or {}
        return cls(
            str(data.get("default_version") or ""),
            {str(v): Variant.from_dict(str(v), body or {}) for v, body in versions.items()},
        )


@dataclass(frozen=True, slots=True)
class Param:
    """A hyperparameter declaration (`params.<name>`, §4.1); `default` None means no default."""

    name: str
    type: str = "str"
    path: str = ""
    path_overrides: dict[str, str] = field(default_factory=dict)
    required: bool = False
    default: Any = None
    min: int | float | None = None
    max: int | float | None = None
    exclusive_min: bool = False
    choices: tuple[Any, ...] | None = None
    doc: str = ""
    group: str = ""
    needs_gpu: bool = False  # ours: a `true` value of this bool parameter needs a series with GPUs

    def path_for(self, framework_version: str | None) -> str:
        """Return the config path for `framework_version`: its `path_overrides` entry, else `path`."""
        if framework_version and framework_version in self.path_overrides:
            return self.path_overrides[framework_version]
        return self.path

    @classmethod
    def from_dict(cls, name: str, data: Mapping[str, Any]) -> Param:
        """Build from a validated declaration mapping."""
        choices = data.get("choices")
        return cls(
            name=name,
            type=str(data.get("type") or "str"),
            path=str(data.get("path") or ""),
            path_overrides={str(k): str(v) for k, v in (data.get("path_overrides") or {}).items()},
            required=data.get("required") is True,
            default=data.get("default"),
            min=data.get("min"),
            max=data.get("max"),
            exclusive_min=data.get("exclusive_min") is True,
            choices=tuple(choices) if isinstance(choices, list) else None,
            doc=str(data.get("doc") or ""),
            group=str(data.get("group") or ""),
            needs_gpu=data.get("needs_gpu") is True,
        )
