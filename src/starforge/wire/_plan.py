"""The launch plan (`.starforge/launch.json`, `forge/launch/v1`): what the console decided and `forge-launch` runs.

The console builds a `LaunchPlan` and writes `to_dict()`; `forge-launch` reads it back with `parse_plan`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ._artifact_kinds import ARTIFACT_GROUPS

__all__ = [
    "JOBSPEC_FILE",
    "PLAN_FILE",
    "PLAN_VERSION",
    "PYTHON_PLACEHOLDER",
    "WORLD_LAUNCHERS",
    "ArtifactGlobs",
    "ConfigPlan",
    "ConfigValue",
    "Entrypoint",
    "InputBinding",
    "LaunchPlan",
    "Override",
    "OverrideValue",
    "PlanFramework",
    "PlanRecipe",
]

PLAN_VERSION: Final = "forge/launch/v1"
PLAN_FILE: Final = ".starforge/launch.json"  # relative to the unpacked bundle (the job's working directory)
JOBSPEC_FILE: Final = ".starforge/jobspec.json"
PYTHON_PLACEHOLDER: Final = "{python}"  # an argv item naming the interpreter `forge-launch` runs on
WORLD_LAUNCHERS: Final = ("torchrun", "accelerate")  # launchers of one distributed world (torchrun's rendezvous)

OverrideValue = str | int | float | bool
# a value of the experiment's config as the plan carries it: JSON (objects with string keys, finite numbers)
ConfigValue = str | int | float | bool | None | list["ConfigValue"] | dict[str, "ConfigValue"]
# the order in which `forge-launch` registers what the globs match (the plan's key order is `ARTIFACT_GROUPS`)
_REGISTRATION_ORDER = ("checkpoints", "exports", "evaluations", "logs")


@dataclass(frozen=True, slots=True)
class PlanRecipe:
    """The recipe the console resolved: id, version and bundle digest."""

    name: str
    version: str
    digest: str

    def to_dict(self) -> dict[str, Any]:
        """Return the `recipe` object of the plan document."""
        return {"name": self.name, "version": self.version, "digest": self.digest}


@dataclass(frozen=True, slots=True)
class PlanFramework:
    """The framework and runtime variant the console resolved."""

    kind: str
    version: str
    runtime_id: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Return the `framework` object of the plan document."""
        return {"kind": self.kind, "version": self.version, "runtime_id": self.runtime_id}


@dataclass(frozen=True, slots=True)
class Entrypoint:
    """The recipe entrypoint the argv was built from, and the launcher that starts one world of it (`launcher`:
    torchrun or accelerate; empty for a single process). `forge-launch` starts a several-node world through it."""

    kind: str = ""
    value: str = ""
    launcher: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Return the `entrypoint` object of the plan document (`launcher` only when the recipe names one)."""
        return {"kind": self.kind, "value": self.value, **({"launcher": self.launcher} if self.launcher else {})}


@dataclass(frozen=True, slots=True)
class Override:
    """One framework override: a config path and its typed value."""

    path: str
    value: OverrideValue

    def to_dict(self) -> dict[str, Any]:
        """Return one item of `config.overrides`."""
        return {"path": self.path, "value": self.value}


@dataclass(frozen=True, slots=True)
class InputBinding:
    """A job input (`model`, `train_data`, …; `starforge.wire.INPUTS`) and the config path that receives it."""

    input: str
    path: str

    def to_dict(self) -> dict[str, Any]:
        """Return one item of `config.bindings`."""
        return {"input": self.input, "path": self.path}


@dataclass(frozen=True, slots=True)
class ConfigPlan:
    """How the experiment's config, hyperparameters and job inputs reach the framework.

    `mode` is the config mode, `path` the experiment's config file (relative to the bundle root), `overrides` the
    explicitly set hyperparameters at their config paths, `document` the experiment's config as read by the console
    (only for modes that write or flatten it, `carries_document`), and `bindings` the job inputs to set at launch.
    Precedence, lowest first: the experiment's config (recipe defaults never override it), `overrides`, `bindings`.
    """

    mode: str = ""
    path: str = ""
    overrides: tuple[Override, ...] = ()
    document: Mapping[str, ConfigValue] | None = None
    bindings: tuple[InputBinding, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Return the `config` object of the plan document (`document` and `bindings` only when given)."""
        out: dict[str, Any] = {
            "mode": self.mode, "path": self.path, "overrides": [o.to_dict() for o in self.overrides]
        }
        if self.document is not None:
            out["document"] = copy.deepcopy(dict(self.document))
        if self.bindings:
            out["bindings"] = [b.to_dict() for b in self.bindings]
        return out


@dataclass(frozen=True, slots=True)
class ArtifactGlobs:
    """Globs, relative to `FORGE_OUT_DIR`, of what the job leaves behind, and the format of each artifact kind.

    `version` is the recipe's `artifacts.version` (e.g. `forge/artifacts/v1`), carried along when given.
    """

    checkpoints: tuple[str, ...] = ()
    logs: tuple[str, ...] = ()
    exports: tuple[str, ...] = ()
    evaluations: tuple[str, ...] = ()
    formats: Mapping[str, str] = field(default_factory=dict)
    version: str = ""

    def groups(self) -> list[tuple[str, tuple[str, ...]]]:
        """Return `(artifact kind, globs)` in registration order: checkpoints, exports, evaluations, logs."""
        return [(ARTIFACT_GROUPS[group], self._globs(group)) for group in _REGISTRATION_ORDER]

    def to_dict(self) -> dict[str, Any]:
        """Return the `artifacts` object of the plan document (`version` first, and only when given)."""
        out: dict[str, Any] = {"version": self.version} if self.version else {}
        for group in ARTIFACT_GROUPS:
            out[group] = list(self._globs(group))
        out["formats"] = dict(self.formats)
        return out

    def _globs(self, group: str) -> tuple[str, ...]:
        globs: tuple[str, ...] = getattr(self, group)
        return globs


@dataclass(frozen=True, slots=True)
class LaunchPlan:
    """What `forge-launch` starts: identity to verify, argv template, overrides, extra env and artifact globs.

    `action` names the recipe lifecycle action the plan runs (empty for the job itself).
    """

    run_id: str
    recipe: PlanRecipe
    framework: PlanFramework
    argv: tuple[str, ...]
    action: str = ""
    entrypoint: Entrypoint = Entrypoint()
    config: ConfigPlan = ConfigPlan()
    env: Mapping[str, str] = field(default_factory=dict)
    artifacts: ArtifactGlobs = ArtifactGlobs()

    def to_dict(self) -> dict[str, Any]:
        """Return the plan document (`apiVersion` `forge/launch/v1`) in its canonical key order."""
        return {
            "apiVersion": PLAN_VERSION,
            "run_id": self.run_id,
            "action": self.action,
            "recipe": self.recipe.to_dict(),
            "framework": self.framework.to_dict(),
            "entrypoint": self.entrypoint.to_dict(),
            "argv": list(self.argv),
            "config": self.config.to_dict(),
            "env": dict(self.env),
            "artifacts": self.artifacts.to_dict(),
        }
